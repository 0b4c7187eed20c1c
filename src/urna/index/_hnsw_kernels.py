"""Hot loops of the HNSW index (03-runtime §7.5-7.7), compiled with numba when it is installed.

Everything here works on flat arrays: the rows as a store ``(codes, scales)`` (float32 rows,
or packed float16 / int8 / int4 rows decoded four at a time, see ``_hnsw_dist``; the build
uses float32 rows only), and a graph given as
``node_ptr`` (n+1) + per-row ``row_start``/``row_end`` offsets into an int32 ``ids`` array
(row ``node_ptr[i] + l`` is node ``i``'s list on layer ``l``), plus ``adj0``, layer 0 as one
int32 row per node (the list's length, then its ids: hnswlib's layout, so expanding a node
reads one or two cache lines instead of three scattered arrays). The build writes upper
layers into fixed-capacity rows and moves ``row_end``, layer 0 into ``adj0``; a decoded
payload passes ``nbr_ptr[:-1]``, ``nbr_ptr[1:]`` and its ``hnsw.layer0_table``, so build
and query run the same traversal code.

Bit-exactness with the reference rests on: the distances of ``_hnsw_dist``; the two heaps,
which replay Rust's ``BinaryHeap`` sift rules, tie choices included; and every sort using an
integer key (distance in IEEE total order with NaN last, then a tie-break), so no
comparison sort can reorder equal distances.

Without numba the same functions run as plain Python (correct, slow).
"""

from __future__ import annotations

import numpy as np

from . import _hnsw_heap as _heap
from ._hnsw_dist import (
    HAVE_NUMBA,
    dist8,
    dist_one,
    dists,
    jit,
    jit_no_refcount,
    prefetch_row,
    store_dist_one,
    store_dists,
    vectorizing,
)

__all__ = ["EPOCH_LIMIT", "HAVE_NUMBA", "build_graph", "dist8", "dist_one", "dists", "greedy",
           "layer_search", "next_epoch", "order_key", "search_graph", "select_heuristic",
           "vectorizing"]

_F32_INF = np.float32(np.inf)


# The heaps (a Rust BinaryHeap replica) and the sort key live in ``_hnsw_heap``; the numba-free
# beam of ``hnsw_beam`` follows the same rules with ``heapq``.
order_key = jit(_heap.order_key)
_push = jit_no_refcount(_heap.push)
_pop_root = jit_no_refcount(_heap.pop_root)


_CHUNK = 64  # neighbour ids gathered per distance batch (bounds the scratch buffers)
EPOCH_LIMIT = _heap.EPOCH_LIMIT


@jit_no_refcount
def next_epoch(mark, epoch):
    """The stamp of a new traversal: ``epoch + 1``, or 1 after clearing ``mark`` at the wrap."""
    if epoch >= EPOCH_LIMIT:
        mark[:] = 0
        return 1
    return epoch + 1


@jit_no_refcount
def greedy(curr, q, qi, layer, codes, scales, node_ptr, row_start, row_end, ids, nbuf, dbuf,
           acc, rowbuf):
    """Greedy descent on one layer from ``curr`` toward ``q[qi]``: move to a strictly closer
    neighbour until none is."""
    cd = store_dist_one(q, qi, codes, scales, curr, acc, rowbuf)
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
                prefetch_row(codes, nbuf[j])
            store_dists(q, qi, codes, scales, nbuf, cnt, dbuf, acc, rowbuf)
            for j in range(cnt):  # list order: the earliest of equal smaller distances wins
                if dbuf[j] < bd:
                    best = nbuf[j]
                    bd = dbuf[j]
            lo += cnt
        if best == curr:
            return curr
        curr = best
        cd = bd


@jit_no_refcount
def _offer(src, lo, hi, q, qi, ef, codes, scales, skip, every, allowed, mark, epoch, fk, fv, fs,
           rk, rv, rs, nbuf, dbuf, acc, rowbuf):
    """Visit the neighbours ``src[lo:hi]`` in stored order; returns the heap sizes (fs, rs).

    Unvisited ones are marked and measured a batch at a time, then offered one by one in list
    order: distances do not depend on the heaps, so this is the reference's sequence. One
    enters the frontier when the result heap is not full or it is closer than the worst
    result; only ``allowed`` ones (``every``: all) enter the result heap.
    """
    while lo < hi:
        stop = min(lo + _CHUNK, hi)
        cnt = 0
        for j in range(lo, stop):
            nb = src[j]
            if nb == skip or mark[nb] == epoch:
                continue
            mark[nb] = epoch
            prefetch_row(codes, nb)
            nbuf[cnt] = nb
            cnt += 1
        lo = stop
        if cnt == 0:
            continue
        store_dists(q, qi, codes, scales, nbuf, cnt, dbuf, acc, rowbuf)
        for j in range(cnt):
            d = dbuf[j]
            worst = rk[0] if rs > 0 else _F32_INF
            if rs < ef or d < worst:
                fs = _push(fk, fv, fs, -d, nbuf[j])
                if every or allowed[nbuf[j]]:
                    rs = _push(rk, rv, rs, d, nbuf[j])
                    if rs > ef:
                        rs = _pop_root(rk, rv, rs)
    return fs, rs


