"""Writes are atomic (00-design "Conventions"): a build that dies or runs out of space never
leaves a partial .urna at the target and never damages an existing file of that name.

* SIGKILL in a subprocess at fixed points (half-written temp file, fsync, just before and just
  after the rename) and at random moments of a longer build;
* ENOSPC injected at fsync, a real write limit (RLIMIT_FSIZE) and, when this user can mount
  one, a real 64 KiB tmpfs.

After each failure the target holds either the old bytes or the complete new file (equal to a
clean build of the same inputs), and a clean build to the same path still works.
"""

from __future__ import annotations

import errno
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import urna
from helpers.mutate import source_bytes

DRIVER = Path(__file__).with_name("_kill_driver.py")
OLD = "quickstart-exact.urna"  # a reference vector stands in for "the existing file"
N, DIM = 300, 32


def _run(target: Path, point: str, preset: str = "exact",
         n: int = N) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(DRIVER), str(target), point, str(n), str(DIM),
                           preset], capture_output=True, text=True, timeout=240)


@pytest.fixture(scope="module")
def clean_bytes(tmp_path_factory) -> bytes:
    """The bytes a complete, uninterrupted build of the driver's corpus writes."""
    target = tmp_path_factory.mktemp("clean") / "c.urna"
    proc = _run(target, "none")
    assert proc.returncode == 0, proc.stderr
    return target.read_bytes()


def _urna_files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".urna"))


def _assert_old_or_complete(target: Path, old: bytes | None, new: bytes) -> str:
    if not target.exists():
        assert old is None, "the existing file vanished"
        return "absent"
    data = target.read_bytes()
    if old is not None and data == old:
        return "old"
    assert data == new, f"partial or foreign bytes at the target ({len(data)} bytes)"
    return "new"


@pytest.mark.parametrize("existing", [False, True], ids=["fresh", "existing"])
@pytest.mark.parametrize("point", ["write", "fsync", "before_replace", "after_replace"])
def test_sigkill_at_fixed_points(tmp_path: Path, clean_bytes: bytes, point: str,
                                 existing: bool) -> None:
    target = tmp_path / "corpus.urna"
    old = source_bytes(OLD) if existing else None
    if old is not None:
        target.write_bytes(old)
    proc = _run(target, point)
    assert proc.returncode == -signal.SIGKILL, (proc.returncode, proc.stderr[-2000:])
    state = _assert_old_or_complete(target, old, clean_bytes)
    assert state == ("new" if point == "after_replace" else ("old" if existing else "absent"))
    assert _urna_files(tmp_path) == (["corpus.urna"] if state != "absent" else [])
    # A build after the crash still lands (leftover hidden temp files do not get in the way).
    assert _run(target, "none").returncode == 0
    assert target.read_bytes() == clean_bytes


def test_sigkill_at_random_moments(tmp_path: Path) -> None:
    seed = int(os.environ.get("URNA_KILL_SEED", "20261129"))
    rnd = random.Random(seed)
    old = source_bytes(OLD)
    reference = tmp_path / "ref" / "r.urna"
    reference.parent.mkdir()
    t0 = time.perf_counter()
    assert _run(reference, "none", "hybrid", 600).returncode == 0
    span = time.perf_counter() - t0
    new = reference.read_bytes()
    outcomes = []
    for i in range(3):
        folder = tmp_path / f"k{i}"
        folder.mkdir()
        target = folder / "corpus.urna"
        target.write_bytes(old)
        proc = subprocess.Popen([sys.executable, str(DRIVER), str(target), "timed", "600",
                                 str(DIM), "hybrid"], stdout=subprocess.PIPE, text=True)
        assert proc.stdout.readline().strip() == "ready"
        delay = rnd.uniform(0.0, span)
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
        proc.stdout.close()
        state = _assert_old_or_complete(target, old, new)
        outcomes.append((round(delay, 3), state))
        assert _urna_files(folder) == ["corpus.urna"], f"seed={seed} kill {i}"
    print(f"random kills (seed={seed}, build {span:.2f} s): {outcomes}")


def _no_leftovers(folder: Path, before: set[str]) -> None:
    assert set(os.listdir(folder)) == before, f"left behind: {set(os.listdir(folder)) - before}"


def _chunks(n: int) -> list[dict]:
    if str(DRIVER.parent) not in sys.path:
        sys.path.insert(0, str(DRIVER.parent))
    from _kill_driver import chunks
    return chunks(n, DIM)


def _build(target: Path, n: int = 50) -> None:
    urna.build(str(target), "demo", DIM, "demo-chunker/1", "sha256:" + "0" * 64,
               _chunks(n), reproducible=True)


def _is_clear_disk_error(exc: BaseException, code: int) -> bool:
    text = str(exc)
    return (isinstance(exc, (OSError, urna.errors.UrnaError))
            and (getattr(exc, "errno", None) == code or os.strerror(code) in text))


