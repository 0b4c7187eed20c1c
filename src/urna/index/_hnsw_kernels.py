"""Hot loops of the HNSW index (03-runtime §7.4-7.7), compiled with numba when it is installed.

Everything here works on flat arrays: vectors ``(n, dim)`` float32, and a graph given as
``node_ptr`` (n+1) + per-row ``row_start``/``row_end`` offsets into an int32 ``ids`` array
(row ``node_ptr[i] + l`` is node ``i``'s list on layer ``l``). The build writes into
fixed-capacity rows and moves ``row_end``; a decoded payload passes ``nbr_ptr[:-1]`` and
``nbr_ptr[1:]``, so build and query run the same traversal code.

Bit-exactness with the reference depends on three things kept here on purpose:
``dist8`` adds in the reference's fixed order, in float32, without FMA (numba does not
contract without fastmath); the two heaps replay Rust's ``BinaryHeap`` sift rules, tie choices
included; and every sort uses an integer key (distance in IEEE total order with NaN last, then
a tie-break) so no comparison-based sort can reorder equal distances.

Without numba the same functions run as plain Python (correct, slow).
"""

from __future__ import annotations

import numpy as np

import contextlib
from collections.abc import Iterator

try:  # numba is the "fast" extra; the plain path gives the same answers
    from numba import njit as _njit
    from numba.core import config as _numba_config

    def jit(fn):
        """Compile ``fn`` with numba (cached on disk, no fastmath)."""
        return _njit(cache=True, nogil=True)(fn)

    HAVE_NUMBA = True
except ImportError:  # pragma: no cover - exercised only where numba is absent
    def jit(fn):
        """Identity: run ``fn`` as plain Python."""
        return fn

    _numba_config = None
    HAVE_NUMBA = False


@contextlib.contextmanager
def vectorizing() -> Iterator[None]:
    """Let LLVM's SLP vectoriser run while our kernels compile (numba keeps it off by default).

    SLP packs the eight independent lane accumulators of ``dist8`` into one SIMD register; it
    only regroups independent operations, never reassociates or fuses them, so results stay
    bit-identical. Compilation is lazy, so callers wrap each kernel call; once compiled (or
    loaded from numba's cache) the flag no longer matters.
    """
    if _numba_config is None:
        yield
        return
    before = _numba_config.SLP_VECTORIZE
    _numba_config.SLP_VECTORIZE = 1
    try:
        yield
    finally:
        _numba_config.SLP_VECTORIZE = before

_F32_ONE = np.float32(1.0)
_F32_ZERO = np.float32(0.0)
_F32_INF = np.float32(np.inf)


@jit
def dist8(a, b):
    """``1 - dot8(a, b)`` in float32: eight lanes, fixed reduction tree, sequential tail."""
    dim = a.shape[0]
    nb = dim // 8
    a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = _F32_ZERO
    for c in range(nb):
        o = c * 8
        a0 += a[o] * b[o]
        a1 += a[o + 1] * b[o + 1]
        a2 += a[o + 2] * b[o + 2]
        a3 += a[o + 3] * b[o + 3]
        a4 += a[o + 4] * b[o + 4]
        a5 += a[o + 5] * b[o + 5]
        a6 += a[o + 6] * b[o + 6]
        a7 += a[o + 7] * b[o + 7]
    tail = _F32_ZERO
    for j in range(nb * 8, dim):
        tail += a[j] * b[j]
    dot = ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7)) + tail
    return _F32_ONE - dot


_U1, _U2, _U3, _U4, _U5, _U6, _U7, _U8 = (np.uint64(k) for k in range(1, 9))


