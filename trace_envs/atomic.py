"""Writing outputs so that a crash leaves the old complete version or the new one, never a half-written mix."""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import shutil
import tempfile
from pathlib import Path

_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


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
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
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
    folder = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
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
    os.rename(staging, target)
    shutil.rmtree(old, ignore_errors=True)
