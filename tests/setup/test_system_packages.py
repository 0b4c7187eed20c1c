"""`make test`'s system-package step: installs only what is missing, or says what to install."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "tools" / "ensure-debian-packages.sh"


def _run(*packages: str, user: str | None = None,
         script: Path = SCRIPT) -> subprocess.CompletedProcess[str]:
    cmd = ["bash", str(script), *packages]
    if user is not None:  # drop to an unprivileged account with no sudo rights
        cmd = ["setpriv", f"--reuid={pwd.getpwnam(user).pw_uid}",
               f"--regid={pwd.getpwnam(user).pw_gid}", "--clear-groups", *cmd]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"})


def test_installed_packages_need_nothing() -> None:
    res = _run("bash", "coreutils")
    assert res.returncode == 0
    assert res.stderr == ""


def test_unprivileged_user_gets_one_line_instruction() -> None:
    missing = "urna-test-package-that-does-not-exist"
    # As root, drop to `nobody` (no sudo rights); otherwise this account is the unprivileged one.
    # `nobody` may not be able to enter the checkout's folder, so it runs a copy in a folder of
    # its own under the system's temp dir (world-traversable, unlike pytest's tmp_path).
    folder = Path(tempfile.mkdtemp(prefix="urna-setup-"))
    try:
        folder.chmod(0o755)
        script = folder / SCRIPT.name
        shutil.copyfile(SCRIPT, script)
        script.chmod(0o755)
        res = _run("bash", missing, user="nobody" if os.geteuid() == 0 else None,
                   script=script)
    finally:
        shutil.rmtree(folder)
    assert res.returncode == 1
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1
    assert f"sudo apt-get install {missing}" in lines[0]
    assert "bash" not in lines[0].split("install", 1)[1]  # only the missing one is named