@jit_no_refcount
def layer_search(entry, q, qi, layer, ef, codes, scales, adj0, node_ptr, row_start, row_end, ids,
                 skip, allowed, mark, epoch, fk, fv, rk, rv, nbuf, dbuf, acc, rowbuf):
    """Beam search of width ``ef`` from ``entry`` toward ``q[qi]``; result heap in ``rk``/``rv``.

    ``fk``/``fv`` hold the frontier (key = -distance, so the max-heap pops the closest);
    ``rk``/``rv`` the result (key = distance, root = farthest). Returns the result size.
    Layer 0 reads ``adj0`` (a ``layer0_table``: count, then the first ids of each list; a
    longer list continues in the CSR row) and prefetches the next frontier node's list while
    the current one is measured; upper layers read the CSR rows. ``allowed`` (uint8 per node,
    or empty for all) is a ``where=`` mask: as hnswlib's filtered search, a filter never
    disconnects the graph (``_offer``). ``skip`` (the node being inserted, else -1) is never
    visited.
    """
    every = allowed.shape[0] == 0
    stride = adj0.shape[1]
    width = stride - 1
    flat0 = adj0.reshape(-1)  # one view per search; expanding a node then slices nothing
    fs = 0
    rs = 0
    if entry != skip:
        d = store_dist_one(q, qi, codes, scales, entry, acc, rowbuf)
        fs = _push(fk, fv, fs, -d, entry)
        if every or allowed[entry]:
            rs = _push(rk, rv, rs, d, entry)
        mark[entry] = epoch
    while fs > 0:
        cdist = -fk[0]
        c = fv[0]
        fs = _pop_root(fk, fv, fs)
        worst = rk[0] if rs > 0 else _F32_INF
        if cdist > worst and rs >= ef:
            break
        if layer == 0:
            if fs > 0:  # most often the next node expanded: its list arrives meanwhile
                prefetch_row(adj0, fv[0])
            base = c * stride
            cnt = flat0[base]
            fs, rs = _offer(flat0, base + 1, base + 1 + min(cnt, width), q, qi, ef, codes,
                            scales, skip, every, allowed, mark, epoch, fk, fv, fs, rk, rv, rs,
                            nbuf, dbuf, acc, rowbuf)
            if cnt > width:
                lo = row_start[node_ptr[c]] + width
                fs, rs = _offer(ids, lo, lo + cnt - width, q, qi, ef, codes, scales, skip,
                                every, allowed, mark, epoch, fk, fv, fs, rk, rv, rs, nbuf, dbuf,
                                acc, rowbuf)
            continue
        if layer >= node_ptr[c + 1] - node_ptr[c]:
            continue
        row = node_ptr[c] + layer
        fs, rs = _offer(ids, row_start[row], row_end[row], q, qi, ef, codes, scales, skip,
                        every, allowed, mark, epoch, fk, fv, fs, rk, rv, rs, nbuf, dbuf, acc,
                        rowbuf)
    return rs


@jit_no_refcount
def _sift_min(keys, order, pos, size):
    """Sift ``order[pos]`` down the min-heap ``order[:size]`` of positions keyed by ``keys``."""
    item = order[pos]
    k = keys[item]
    while True:
        child = 2 * pos + 1
        if child >= size:
            break
        if child + 1 < size and keys[order[child + 1]] < keys[order[child]]:
            child += 1
        if keys[order[child]] >= k:
            break
        order[pos] = order[child]
        pos = child
    order[pos] = item


