r"""Reading the files pase's tools are given, and writing the ones they produce, all or nothing.

    >>> write_atomically("strategy.json", "{}\n")   # doctest: +SKIP
    >>> write_bytes_atomically("timeline.png", png)  # doctest: +SKIP
    >>> with deferred_writes():                      # doctest: +SKIP
    ...     write_atomically("strategy.json", "{}\n")  # takes its place when the block ends
    ...     write_atomically("-", "the IR\n")          # the standard output, when it ends

A regular file's text (or bytes, `write_bytes_atomically`) goes to a temporary file beside it
that is renamed into place, so a reader never sees half a file and a failed run leaves an
existing file as it was and no temporary behind. A stream (a pipe, a device such as `/dev/null`
or `/dev/full`, a FIFO) is written into, never replaced; a path that names one of the process's
open descriptors (`-` and `/dev/stdout` for 1, `/dev/stderr`, `/dev/fd/N`, `/proc/self/fd/N`,
or a link to one) is written through that descriptor, as the shell opened it (`>> log`
appends), never reopened. Inside `deferred_writes()` everything waits for the block to end
without an exception: a driver wraps its whole run in it, so a pass that writes a file
(`pase-search{export=...}`) changes nothing when a later pass fails. A failed write is a
`WriteError`, `cannot write PATH: reason`.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from contextvars import ContextVar
from io import BytesIO
from typing import IO, NamedTuple

from pase.core.diagnostics import Diagnostic, escaped, offset_to_line_column, shown_line
from pase.core.signals import raise_if_received, signals_held

# Paths that name an open descriptor of the process itself (group 1, or one of the names).
_DESCRIPTOR_PATH = re.compile(r"/dev/fd/(\d+)|/proc/(self|\d+)/fd/(\d+)")
_DESCRIPTOR_NAMES = {"-": 1, "/dev/stdin": 0, "/dev/stdout": 1, "/dev/stderr": 2}
# As the kernel does, give up on a chain of symbolic links longer than this.
_MOST_LINKS = 40

_pending: ContextVar[list[_Write] | None] = ContextVar("pase_pending_writes", default=None)
"""The writes waiting for the innermost `deferred_writes()` block."""

_inputs: ContextVar[set[str] | None] = ContextVar("pase_run_inputs", default=None)
"""The real paths of the regular files the run (the outermost `deferred_writes()` block)
has read (`note_input`): no output may replace one."""


LARGEST_TEXT_FILE = 256 << 20
"""The most bytes `read_text` reads of one file: far more than any model, strategy or
machine file, and a bound on an endless one (`strategy=/dev/zero` took all memory)."""


BYTE_ORDER_MARK = "\ufeff"


def read_text(path: str, what: str = "file") -> str:
    """The text of a UTF-8 file; raises `Diagnostic` naming `path` (and, for a byte that is not
    UTF-8, its line, column and byte offset). `what` names the file in messages:

        cannot read the strategy file: No such file or directory
        b.json:1:22: error: the strategy file is not UTF-8 text (invalid continuation byte
        at byte 21)
    """
    try:
        with open_input(path, what) as stream:
            data = read_bounded(stream, path, what)
    except OSError as error:
        raise Diagnostic(f"cannot read the {what}: {error.strerror}", path) from None
    note_input(path)
    return decode_text(data, path, what)


def open_input(path: str, what: str = "input") -> IO[bytes]:
    """`path` opened for reading without waiting for a FIFO's writer (`open` waits for ever
    on a named FIFO that no process writes): a FIFO or pipe is read whole at once, or is a
    `Diagnostic` when no process writes to it (or its writer closed it empty); anything
    else is returned open. Raises `OSError` as `open` does."""
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        mode = os.fstat(descriptor).st_mode
        if stat.S_ISDIR(mode):  # (its read would fail naming the descriptor: `cannot open 3`)
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
        fifo = stat.S_ISFIFO(mode)
        data = _read_fifo(descriptor, path, what) if fifo else b""
        os.set_blocking(descriptor, True)
    except BaseException:
        os.close(descriptor)
        raise
    if not fifo:
        return open(descriptor, "rb")
    os.close(descriptor)
    return BytesIO(data)


def _read_fifo(descriptor: int, path: str, what: str) -> bytes:
    """All a FIFO opened without blocking holds until its writer closes it (within
    `LARGEST_TEXT_FILE`); a `Diagnostic` if it has no writer."""
    try:
        first = os.read(descriptor, 1 << 16)
        if not first:
            raise Diagnostic(f"cannot read the {what}: a FIFO that no process writes to (or "
                             "that was closed empty); pase does not wait for a writer", path)
    except BlockingIOError:  # a writer, nothing written yet
        first = b""
    os.set_blocking(descriptor, True)
    with open(descriptor, "rb", closefd=False) as stream:
        data = first + read_bounded(stream, path, what)
    if len(data) > LARGEST_TEXT_FILE:
        raise Diagnostic(f"the {what} is larger than {LARGEST_TEXT_FILE >> 20} MiB, the most "
                         "pase reads of one", path)
    return data


def note_input(path: str) -> None:
    """Record that the run reads the file `path`, so that no output of the run replaces it
    (`pase-opt m.dnn -o m.dnn` replaced the model by its IR): a write to it is a
    `WriteError`. Outside `deferred_writes()`, and for a stream, it records nothing."""
    inputs = _inputs.get()
    if inputs is not None and path != "-" and os.path.isfile(path):
        inputs.add(os.path.realpath(path))


def read_bounded(stream: IO[bytes], path: str, what: str = "input") -> bytes:
    """All of `stream` (a file, a pipe, stdin), or a `Diagnostic` past `LARGEST_TEXT_FILE`
    bytes."""
    data = stream.read(LARGEST_TEXT_FILE + 1)
    if len(data) > LARGEST_TEXT_FILE:
        raise Diagnostic(f"the {what} is larger than {LARGEST_TEXT_FILE >> 20} MiB, the most "
                         "pase reads of one", path)
    return data


def decode_text(data: bytes, path: str, what: str = "input") -> str:
    """`data` as UTF-8 text; a byte that is not UTF-8 is a `Diagnostic` at its line and column
    (and byte offset), with the line it is on. `read_text`, the `.dnn` and MLIR readers of
    pase-opt and stdin all decode so. A byte order mark that starts the text (as Windows
    editors save UTF-8) is dropped, as editors hide it: columns count from after it.

        model.dnn:2:9: error: the input is not UTF-8 text (invalid continuation byte at
        byte 26)
    """
    try:
        return data.decode("utf-8").removeprefix(BYTE_ORDER_MARK)
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


class WriteError(OSError):
    """An output that could not be written: `cannot write PATH: reason`."""

    def __str__(self) -> str:
        name = "the standard output" if self.filename == "-" else escaped(self.filename)
        return f"cannot write {name}: {self.strerror}"


class _Write(NamedTuple):
    """A write held back until its `deferred_writes()` block ends: a temporary to rename
    onto `target`, or the `contents` for a stream (`target` a path, or a descriptor number)."""

    path: str
    target: str | int
    temporary: str | None
    contents: str | bytes = ""


def write_atomically(path: str, text: str) -> None:
    """Write `text` to `path` (UTF-8): a regular file by a rename, a stream into; raises
    `WriteError` naming `path`, leaving nothing behind (`UnicodeEncodeError` for text
    that has no UTF-8 form).

    Through a symlink, the file it names is replaced and the link stays; an existing file
    keeps its permissions. Inside `deferred_writes()` a temporary file is written now (so
    every error but a failed rename is raised here) and renamed when the block ends
    without an exception; a stream is written then.
    """
    _write(path, text)


def write_bytes_atomically(path: str, data: bytes) -> None:
    """Write `data` to `path` as `write_atomically` writes text (a PNG picture, say):
    a regular file by a rename, a stream into, all or nothing; raises `WriteError`."""
    _write(path, data)


def _write(path: str, contents: str | bytes) -> None:
    pending = _pending.get()
    if pending is None:
        with deferred_writes():
            _write(path, contents)
        return
    queued = len(pending)
    try:
        _queue(pending, path, contents)
    except BaseException as error:
        _discard(pending[queued:])
        del pending[queued:]
        if isinstance(error, OSError):
            raise WriteError(error.errno, error.strerror, path) from None
        raise


@contextmanager
def deferred_writes() -> Iterator[None]:
    """Hold back `write_atomically`'s writes until the block ends.

    On a normal exit the streams are written first, then the files take their places, each
    in the order they were written (into an enclosing block's queue, when there is one): a
    stream that fails (a closed pipe, a full device) leaves every file as it was. On any
    exception, `SystemExit` and a signal's `Terminated` included, the temporaries are
    removed and every target is left as it was.
    """
    pending: list[_Write] = []
    token = _pending.set(pending)
    inputs_token = _inputs.set(set()) if _inputs.get() is None else None
    try:
        yield
    except BaseException:
        _discard(pending)
        raise
    finally:
        _pending.reset(token)
        if inputs_token is not None:
            _inputs.reset(inputs_token)
    outer = _pending.get()
    if outer is not None:
        outer.extend(pending)
    else:
        _commit(pending)


def _queue(pending: list[_Write], path: str, contents: str | bytes) -> None:
    """Add the write of `contents` to `path` to `pending`, the innermost block's queue."""
    descriptor = _descriptor(path)
    if descriptor is not None:
        os.fstat(descriptor)  # EBADF now, when it is not open
        pending.append(_Write(path, descriptor, None, contents))
        return
    target = os.path.realpath(path)
    if os.path.isdir(target):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
    if os.path.basename(path) in ("", "."):  # `-o out.mlir/` (realpath drops the '/')
        raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), path)
    if _is_stream(target):
        pending.append(_Write(path, target, None, contents))
        return
    if any(write.target == target for write in pending):
        raise OSError(errno.EEXIST, "another output of this run goes to the same file", path)
    if target in (_inputs.get() or ()):
        raise OSError(errno.EEXIST, "it is an input of this run; write the output to "
                      "another file", path)
    folder = os.path.dirname(target)
    with signals_held():  # the temporary is in the queue the moment it exists
        try:
            handle, temporary = tempfile.mkstemp(dir=folder, prefix=".pase-")
        except OSError as error:
            if not os.path.isdir(folder):
                raise
            # (`-o /proc/version`: the folder exists but takes no new file, which the
            # file's own name and the error's 'No such file or directory' would hide)
            raise OSError(error.errno, f"its folder {folder} takes no new file (pase writes "
                          f"a new file there and renames it: {error.strerror})",
                          path) from None
        pending.append(_Write(path, target, temporary))
    with open(handle, "wb") as stream:
        stream.write(_encoded(contents))
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)   # keep an existing file's mode
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    os.chmod(temporary, mode)