@jit
def _lanes4(q, vecs, i0, i1, i2, i3, acc):
    """The eight dot8 lane sums of ``q`` against four rows at once, into ``acc[0:32]``.

    Four rows give four independent dependency chains (one row alone is latency-bound);
    each lane is still summed sequentially over the blocks, so every row gets exactly
    ``dist8``'s lanes. Unsigned offsets spare numba's negative-index wraparound.
    """
    nb = vecs.shape[1] // 8
    a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = _F32_ZERO
    b0 = b1 = b2 = b3 = b4 = b5 = b6 = b7 = _F32_ZERO
    c0 = c1 = c2 = c3 = c4 = c5 = c6 = c7 = _F32_ZERO
    d0 = d1 = d2 = d3 = d4 = d5 = d6 = d7 = _F32_ZERO
    o = np.uint64(0)
    for _ in range(nb):
        q0 = q[o]
        q1 = q[o + _U1]
        q2 = q[o + _U2]
        q3 = q[o + _U3]
        q4 = q[o + _U4]
        q5 = q[o + _U5]
        q6 = q[o + _U6]
        q7 = q[o + _U7]
        a0 += q0 * vecs[i0, o]
        a1 += q1 * vecs[i0, o + _U1]
        a2 += q2 * vecs[i0, o + _U2]
        a3 += q3 * vecs[i0, o + _U3]
        a4 += q4 * vecs[i0, o + _U4]
        a5 += q5 * vecs[i0, o + _U5]
        a6 += q6 * vecs[i0, o + _U6]
        a7 += q7 * vecs[i0, o + _U7]
        b0 += q0 * vecs[i1, o]
        b1 += q1 * vecs[i1, o + _U1]
        b2 += q2 * vecs[i1, o + _U2]
        b3 += q3 * vecs[i1, o + _U3]
        b4 += q4 * vecs[i1, o + _U4]
        b5 += q5 * vecs[i1, o + _U5]
        b6 += q6 * vecs[i1, o + _U6]
        b7 += q7 * vecs[i1, o + _U7]
        c0 += q0 * vecs[i2, o]
        c1 += q1 * vecs[i2, o + _U1]
        c2 += q2 * vecs[i2, o + _U2]
        c3 += q3 * vecs[i2, o + _U3]
        c4 += q4 * vecs[i2, o + _U4]
        c5 += q5 * vecs[i2, o + _U5]
        c6 += q6 * vecs[i2, o + _U6]
        c7 += q7 * vecs[i2, o + _U7]
        d0 += q0 * vecs[i3, o]
        d1 += q1 * vecs[i3, o + _U1]
        d2 += q2 * vecs[i3, o + _U2]
        d3 += q3 * vecs[i3, o + _U3]
        d4 += q4 * vecs[i3, o + _U4]
        d5 += q5 * vecs[i3, o + _U5]
        d6 += q6 * vecs[i3, o + _U6]
        d7 += q7 * vecs[i3, o + _U7]
        o += _U8
    # consecutive stores: the SLP vectoriser's seeds, so each row's lanes become one vector
    acc[0] = a0
    acc[1] = a1
    acc[2] = a2
    acc[3] = a3
    acc[4] = a4
    acc[5] = a5
    acc[6] = a6
    acc[7] = a7
    acc[8] = b0
    acc[9] = b1
    acc[10] = b2
    acc[11] = b3
    acc[12] = b4
    acc[13] = b5
    acc[14] = b6
    acc[15] = b7
    acc[16] = c0
    acc[17] = c1
    acc[18] = c2
    acc[19] = c3
    acc[20] = c4
    acc[21] = c5
    acc[22] = c6
    acc[23] = c7
    acc[24] = d0
    acc[25] = d1
    acc[26] = d2
    acc[27] = d3
    acc[28] = d4
    acc[29] = d5
    acc[30] = d6
    acc[31] = d7


