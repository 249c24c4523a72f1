"""The audit's temporary folder beside its output, and the removal of those killed audits left.

`audit` writes each trace file's TREC run while the scoring reads the file (TrecTee) into a
folder of its own, `.twist-audit-*` beside the output folder (the files then move into place
without a copy), and removes it when it ends, however it ends, unless it is killed: then the
folder stays, and the next audit that makes its own folder there removes it.

Which folders are dead: each audit holds an flock(2) on `owner.json` in its folder for as long as
it runs, and the kernel drops that lock when the process dies, however it dies. A folder whose
owner.json this process can lock belongs to no live audit: no pid is judged, so a reused pid or
an audit on another machine sharing the folder (NFS locks are held there too) is never taken for
a dead one. The file is locked before it gets its name, so a live audit's owner.json is never
seen unlocked. A folder without owner.json (left by an audit older than this file, or by one
killed between making its folder and naming the file) is removed only once nothing in it has
changed for UNOWNED_AGE_S; a younger one may be a live audit's. Without flock (not POSIX) every
folder is judged by that age. Only folders named `.twist-audit-*` are looked at, and a link is
never followed.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import stat
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

try:  # POSIX
    import fcntl
except ImportError:  # pragma: no cover - not reached on Linux or macOS
    fcntl = None  # type: ignore[assignment]

PREFIX = ".twist-audit-"
OWNER = "owner.json"
# an audit writes its TREC files while it reads the traces: none goes a day without writing
UNOWNED_AGE_S = 24 * 3600.0


@contextmanager
def scratch_folder(out_dir: str | Path,
                   on_note: Callable[[str], None] | None = None) -> Iterator[Path]:
    """The audit's own folder for the length of the block: `.twist-audit-*` beside `out_dir`
    where its parent exists and takes one, else in the system's temporary folder; removed when
    the block ends. Before making it beside `out_dir`, the folders there that killed audits
    left are removed, each reported to `on_note` (one line per folder)."""
    parent = Path(out_dir).resolve().parent
    folder = None
    if parent.is_dir():
        for line in remove_dead(parent):
            if on_note is not None:
                on_note(line)
        try:
            folder = Path(tempfile.mkdtemp(prefix=PREFIX, dir=parent))
        except OSError:  # not writable there: the output folder itself may still be
            pass
    if folder is None:
        folder = Path(tempfile.mkdtemp(prefix="twist-audit-"))
    fd = None
    try:
        fd = _own(folder)
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)  # the lock still held: no one else removes it
        if fd is not None:
            os.close(fd)


def _own(folder: Path) -> int | None:
    """Lock and fill `folder`/owner.json (pid, host, start time, for the note a later audit
    prints); returns the descriptor whose lock lasts as long as this process keeps it open
    (None without flock: the file is written and closed, the folder judged by its age)."""
    me = {"pid": os.getpid(), "host": socket.gethostname(),
          "started": datetime.now(UTC).isoformat(timespec="seconds")}
    record = (json.dumps(me) + "\n").encode("utf-8")
    if fcntl is None:  # pragma: no cover - not reached on Linux or macOS
        (folder / OWNER).write_bytes(record)
        return None
    pending = folder / f"{OWNER}.{os.getpid()}"
    fd = os.open(pending, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # a new file: nobody else holds it
        os.write(fd, record)
        os.replace(pending, folder / OWNER)  # named only once locked
    except BaseException:
        os.close(fd)
        raise
    return fd


def remove_dead(parent: str | Path, now: float | None = None) -> list[str]:
    """Remove the `.twist-audit-*` folders in `parent` that no live audit owns (the module's
    docstring says how that is known). Returns one line per folder removed, or found dead but
    not removable, saying whose it was; live folders are kept and not reported."""
    now = time.time() if now is None else now
    lines = []
    try:
        entries = sorted(os.scandir(parent), key=lambda e: e.name)
    except OSError:
        return []
    for entry in entries:
        if entry.name.startswith(PREFIX) and entry.is_dir(follow_symlinks=False):
            line = _remove_if_dead(Path(entry.path), now)
            if line is not None:
                lines.append(line)
    return lines


def _remove_if_dead(folder: Path, now: float) -> str | None:
    if fcntl is None:  # pragma: no cover - not reached on Linux or macOS
        try:
            return _remove_if_old(folder, now, _owner((folder / OWNER).read_bytes()))
        except FileNotFoundError:
            return _remove_if_old(folder, now, "no owner recorded")
        except OSError:
            return None
    try:
        fd = os.open(folder / OWNER, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        return _remove_if_old(folder, now, "no owner recorded")
    except OSError:  # unreadable, or a link: whose it is cannot be known, so it is kept
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            # an audit that ended removes its folder before it lets go of the lock
            if not os.path.samestat(os.fstat(fd), os.stat(folder / OWNER)) or \
                    not stat.S_ISREG(os.fstat(fd).st_mode):
                return None
            record = os.read(fd, 4096)
        except OSError:  # locked: its audit is running (or no lock to be had here): kept
            return None
        return _remove(folder, f"{_owner(record)}, which ended without removing it")
    finally:
        os.close(fd)


def _remove_if_old(folder: Path, now: float, whose: str) -> str | None:
    try:
        newest = max([folder.lstat().st_mtime] +
                     [e.stat(follow_symlinks=False).st_mtime for e in os.scandir(folder)])
    except OSError:  # removed meanwhile, or unreadable: kept
        return None
    idle = now - newest
    if idle < UNOWNED_AGE_S:
        return None
    return _remove(folder, f"{whose}, nothing changed in it for {idle / 3600:.0f} h")


def _remove(folder: Path, why: str) -> str:
    try:
        shutil.rmtree(folder)
    except FileNotFoundError:  # another audit removes it at the same time
        pass
    except OSError as exc:
        return (f"could not remove {folder}, the temporary folder of an earlier audit ({why}): "
                f"{exc.strerror or exc}")
    return f"removed {folder}, the temporary folder of an earlier audit ({why})"


def _owner(record: bytes) -> str:
    """Whose the folder was, from its owner.json: 'the audit of pid P on host H, started T'."""
    try:
        owner = json.loads(record.decode("utf-8"))
        return (f"the audit of pid {owner['pid']} on host {owner['host']}, started "
                f"{owner['started']}")
    except (UnicodeDecodeError, ValueError, TypeError, KeyError):
        return "an audit whose owner file is unreadable"
