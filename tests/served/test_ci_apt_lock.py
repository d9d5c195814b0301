"""``.ci/run`` waits for a package manager another process runs, instead of failing on its lock.

A process holds a lock file of our own (``HOST_CI_APT_LOCKS`` points the wait at it; the real
default is dpkg's and apt's locks) while ``.ci/apt-lock.sh`` and ``.ci/run``'s own ``apt_install``
(with a stand-in ``apt-get`` on the PATH) run: they wait until it lets go, say so, and give up
with the holder named after ``HOST_CI_APT_LOCK_WAIT`` seconds.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.paths import ROOT
from support.waiting import wait_until

pytestmark = pytest.mark.served

HELD_S = 2.0


def _env(lock: Path, wait_s: int, **more: str) -> dict[str, str]:
    return {**os.environ, "HOST_CI_APT_LOCKS": f"{lock} {lock}.other",
            "HOST_CI_APT_LOCK_WAIT": str(wait_s), **more}  # fmt: skip


def _holding(lock: Path, seconds: float) -> subprocess.Popen[bytes]:
    """A process holding ``lock`` (flock, as a package manager holds its own) for ``seconds``."""
    lock.touch()
    holder = subprocess.Popen(["flock", str(lock), "sleep", str(seconds)])
    assert wait_until(lambda: _open_by(holder.pid, lock), 10)
    return holder


def _open_by(pid: int, lock: Path) -> bool:
    fds = Path(f"/proc/{pid}/fd")
    return any(os.readlink(fd) == str(lock) for fd in fds.iterdir()) if fds.exists() else False


@pytest.fixture
def lock(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path / "lock-frontend"


def test_the_wait_ends_when_the_holder_lets_go(lock: Path) -> None:
    holder = _holding(lock, HELD_S)
    started = time.monotonic()
    done = subprocess.run(["bash", ".ci/apt-lock.sh"], cwd=ROOT, env=_env(lock, 60),
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    waited = time.monotonic() - started
    holder.wait(10)

    assert done.returncode == 0, done.stderr
    assert waited >= HELD_S - 1
    assert f".ci/run: waiting for the package manager (up to 60s): {holder.pid} (flock) holds " \
        f"{lock}" in done.stderr  # fmt: skip
    assert "the package manager is free after" in done.stderr


def test_nothing_held_nothing_waited(lock: Path) -> None:
    lock.touch()
    done = subprocess.run(["bash", ".ci/apt-lock.sh"], cwd=ROOT, env=_env(lock, 60),
                          capture_output=True, text=True, timeout=30)  # fmt: skip
    assert (done.returncode, done.stderr) == (0, "")


def test_the_wait_is_bounded_and_names_the_holder(lock: Path) -> None:
    holder = _holding(lock, 60)
    try:
        done = subprocess.run(["bash", ".ci/apt-lock.sh"], cwd=ROOT, env=_env(lock, 1),
                              capture_output=True, text=True, timeout=30)  # fmt: skip
    finally:
        holder.kill()
        holder.wait(10)
    assert done.returncode == 1
    assert f"still busy after 1s: {holder.pid} (flock) holds {lock}" in done.stderr


def test_ci_runs_apt_get_only_once_the_lock_is_free(lock: Path, tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "calls"
    fake = bin_dir / "apt-get"
    fake.write_text(f'#!/bin/sh\necho "$(date +%s.%N) $*" >> {calls}\n')
    fake.chmod(0o755)
    # NOTE: .ci/run's own as_root and apt_install, taken from it as written, with its source.
    script = (
        'eval "$(sed -n -e "/^as_root()/,/^}/p" -e "/^\\. \\.ci\\/apt-lock.sh/p" '
        '-e "/^apt_install()/,/^}/p" .ci/run)"; apt_install redis-server'
    )
    env = _env(lock, 60, PATH=f"{bin_dir}:{os.environ['PATH']}")
    holder = _holding(lock, HELD_S)
    released = time.time() + HELD_S - 1
    done = subprocess.run(["bash", "-c", script], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=60, check=False)  # fmt: skip
    holder.wait(10)

    assert done.returncode == 0, done.stderr
    assert "waiting for the package manager" in done.stderr
    lines = calls.read_text().splitlines()
    assert len(lines) == 2 and " update " in lines[0] and " install " in lines[1]
    assert lines[1].endswith(" redis-server")
    assert all(float(line.split()[0]) >= released for line in lines)
    assert all("DPkg::Lock::Timeout=60" in line for line in lines)