@jit
def _finish(q, vecs, row, acc, base):
    """Combine one row's lanes with dot8's fixed tree, add its sequential tail, return 1 - dot."""
    dim = vecs.shape[1]
    tail = _F32_ZERO
    for j in range((dim // 8) * 8, dim):
        tail += q[j] * vecs[row, j]
    dot = (((acc[base] + acc[base + 1]) + (acc[base + 2] + acc[base + 3]))
           + ((acc[base + 4] + acc[base + 5]) + (acc[base + 6] + acc[base + 7])) + tail)
    return _F32_ONE - dot


@jit
def dists(q, vecs, rows, count, out, acc):
    """``out[j] = dist8(q, vecs[rows[j]])`` for j < count, four rows per pass."""
    for g in range(0, count, 4):
        last = count - 1
        i0 = rows[g]
        i1 = rows[min(g + 1, last)]  # a short final group repeats its last row
        i2 = rows[min(g + 2, last)]
        i3 = rows[min(g + 3, last)]
        _lanes4(q, vecs, i0, i1, i2, i3, acc)
        out[g] = _finish(q, vecs, i0, acc, 0)
        if g + 1 < count:
            out[g + 1] = _finish(q, vecs, i1, acc, 8)
        if g + 2 < count:
            out[g + 2] = _finish(q, vecs, i2, acc, 16)
        if g + 3 < count:
            out[g + 3] = _finish(q, vecs, i3, acc, 24)


@jit
def dist_one(q, vecs, row, acc):
    """``dist8(q, vecs[row])`` through the same kernel as ``dists``."""
    _lanes4(q, vecs, row, row, row, row, acc)
    return _finish(q, vecs, row, acc, 0)


@jit
def order_key(d, bits, tie):
    """An int64 that sorts like (distance ``d`` in total order, NaN last; then ``tie``).

    ``bits`` is the IEEE bit pattern of ``d`` (read through a uint32 view of its array).
    """
    if d != d:
        o = np.int64(0x7FFFFFFF)
    else:
        b = np.int64(bits)
        o = np.int64(0x7FFFFFFF) - b if b >= 0x80000000 else b
    return o * np.int64(4294967296) + np.int64(tie)


# --- Rust BinaryHeap replica: a max-heap on ``key`` ("greater" means key_a > key_b, so a NaN
# --- key compares Equal to everything, as partial_cmp().unwrap_or(Equal) does).

@jit
def _sift_up(key, val, start, pos):
    k = key[pos]
    v = val[pos]
    while pos > start:
        parent = (pos - 1) >> 1
        if not (k > key[parent]):
            break
        key[pos] = key[parent]
        val[pos] = val[parent]
        pos = parent
    key[pos] = k
    val[pos] = v


@jit
def _push(key, val, size, k, v):
    key[size] = k
    val[size] = v
    _sift_up(key, val, 0, size)
    return size + 1


@jit
def _sift_down_to_bottom(key, val, end):
    k = key[0]
    v = val[0]
    pos = 0
    child = 1
    while child <= end - 2:
        if not (key[child] > key[child + 1]):  # right child wins ties, as in Rust
            child += 1
        key[pos] = key[child]
        val[pos] = val[child]
        pos = child
        child = 2 * pos + 1
    if child == end - 1:
        key[pos] = key[child]
        val[pos] = val[child]
        pos = child
    key[pos] = k
    val[pos] = v
    _sift_up(key, val, 0, pos)


@jit
def _pop_root(key, val, size):
    """Remove the root (caller read it already); returns the new size."""
    size -= 1
    if size > 0:
        key[0] = key[size]
        val[0] = val[size]
        _sift_down_to_bottom(key, val, size)
    return size


_CHUNK = 64  # neighbour ids gathered per distance batch (bounds the scratch buffers)


@jit
def greedy(curr, q, layer, vecs, node_ptr, row_start, row_end, ids, nbuf, dbuf, acc):
    """Greedy descent on one layer: move to a strictly closer neighbour until none is."""
    cd = dist_one(q, vecs, curr, acc)
    while True:
        if layer >= node_ptr[curr + 1] - node_ptr[curr]:
            return curr
        row = node_ptr[curr] + layer
        best = curr
        bd = cd
        lo = row_start[row]
        hi = row_end[row]
        while lo < hi:
            cnt = min(_CHUNK, hi - lo)
            for j in range(cnt):
                nbuf[j] = ids[lo + j]
            dists(q, vecs, nbuf, cnt, dbuf, acc)
            for j in range(cnt):  # list order: the earliest of equal smaller distances wins
                if dbuf[j] < bd:
                    best = nbuf[j]
                    bd = dbuf[j]
            lo += cnt
        if best == curr:
            return curr
        curr = best
        cd = bd


@jit
def layer_search(entry, q, layer, ef, vecs, node_ptr, row_start, row_end, ids, skip,
                 mark, epoch, fk, fv, rk, rv, nbuf, dbuf, acc):
    """Beam search of width ``ef`` from ``entry``; result heap left in ``rk``/``rv``.

    ``fk``/``fv`` hold the frontier (key = -distance, so the max-heap pops the closest);
    ``rk``/``rv`` the result (key = distance, root = farthest). Returns the result size.
    Neighbours are marked and measured a batch at a time, then pushed one by one in list
    order: distances do not depend on the heaps, so this is the reference's sequence.
    """
    fs = 0
    rs = 0
    if entry != skip:
        d = dist_one(q, vecs, entry, acc)
        fs = _push(fk, fv, fs, -d, entry)
        rs = _push(rk, rv, rs, d, entry)
        mark[entry] = epoch
    while fs > 0:
        cdist = -fk[0]
        c = fv[0]
        fs = _pop_root(fk, fv, fs)
        worst = rk[0] if rs > 0 else _F32_INF
        if cdist > worst and rs >= ef:
            break
        if layer >= node_ptr[c + 1] - node_ptr[c]:
            continue
        row = node_ptr[c] + layer
        lo = row_start[row]
        hi = row_end[row]
        while lo < hi:
            stop = min(lo + _CHUNK, hi)
            cnt = 0
            for j in range(lo, stop):
                nb = ids[j]
                if nb == skip or mark[nb] == epoch:
                    continue
                mark[nb] = epoch
                nbuf[cnt] = nb
                cnt += 1
            lo = stop
            if cnt == 0:
                continue
            dists(q, vecs, nbuf, cnt, dbuf, acc)
            for j in range(cnt):
                d = dbuf[j]
                worst = rk[0] if rs > 0 else _F32_INF
                if rs < ef or d < worst:
                    fs = _push(fk, fv, fs, -d, nbuf[j])
                    rs = _push(rk, rv, rs, d, nbuf[j])
                    if rs > ef:
                        rs = _pop_root(rk, rv, rs)
    return rs


@jit
def select_heuristic(cids, cdist, count, t, vecs, out, pruned, dbuf, acc):
    """Heuristic neighbour selection with keep_pruned (03-runtime §7.7); returns len(out)."""
    if count == 0 or t == 0:
        return 0
    keys = np.empty(count, dtype=np.int64)
    bits = cdist.view(np.uint32)
    for j in range(count):
        keys[j] = order_key(cdist[j], bits[j], cids[j])
    order = np.argsort(keys)
    nch = 0
    npr = 0
    for jj in range(count):
        if nch >= t:
            break
        p = order[jj]
        cid = cids[p]
        d = cdist[p]
        row = vecs[cid]
        shadowed = False
        # shadowed iff some chosen s has dist(c, s) < dist(c, query); four chosen per pass,
        # stopping at the first pass that finds one (the outcome is the same boolean)
        for g in range(0, nch, 4):
            cnt = min(4, nch - g)
            dists(row, vecs, out[g:g + cnt], cnt, dbuf, acc)
            for s in range(cnt):
                if dbuf[s] < d:
                    shadowed = True
            if shadowed:
                break
        if shadowed:
            pruned[npr] = cid
            npr += 1
        else:
            out[nch] = cid
            nch += 1
    s = 0
    while nch < t and s < npr:
        out[nch] = pruned[s]
        nch += 1
        s += 1
    return nch


@jit
def build_graph(vecs, levels, m, ef_c, node_ptr, row_start, row_end, ids):
    """Insert nodes 0..n-1 in id order; fills rows in place, returns (entry_point, max_level)."""
    n = vecs.shape[0]
    if n == 0:
        return 0, 0
    m_max0 = 2 * m
    mark = np.zeros(n, dtype=np.int64)
    epoch = np.int64(0)
    fk = np.empty(n + 2, dtype=np.float32)
    fv = np.empty(n + 2, dtype=np.int32)
    rk = np.empty(ef_c + 3, dtype=np.float32)
    rv = np.empty(ef_c + 3, dtype=np.int32)
    wide = max(m, m_max0) + 2
    sel = np.empty(wide, dtype=np.int32)
    pruned = np.empty(max(ef_c + 3, wide), dtype=np.int32)
    tmp_ids = np.empty(wide, dtype=np.int32)
    tmp_d = np.empty(wide, dtype=np.float32)
    kept = np.empty(wide, dtype=np.int32)
    nbuf = np.empty(_CHUNK, dtype=np.int32)
    dbuf = np.empty(_CHUNK, dtype=np.float32)
    acc = np.empty(32, dtype=np.float32)
    entry_point = 0
    max_level = levels[0]
    for i in range(1, n):
        lvl = levels[i]
        q = vecs[i]
        curr = entry_point
        for layer in range(max_level, lvl, -1):
            curr = greedy(curr, q, layer, vecs, node_ptr, row_start, row_end, ids,
                          nbuf, dbuf, acc)
        entry = curr
        for layer in range(min(lvl, max_level), -1, -1):
            epoch += 1
            rs = layer_search(entry, q, layer, ef_c, vecs, node_ptr, row_start, row_end, ids,
                              i, mark, epoch, fk, fv, rk, rv, nbuf, dbuf, acc)
            nsel = select_heuristic(rv, rk, rs, m, vecs, sel, pruned, dbuf, acc)
            row = node_ptr[i] + layer
            base = row_start[row]
            for s in range(nsel):
                ids[base + s] = sel[s]
            row_end[row] = base + nsel
            cap = m_max0 if layer == 0 else m
            for s in range(nsel):
                v = sel[s]
                if layer >= node_ptr[v + 1] - node_ptr[v]:
                    continue
                vrow = node_ptr[v] + layer
                vs = row_start[vrow]
                vc = row_end[vrow] - vs
                if vc >= cap:
                    # prune: heuristic over (existing list + i), each measured from v
                    for j in range(vc):
                        tmp_ids[j] = ids[vs + j]
                    tmp_ids[vc] = i
                    dists(vecs[v], vecs, tmp_ids, vc + 1, tmp_d, acc)
                    k = select_heuristic(tmp_ids, tmp_d, vc + 1, cap, vecs, kept, pruned,
                                         dbuf, acc)
                    for j in range(k):
                        ids[vs + j] = kept[j]
                    row_end[vrow] = vs + k
                else:
                    present = False
                    for j in range(vc):
                        if ids[vs + j] == i:
                            present = True
                            break
                    if not present:
                        ids[vs + vc] = i
                        row_end[vrow] = vs + vc + 1
            if nsel > 0:
                entry = sel[0]
            elif rs > 0:
                # closest candidate; equal distances keep the heap's array order (stable sort)
                best = 0
                rbits = rk.view(np.uint32)
                bkey = order_key(rk[0], rbits[0], 0)
                for j in range(1, rs):
                    kj = order_key(rk[j], rbits[j], j)
                    if kj < bkey:
                        best = j
                        bkey = kj
                entry = rv[best]
        if lvl > max_level:
            max_level = lvl
            entry_point = i
    return entry_point, max_level


@jit
def search_graph(q, ef, entry_point, max_level, vecs, node_ptr, row_start, row_end, ids):
    """Greedy descent to layer 1, beam of width ``ef`` on layer 0; ids ascending by distance."""
    n = vecs.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.int32)
    nbuf = np.empty(_CHUNK, dtype=np.int32)
    dbuf = np.empty(_CHUNK, dtype=np.float32)
    acc = np.empty(32, dtype=np.float32)
    curr = entry_point
    for layer in range(max_level, 0, -1):
        curr = greedy(curr, q, layer, vecs, node_ptr, row_start, row_end, ids, nbuf, dbuf, acc)
    mark = np.zeros(n, dtype=np.uint8)
    fk = np.empty(n + 2, dtype=np.float32)
    fv = np.empty(n + 2, dtype=np.int32)
    rk = np.empty(ef + 3, dtype=np.float32)
    rv = np.empty(ef + 3, dtype=np.int32)
    rs = layer_search(curr, q, 0, ef, vecs, node_ptr, row_start, row_end, ids, -1,
                      mark, 1, fk, fv, rk, rv, nbuf, dbuf, acc)
    keys = np.empty(rs, dtype=np.int64)
    rbits = rk.view(np.uint32)
    for j in range(rs):
        keys[j] = order_key(rk[j], rbits[j], j)  # stable: heap array order breaks distance ties
    order = np.argsort(keys)
    out = np.empty(rs, dtype=np.int32)
    for j in range(rs):
        out[j] = rv[order[j]]
    return out
