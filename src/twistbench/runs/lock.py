"""An exclusive lock on a run folder, so that two `twist run` never write one folder at once.

The lock is `<folder>/.twist-lock`, held with flock(2) for the whole run and holding the owner's
pid, host and start time (for the message a second run gets). The kernel drops a flock when its
process dies, however it dies, so a lock left behind by a killed run is never mistaken for a live
one: it is taken over, with a note naming the dead owner. A lock held by a live process is
refused with an InputError naming that process (the CLI prints it and exits 2).
"""

from __future__ import annotations

import errno
import json
import os
import socket
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from twistbench.errors import InputError
from twistbench.runs.folder import write_all

try:  # POSIX; on other systems the lock degrades to the pid check below
    import fcntl
except ImportError:  # pragma: no cover - not reached on Linux or macOS
    fcntl = None  # type: ignore[assignment]

LOCK_NAME = ".twist-lock"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except (OSError, OverflowError, ValueError):
        return False
    return True


def _read_owner(fd: int) -> dict[str, Any] | None:
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        raw = os.read(fd, 4096)
        owner = json.loads(raw.decode("utf-8"))
        return owner if isinstance(owner, dict) else None
    except (OSError, UnicodeDecodeError, ValueError):
        return None


def describe_owner(owner: dict[str, Any] | None) -> str:
    if not owner:
        return "an unknown process"
    return (f"pid {owner.get('pid')} on host {owner.get('host')} (started "
            f"{owner.get('started')})")


class RunLock:
    """`with RunLock(folder) as lock:` holds the folder; `lock.note` says whether a stale lock of
    a dead run was taken over."""

    def __init__(self, folder: str | Path):
        self.folder = Path(folder)
        self.path = self.folder / LOCK_NAME
        self.fd: int | None = None
        self.note: str | None = None

    def acquire(self) -> RunLock:
        self.folder.mkdir(parents=True, exist_ok=True)
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            owner = _read_owner(fd)
            if not self._try_lock(fd, owner):
                os.close(fd)
                raise InputError(str(self.folder), f"this run folder is in use by "
                                 f"{describe_owner(owner)} (another `twist run` writes it)",
                                 field="lock", expected="wait for that run to finish, or run "
                                 "with another --out folder")
            # The file may have been removed and re-created by its previous owner between our
            # open and our lock: then we hold a lock on a file nobody else will see. Retry.
            try:
                same = os.path.samestat(os.fstat(fd), os.stat(self.path))
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)
        if owner and owner.get("pid") != os.getpid():
            dead = ("its process is gone" if owner.get("host") == socket.gethostname()
                    and isinstance(owner.get("pid"), int) and not _pid_alive(owner["pid"])
                    else "its lock was released")
            self.note = f"took over the lock of an earlier run ({describe_owner(owner)}): {dead}"
        me = {"pid": os.getpid(), "host": socket.gethostname(),
              "started": datetime.now(UTC).isoformat(timespec="seconds")}
        os.ftruncate(fd, 0)
        os.lseek(fd, 0, os.SEEK_SET)
        write_all(fd, (json.dumps(me) + "\n").encode("utf-8"))
        os.fsync(fd)
        self.fd = fd
        return self

    def _try_lock(self, fd: int, owner: dict[str, Any] | None) -> bool:
        if fcntl is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return True
            except OSError as exc:
                if exc.errno in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                    return False
                raise
        # No flock: a live owner on this host holds it; anything else is stale.
        if owner and owner.get("host") == socket.gethostname() and isinstance(
                owner.get("pid"), int):
            return owner["pid"] == os.getpid() or not _pid_alive(owner["pid"])
        return True

    def release(self) -> None:
        if self.fd is None:
            return
        try:
            # Removed while still held, so a waiting run re-opens a fresh file (see acquire).
            self.path.unlink(missing_ok=True)
        finally:
            os.close(self.fd)  # closing drops the flock
            self.fd = None

    def __enter__(self) -> RunLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()
