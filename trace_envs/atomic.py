"""Writing outputs so that a crash leaves the old complete version or the new one, never a half-written mix.

New content is built under a hidden name beside its target, `.<target>.staging-<host>-<pid>-<random>`, then renamed
over it. A process killed with SIGKILL leaves that staging folder or file behind; the next one to stage anything in
the same folder removes it, as it is its own kind (the marker) and stale: its process is dead on this host, or it is
older than STALE_AGE_S (written by another host, or by a pid since reused).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import re
import shutil
import socket
import tempfile
import time
from pathlib import Path

_RENAME_EXCHANGE = 2
_AT_FDCWD = -100
STAGING_MARK = ".staging-"
STALE_AGE_S = 24 * 3600
HOST = re.sub(r"[^A-Za-z0-9]", "", socket.gethostname())[:32] or "host"
_STAGED = re.compile(r"^\..+" + re.escape(STAGING_MARK) + r"(?P<host>[A-Za-z0-9]+)-(?P<pid>\d+)-[A-Za-z0-9_]+$")


def _staging_prefix(name: str) -> str:
    return f".{name}{STAGING_MARK}{HOST}-{os.getpid()}-"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    return True


def is_stale(entry: Path) -> bool:
    """Whether `entry` is a staging folder or file of this module whose writer is gone."""
    m = _STAGED.match(entry.name)
    if m is None:
        return False
    try:
        age = time.time() - entry.lstat().st_mtime
    except OSError:
        return False
    if age > STALE_AGE_S:
        return True
    pid = int(m["pid"])
    return m["host"] == HOST and pid != os.getpid() and not _alive(pid)


_swept: set[str] = set()


def _sweep_once(folder: Path) -> None:
    """`remove_stale_staging` the first time this process stages in `folder` (what a run that dies after that
    leaves is the next process's to remove; sweeping before every write would cost a listing each)."""
    key = os.path.abspath(folder)
    if key not in _swept:
        _swept.add(key)
        remove_stale_staging(folder)


def remove_stale_staging(folder: Path) -> list[Path]:
    """Remove the stale staging folders and files in `folder` (left by killed runs); returns what was removed."""
    removed: list[Path] = []
    try:
        entries = list(folder.iterdir())
    except OSError:
        return removed
    for entry in entries:
        if is_stale(entry):
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink(missing_ok=True)
            removed.append(entry)
    return removed


def check_writable(folder: Path) -> None:
    """Raise OSError unless a staging folder can be made (and removed) in `folder`, as publishing will."""
    os.rmdir(tempfile.mkdtemp(prefix=_staging_prefix("probe"), dir=folder))


def fsync_tree(folder: Path) -> None:
    for path in folder.rglob("*"):
        if path.is_file():
            fd = os.open(path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)


def write_text_atomic(path: Path, text: str) -> Path:
    """Write `text` (UTF-8) to a temporary file beside `path`, fsync it, then rename it over `path`."""
    return write_bytes_atomic(path, text.encode("utf-8"))


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_bytes_atomic(path: Path, data: bytes) -> Path:
    """Write `data` to a temporary file beside `path`, fsync it, then rename it over `path`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    _sweep_once(path.parent)
    fd, tmp = tempfile.mkstemp(prefix=_staging_prefix(path.name), dir=path.parent)
    os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; an output file reads like any other new file
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


def staging_dir(target: Path) -> Path:
    """A hidden folder beside `target` to build its new content in (registries skip names starting with '.')."""
    target.parent.mkdir(parents=True, exist_ok=True)
    _sweep_once(target.parent)
    folder = Path(tempfile.mkdtemp(prefix=_staging_prefix(target.name), dir=target.parent))
    os.chmod(folder, 0o777 & ~_umask())  # mkdtemp makes 0700; a published folder reads like any other new folder
    return folder


def swap_in(staging: Path, target: Path) -> None:
    """Make the folder `staging` the content of `target` in one step and remove the old content.

    Linux's renameat2(RENAME_EXCHANGE) swaps the two folders atomically; where it is missing, two renames with the
    smallest possible window between them stand in.
    """
    fsync_tree(staging)
    if not target.exists():
        os.rename(staging, target)
        return
    libc_name = ctypes.util.find_library("c")
    renameat2 = getattr(ctypes.CDLL(libc_name, use_errno=True), "renameat2", None) if libc_name else None
    if renameat2 is not None and renameat2(
        _AT_FDCWD, os.fsencode(staging), _AT_FDCWD, os.fsencode(target), _RENAME_EXCHANGE
    ) == 0:
        shutil.rmtree(staging, ignore_errors=True)  # now holds the old content
        return
    old = target.with_name(f".{target.name}.old")
    shutil.rmtree(old, ignore_errors=True)
    os.rename(target, old)
    try:
        os.rename(staging, target)
    except OSError:
        os.rename(old, target)  # the old content stays published
        raise
    shutil.rmtree(old, ignore_errors=True)
