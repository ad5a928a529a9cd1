"""Reading the files pase's tools are given, and writing the ones they produce, all or nothing.

    >>> write_atomically("strategy.json", "{}\n")   # doctest: +SKIP
    >>> with deferred_writes():                      # doctest: +SKIP
    ...     write_atomically("strategy.json", "{}\n")  # takes its place when the block ends

The text goes to a temporary file beside `path` that is renamed into place, so a reader never
sees half a file and a failed run leaves an existing file as it was and no temporary behind.
Inside `deferred_writes()` the rename waits for the block to end without an exception: a driver
wraps its whole run in it, so a pass that writes a file (`pase-search{export=...}`) changes
nothing when a later pass fails.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from contextvars import ContextVar
from typing import NamedTuple

from pase.core.diagnostics import Diagnostic, offset_to_line_column, shown_line

_pending: ContextVar[list[_Write] | None] = ContextVar("pase_pending_writes", default=None)
"""The writes waiting for the innermost `deferred_writes()` block."""


def read_text(path: str, what: str = "file") -> str:
    """The text of a UTF-8 file; raises `Diagnostic` naming `path` (and, for a byte that is not
    UTF-8, its line, column and byte offset). `what` names the file in messages:

        cannot read the strategy file: No such file or directory
        b.json:1:22: error: the strategy file is not UTF-8 text (invalid continuation byte
        at byte 21)
    """
    try:
        with open(path, "rb") as stream:
            data = stream.read()
    except OSError as error:
        raise Diagnostic(f"cannot read the {what}: {error.strerror}", path) from None
    return decode_text(data, path, what)


def decode_text(data: bytes, path: str, what: str = "input") -> str:
    """`data` as UTF-8 text; a byte that is not UTF-8 is a `Diagnostic` at its line and column
    (and byte offset), with the line it is on. `read_text`, the `.dnn` and MLIR readers of
    pase-opt and stdin all decode so.

        model.dnn:2:9: error: the input is not UTF-8 text (invalid continuation byte at
        byte 26)
    """
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        # Everything before the first bad byte is valid UTF-8, so it gives line and column.
        before = data[:error.start].decode("utf-8")
        line, column = offset_to_line_column(before, len(before))
        start = data.rfind(b"\n", 0, error.start) + 1
        end = data.find(b"\n", error.start)
        source_line = data[start:end if end >= 0 else len(data)].decode("utf-8", "replace")
        raise Diagnostic(f"the {what} is not UTF-8 text ({error.reason} at byte "
                         f"{error.start})", path, line, column,
                         source_line=shown_line(source_line, 1)) from None


def read_line(path: str, line: int) -> str | None:
    """Line `line` (1-based) of a text file, to show under a diagnostic; None if it cannot be
    read or is too long to show."""
    try:
        with open(path, encoding="utf-8", newline="") as stream:
            return shown_line(stream.read(), line)
    except (OSError, UnicodeDecodeError):
        return None


class _Write(NamedTuple):
    """A write held back by `deferred_writes()`: a temporary to rename onto `target`, or the
    `text` for a target that is a device or a pipe."""

    target: str
    temporary: str | None
    text: str | None = None


def write_atomically(path: str, text: str) -> None:
    """Write `text` to `path` (UTF-8) by a rename; raises OSError, leaving nothing behind.

    Through a symlink, the file it names is replaced and the link stays; an existing file
    keeps its permissions. A device or a pipe (`-o /dev/null`, `/dev/stdout`, a FIFO) is
    written into, never replaced. Inside `deferred_writes()` the temporary file is written now
    (so every error but a failed rename is raised here) and renamed when the block ends
    without an exception.
    """
    target = os.path.realpath(path)
    if os.path.isdir(target):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
    pending = _pending.get()
    if _is_stream(target):
        write = _Write(target, None, text)
    elif pending is not None and any(write.target == target for write in pending):
        raise OSError(errno.EEXIST, "another output of this run goes to the same file", path)
    else:
        write = _Write(target, _write_temporary(target, text))
    if pending is None:
        _commit([write])
    else:
        pending.append(write)


@contextmanager
def deferred_writes() -> Iterator[None]:
    """Hold back `write_atomically`'s renames until the block ends.

    On a normal exit the files take their places, in the order they were written (into an
    enclosing block's queue, when there is one); on any exception, `SystemExit` included,
    they are dropped and every target is left as it was.
    """
    pending: list[_Write] = []
    token = _pending.set(pending)
    try:
        yield
    except BaseException:
        _discard(pending)
        raise
    finally:
        _pending.reset(token)
    outer = _pending.get()
    if outer is not None:
        outer.extend(pending)
    else:
        _commit(pending)


def _is_stream(target: str) -> bool:
    """Whether `target` exists and is something other than a regular file or a folder."""
    try:
        mode = os.stat(target).st_mode
    except OSError:
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


def _write_temporary(target: str, text: str) -> str:
    directory = os.path.dirname(target)
    with tempfile.NamedTemporaryFile("w", dir=directory, delete=False, prefix=".pase-",
                                     encoding="utf-8") as stream:
        temporary = stream.name
        try:
            stream.write(text)
        except BaseException:
            stream.close()
            os.unlink(temporary)
            raise
    try:
        try:
            mode = stat.S_IMODE(os.stat(target).st_mode)   # keep an existing file's mode
        except FileNotFoundError:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.chmod(temporary, mode)
    except BaseException:
        os.unlink(temporary)
        raise
    return temporary


def _commit(writes: list[_Write]) -> None:
    """Rename each temporary onto its target, or write a stream's text into it; after a
    failure, remove the temporaries left."""
    for index, write in enumerate(writes):
        try:
            if write.temporary is not None:
                os.replace(write.temporary, write.target)
            else:
                with open(write.target, "w", encoding="utf-8") as stream:
                    stream.write(write.text or "")
        except BaseException:
            _discard(writes[index + (write.temporary is None):])
            raise


def _discard(writes: list[_Write]) -> None:
    for write in writes:
        if write.temporary is not None:
            with suppress(FileNotFoundError):
                os.unlink(write.temporary)