@jit_no_refcount
def select_heuristic(cids, cdist, count, t, vecs, out, out_d, pruned, pruned_d, keys, order,
                     dbuf, acc):
    """Heuristic neighbour selection with keep_pruned (03-runtime §7.7); returns len(out).

    The chosen ids go to ``out`` and their distances (``cdist``'s) to ``out_d``; ``pruned``,
    ``pruned_d``, ``keys`` and ``order`` (>= count) are scratch. Candidates are taken in
    (distance, id) order from a min-heap, so only the ones the walk reaches are ordered.
    """
    if count == 0 or t == 0:
        return 0
    bits = cdist.view(np.uint32)
    for j in range(count):
        keys[j] = order_key(cdist[j], bits[j], cids[j])  # distinct per id: no ties to break
        order[j] = j
    for j in range(count // 2 - 1, -1, -1):
        _sift_min(keys, order, j, count)
    size = count
    nch = 0
    npr = 0
    while size > 0 and nch < t:
        p = order[0]
        size -= 1
        if size > 0:
            order[0] = order[size]
            _sift_min(keys, order, 0, size)
        cid = cids[p]
        d = cdist[p]
        shadowed = False
        # shadowed iff some chosen s has dist(c, s) < dist(c, query); four chosen per pass,
        # stopping at the first pass that finds one (the outcome is the same boolean)
        for g in range(0, nch, 4):
            cnt = min(4, nch - g)
            dists(vecs, cid, vecs, out, g, cnt, dbuf, 0, acc)
            for s in range(cnt):
                if dbuf[s] < d:
                    shadowed = True
            if shadowed:
                break
        if shadowed:
            pruned[npr] = cid
            pruned_d[npr] = d
            npr += 1
        else:
            out[nch] = cid
            out_d[nch] = d
            nch += 1
    s = 0
    while nch < t and s < npr:
        out[nch] = pruned[s]
        out_d[nch] = pruned_d[s]
        nch += 1
        s += 1
    return nch


@jit
def build_graph(vecs, levels, m, ef_c, node_ptr, row_start, row_end, ids, adj0):
    """Insert nodes 0..n-1 in id order; fills the lists in place, returns (entry_point, max_level).

    Layer-0 lists go to ``adj0`` (n, 2m+1; count then ids, zeroed by the caller), upper ones
    to the CSR rows (``row_start``/``row_end`` into ``ids``; layer-0 rows get no capacity).
    This allocates the scratch; ``_insert_all`` does the work.
    """
    n = vecs.shape[0]
    if n == 0:
        return 0, 0
    wide = 2 * m + 2
    deep = max(ef_c + 3, wide)
    return _insert_all(vecs, levels, m, ef_c, node_ptr, row_start, row_end, ids, adj0,
                       np.empty(adj0.shape[0] * adj0.shape[1], dtype=np.float32),
                       np.empty(ids.shape[0], dtype=np.float32),
                       np.zeros(n, dtype=np.uint16), np.zeros(0, dtype=np.uint8),
                       np.zeros(0, dtype=np.float32), np.empty((4, vecs.shape[1]), np.float32),
                       np.empty(n + 2, dtype=np.float32), np.empty(n + 2, dtype=np.int32),
                       np.empty(ef_c + 3, dtype=np.float32), np.empty(ef_c + 3, dtype=np.int32),
                       np.empty(wide, dtype=np.int32), np.empty(wide, dtype=np.float32),
                       np.empty(deep, dtype=np.int32), np.empty(deep, dtype=np.float32),
                       np.empty(deep, dtype=np.int64), np.empty(deep, dtype=np.int32),
                       np.empty(wide, dtype=np.int32), np.empty(wide, dtype=np.float32),
                       np.empty(wide, dtype=np.int32), np.empty(wide, dtype=np.float32),
                       np.empty(_CHUNK, dtype=np.int32), np.empty(_CHUNK, dtype=np.float32),
                       np.empty(32, dtype=np.float32))


@jit_no_refcount
def _insert_all(vecs, levels, m, ef_c, node_ptr, row_start, row_end, ids, adj0, dist0, dist_up,
                mark, every, no_scales, rowbuf, fk, fv, rk, rv, sel, sel_d, pruned, pruned_d,
                keys, order, tmp_ids, tmp_d, kept, kept_d, nbuf, dbuf, acc):
    """``build_graph``'s insertions, on the scratch it allocated.

    Each stored neighbour keeps its distance to the list's owner (``dist0`` beside ``adj0``,
    ``dist_up`` beside ``ids``), so a full list is pruned without measuring its members
    again: ``dist8`` is symmetric bit for bit (each lane adds the same products, and f32
    multiplication commutes), so the stored value is the one the reference computes from the
    owner's side.
    """
    n = vecs.shape[0]
    m_max0 = 2 * m
    stride = adj0.shape[1]
    flat0 = adj0.reshape(-1)  # node v's layer-0 list: its length at v * stride, then the ids
    epoch = 0
    entry_point = 0
    max_level = levels[0]
    for i in range(1, n):
        lvl = levels[i]
        curr = entry_point
        for layer in range(max_level, lvl, -1):
            curr = greedy(curr, vecs, i, layer, vecs, no_scales, node_ptr, row_start, row_end,
                          ids, nbuf, dbuf, acc, rowbuf)
        entry = curr
        for layer in range(min(lvl, max_level), -1, -1):
            epoch = next_epoch(mark, epoch)
            rs = layer_search(entry, vecs, i, layer, ef_c, vecs, no_scales, adj0, node_ptr,
                              row_start, row_end, ids, i, every, mark, epoch, fk, fv, rk, rv,
                              nbuf, dbuf, acc, rowbuf)
            nsel = select_heuristic(rv, rk, rs, m, vecs, sel, sel_d, pruned, pruned_d, keys,
                                    order, dbuf, acc)
            # a list as (ids, distances, first slot); its length lives in flat0 just before
            # the slot on layer 0, in row_end above
            if layer == 0:
                lst = flat0
                lst_d = dist0
                base = i * stride + 1
                lst[base - 1] = nsel
            else:
                lst = ids
                lst_d = dist_up
                base = row_start[node_ptr[i] + layer]
                row_end[node_ptr[i] + layer] = base + nsel
            for s in range(nsel):
                lst[base + s] = sel[s]
                lst_d[base + s] = sel_d[s]
            cap = m_max0 if layer == 0 else m
            for s in range(nsel):
                v = sel[s]
                if layer >= node_ptr[v + 1] - node_ptr[v]:
                    continue
                if layer == 0:
                    lst = flat0
                    lst_d = dist0
                    vs = v * stride + 1
                    vc = lst[vs - 1]
                else:
                    lst = ids
                    lst_d = dist_up
                    vs = row_start[node_ptr[v] + layer]
                    vc = row_end[node_ptr[v] + layer] - vs
                if vc >= cap:
                    # prune: heuristic over (existing list + i), each measured from v
                    for j in range(vc):
                        tmp_ids[j] = lst[vs + j]
                        tmp_d[j] = lst_d[vs + j]
                    tmp_ids[vc] = i
                    tmp_d[vc] = sel_d[s]  # dist8(i, v): the same bits as dist8(v, i)
                    vc_new = select_heuristic(tmp_ids, tmp_d, vc + 1, cap, vecs, kept, kept_d,
                                              pruned, pruned_d, keys, order, dbuf, acc)
                    for j in range(vc_new):
                        lst[vs + j] = kept[j]
                        lst_d[vs + j] = kept_d[j]
                else:
                    present = False
                    for j in range(vc):
                        if lst[vs + j] == i:
                            present = True
                            break
                    vc_new = vc
                    if not present:
                        lst[vs + vc] = i
                        lst_d[vs + vc] = sel_d[s]
                        vc_new = vc + 1
                if layer == 0:
                    lst[vs - 1] = vc_new
                else:
                    row_end[node_ptr[v] + layer] = vs + vc_new
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


@jit_no_refcount
def _walk(q, ef, entry_point, max_level, codes, scales, adj0, node_ptr, row_start, row_end,
          ids, allowed, mark, epoch, fk, fv, rk, rv, nbuf, dbuf, acc, rowbuf):
    """``search_graph``'s descent and layer-0 beam; returns the result size (heap in rk/rv)."""
    curr = entry_point
    for layer in range(max_level, 0, -1):
        curr = greedy(curr, q, 0, layer, codes, scales, node_ptr, row_start, row_end, ids,
                      nbuf, dbuf, acc, rowbuf)
    return layer_search(curr, q, 0, 0, ef, codes, scales, adj0, node_ptr, row_start, row_end,
                        ids, -1, allowed, mark, epoch, fk, fv, rk, rv, nbuf, dbuf, acc, rowbuf)


@jit
def search_graph(q, ef, entry_point, max_level, codes, scales, adj0, node_ptr, row_start, row_end,
                 ids, allowed, mark, epoch, fk, fv, rk, rv):
    """Greedy descent to layer 1, beam of width ``ef`` on layer 0; ids ascending by distance.

    The rows are a store ``(codes, scales)`` (``_hnsw_dist``: float32 rows or packed ones);
    the graph is its CSR rows plus ``adj0``, the ``layer0_table`` of its layer 0;
    ``allowed`` is a uint8 ``where=`` mask (empty: every row). The scratch comes from the
    caller so it is reused across queries: ``mark`` (uint16, >= n; stamped with ``epoch``,
    which must differ from every stamp left in it), ``fk``/``fv`` (>= n + 2), ``rk``/``rv``
    (>= ef + 3).
    """
    n = codes.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.int32)
    rs = _walk(q.reshape((1, q.shape[0])), ef, entry_point, max_level, codes, scales, adj0,
               node_ptr, row_start, row_end, ids, allowed, mark, epoch, fk, fv, rk, rv,
               np.empty(_CHUNK, dtype=np.int32), np.empty(_CHUNK, dtype=np.float32),
               np.empty(32, dtype=np.float32), np.empty((4, q.shape[0]), dtype=np.float32))
    keys = np.empty(rs, dtype=np.int64)
    rbits = rk.view(np.uint32)
    for j in range(rs):
        keys[j] = order_key(rk[j], rbits[j], j)  # stable: heap array order breaks distance ties
    order = np.argsort(keys)
    out = np.empty(rs, dtype=np.int32)
    for j in range(rs):
        out[j] = rv[order[j]]
    return out