@pytest.mark.parametrize("existing", [False, True], ids=["fresh", "existing"])
def test_enospc_at_fsync_leaves_nothing_behind(tmp_path: Path, monkeypatch, existing: bool) -> None:
    target = tmp_path / "corpus.urna"
    old = source_bytes(OLD)
    if existing:
        target.write_bytes(old)
    before = set(os.listdir(tmp_path))

    def full(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(Exception) as info:
        _build(target)
    assert _is_clear_disk_error(info.value, errno.ENOSPC), repr(info.value)
    _no_leftovers(tmp_path, before)
    assert (target.read_bytes() == old) if existing else not target.exists()


_FSIZE_SCRIPT = """
import resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
sys.path.insert(0, sys.argv[2])
from _kill_driver import chunks
import urna
resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
try:
    urna.build(sys.argv[1], "demo", 32, "demo-chunker/1", "sha256:" + "0" * 64, chunks(50, 32))
except BaseException as e:
    print(type(e).__name__, getattr(e, "errno", None), e, sep="|")
    sys.exit(1)
"""


def test_write_limit_gives_a_clear_error_and_no_partial_file(tmp_path: Path) -> None:
    target = tmp_path / "corpus.urna"
    target.write_bytes(b"keep me")
    proc = subprocess.run([sys.executable, "-c", _FSIZE_SCRIPT, str(target), str(DRIVER.parent)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stderr[-2000:]
    name, code, text = proc.stdout.strip().split("|", 2)
    assert code == str(errno.EFBIG) or os.strerror(errno.EFBIG) in text, proc.stdout
    assert "Traceback" not in proc.stdout
    assert os.listdir(tmp_path) == ["corpus.urna"] and target.read_bytes() == b"keep me"


def _can_mount() -> bool:
    return (sys.platform.startswith("linux") and os.geteuid() == 0
            and shutil.which("mount") is not None)


@pytest.mark.parametrize("size", ["64k"] if _can_mount() else [])
def test_real_disk_full_on_tiny_tmpfs(tmp_path: Path, size: str) -> None:
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mnt)],
                             capture_output=True).returncode == 0
    if not mounted:  # a root user without CAP_SYS_ADMIN: injected ENOSPC above covers it
        return
    try:
        target = mnt / "corpus.urna"
        with pytest.raises(Exception) as info:
            _build(target, 800)
        assert _is_clear_disk_error(info.value, errno.ENOSPC), repr(info.value)
        assert os.listdir(mnt) == []
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True)


def test_new_file_gets_the_umask_mode_like_the_reference(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        _build(tmp_path / "new.urna")
    finally:
        os.umask(old)
    assert (tmp_path / "new.urna").stat().st_mode & 0o777 == 0o644


def test_rebuild_keeps_the_existing_files_mode(tmp_path: Path) -> None:
    target = tmp_path / "shared.urna"
    target.write_bytes(source_bytes(OLD))
    target.chmod(0o640)
    _build(target)
    assert target.stat().st_mode & 0o777 == 0o640


def test_cli_spec_build_killed_at_random_moments(tmp_path: Path) -> None:
    """``urna build --spec`` (forge: embed, emit to .tmp, rename) killed mid-way leaves the
    output absent or complete, and the next build completes with the same bytes."""
    seed = int(os.environ.get("URNA_KILL_SEED", "20261129"))
    rnd = random.Random(seed)
    example = Path(__file__).resolve().parents[2] / "examples" / "quickstart"
    work = tmp_path / "w"
    (work / "quickstart").mkdir(parents=True)
    for name in ("corpus.toml", "docs.jsonl"):
        text = (example / name).read_text().replace("examples/quickstart/", "quickstart/")
        (work / "quickstart" / name).write_text(text)
    exe = [str(Path(sys.executable).with_name("urna")), "build", "--spec",
           "quickstart/corpus.toml"]
    out = work / "quickstart" / "out" / "quickstart.urna"
    t0 = time.perf_counter()
    first = subprocess.run(exe, cwd=work, capture_output=True, text=True, timeout=300)
    span = time.perf_counter() - t0
    assert first.returncode == 0, first.stderr[-1500:]
    clean = out.read_bytes()
    states = []
    for _attempt in range(2):
        out.unlink(missing_ok=True)
        proc = subprocess.Popen(exe, cwd=work, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        time.sleep(rnd.uniform(0.0, span))
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
        states.append(_assert_old_or_complete(out, None, clean))
        assert [p.name for p in out.parent.glob("*.urna")] in ([], ["quickstart.urna"])
    again = subprocess.run(exe, cwd=work, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr[-1500:]
    assert out.read_bytes() == clean, f"seed={seed} states={states}"