def _descriptor(path: str) -> int | None:
    """The open descriptor `path` names (`/dev/stdout`, `/dev/fd/3`, a link to one), or None.

    Checked at each link of the chain before following it: the kernel resolves
    `/proc/self/fd/1` to the pipe or file behind it (`pipe:[123]`, or a `log` that the
    shell opened to append), which must not be opened again."""
    for _ in range(_MOST_LINKS):
        path = os.path.abspath(path) if path != "-" else path
        candidates = (path, os.path.join(os.path.realpath(os.path.dirname(path)),
                                         os.path.basename(path)))
        for candidate in candidates:
            if candidate in _DESCRIPTOR_NAMES:
                return _DESCRIPTOR_NAMES[candidate]
            match = _DESCRIPTOR_PATH.fullmatch(candidate)
            if match and match[2] in (None, "self", str(os.getpid())):
                return int(match[1] or match[3])
        if path == "-" or not os.path.islink(path):
            return None
        path = os.path.join(os.path.dirname(path), os.readlink(path))
    return None


def _is_stream(target: str) -> bool:
    """Whether `target` exists and is something other than a regular file or a folder."""
    try:
        mode = os.stat(target).st_mode
    except OSError:
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


def _commit(writes: list[_Write]) -> None:
    """Write the streams, then rename each temporary onto its target; after a failure,
    remove the temporaries left and raise `WriteError`."""
    streams = [write for write in writes if write.temporary is None]
    try:
        raise_if_received()  # a stream (a FIFO nothing reads) may block: not after a signal
        for write in streams:
            _write_stream(write)
    except BaseException as error:
        _discard(writes)
        if isinstance(error, OSError):
            raise WriteError(error.errno, error.strerror, write.path) from None
        raise
    with signals_held():  # every rename or, when one fails, none more
        renames = [write for write in writes if write.temporary is not None]
        for index, write in enumerate(renames):
            try:
                os.replace(write.temporary, write.target)  # type: ignore[arg-type]
            except OSError as error:
                _discard(renames[index:])
                raise WriteError(error.errno, error.strerror, write.path) from None


def _write_stream(write: _Write) -> None:
    """Write into a stream: its descriptor as it is open (Python's own `sys.stdout` and
    `sys.stderr` for 1 and 2, so that it lands in order with what they hold), or the path
    opened for writing."""
    contents = write.contents
    if isinstance(write.target, str):
        with open(write.target, "wb") as stream:
            stream.write(_encoded(contents))
        return
    standard = {1: sys.stdout, 2: sys.stderr}.get(write.target)
    if standard is not None:
        if isinstance(contents, str):
            standard.write(contents)
            standard.flush()
            return
        standard.flush()  # bytes go after the text it holds, through its binary buffer
        buffer = getattr(standard, "buffer", None)
        if buffer is not None:
            buffer.write(contents)
            buffer.flush()
            return
    data = _encoded(contents)
    while data:
        data = data[os.write(write.target, data):]


def _encoded(contents: str | bytes) -> bytes:
    return contents if isinstance(contents, bytes) else contents.encode("utf-8")


def _discard(writes: list[_Write]) -> None:
    with signals_held():
        for write in writes:
            if write.temporary is not None:
                with suppress(FileNotFoundError):
                    os.unlink(write.temporary)
