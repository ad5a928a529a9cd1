"""`report_errors`: how pase-opt and pase-run turn any exception into one diagnostic.

    with report_errors("pase-opt"):
        PaseOptMain(args).run()

An error is one diagnostic on stderr, `file:line:col: error: message` where the input
has a place (then the source line and a caret), else `pase-opt: error: message`, and
exit status 1. SIGINT (Ctrl-C), SIGTERM and SIGHUP raise `Terminated` in the body, so that
every temporary file is removed and every worker process stopped on the way out, and exit
128 + the signal's number (130, 143, 129). A standard output that cannot be written (the
reader of the pipe is gone: `pase-opt big.dnn | head -1`) is an error like any other. An
exception no rule below expects is a bug in pase: still one line, naming `PASE_DEBUG=1`
for the traceback.
"""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NoReturn

from xdsl.utils.exceptions import ArgSpecParseError, DiagnosticException, ParseError

from pase.core.diagnostics import (
    Diagnostic,
    escaped,
    offset_to_line_column,
    shown_line,
    terminal_safe,
)
from pase.core.files import WriteError
from pase.core.signals import Terminated, signals_raise

UNWRITABLE = (errno.EPIPE, errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EBADF)
"""The errors of a write whose target cannot take it (a closed pipe, a full device, a
standard output the shell closed)."""


class ToolError(Exception):
    """An error already worded for the user, printed as `TOOL: error: message`."""


@contextmanager
def report_errors(tool: str) -> Iterator[None]:
    """Run the body; print any error as `describe` words it and exit 1 (128 + the signal's
    number on SIGINT, SIGTERM or SIGHUP)."""
    try:
        with signals_raise():
            yield
            sys.stdout.flush()  # a closed pipe is reported here, not by Python at exit
    except SystemExit as exit_:
        # argparse exits 2 on a bad flag; pase reports every usage error as status 1.
        sys.exit(1 if exit_.code == 2 else exit_.code)
    except Terminated as terminated:
        sys.exit(terminated.exit_status)
    except KeyboardInterrupt:  # raised by a handler other than ours (a SIGINT before ours)
        sys.exit(130)
    except ArgSpecParseError as error:  # a BaseException in xDSL, not an Exception
        fail(f"{tool}: error: {error}")
    except Exception as error:
        message = describe(error, tool)
        if message is None:
            if os.environ.get("PASE_DEBUG"):
                raise
            message = (f"{tool}: internal error: {type(error).__name__}: {error} "
                       "(rerun with PASE_DEBUG=1 for the traceback, and please report it)")
        fail(message)


def describe(error: Exception, tool: str) -> str | None:
    """The diagnostic for `error`, or None for an exception that is a bug in pase."""
    from pase.formats.machine_toml import MachineError, machine_diagnostic
    from pase.runtime.workers import WorkerError

    match error:
        case Diagnostic():
            return str(error)
        case ParseError():
            return format_parse_error(error)
        case DiagnosticException():
            message = str(error)
            return message if "error: " in message.split("\n", 1)[0] else f"error: {message}"
        case MachineError():
            return str(machine_diagnostic(error, tool))
        case MemoryError():
            # (the system's memory, not a budget of pase's: those are checked before the
            # work, and name their option)
            return (f"{tool}: error: out of memory: the system could not give the run the "
                    "memory it asked for; run it with more memory free, or on a smaller "
                    "model (pase-run: --scale)")
        case ToolError() | WorkerError():
            return f"{tool}: error: {error}"
        case WriteError():
            return f"{tool}: error: {error}"
        case OSError() if error.errno in UNWRITABLE and error.filename is None:
            # (a write that names no file: print's to the standard output)
            return f"{tool}: error: {WriteError(error.errno, error.strerror, '-')}"
        case OSError() if error.filename is None:
            return f"{tool}: error: {error.strerror or error}"
        case OSError():
            return f"{tool}: error: cannot open {escaped(str(error.filename))}: {error.strerror}"
        case ValueError():
            return f"{tool}: error: {error}"
    notes = getattr(error, "__notes__", [])
    if notes:  # a device of pase-run's workers failed: the notes say which, and how
        return f"{tool}: error: {type(error).__name__}: {error}\n{notes[0]}"
    return None


def format_parse_error(error: ParseError) -> str:
    """An xDSL parse error as a pase diagnostic: file, line and column, source line, caret."""
    span = error.span
    content = span.input.content
    text = content.decode("utf-8", "replace") if isinstance(content, bytes) else content
    line, column = offset_to_line_column(text, span.start)
    line_text = shown_line(text, line)
    length = max(min(span.end, len(text)) - span.start, 1)
    if line_text is not None:
        length = min(length, max(len(line_text) - column + 1, 1))
    return str(Diagnostic(escaped(error.msg), span.input.name, line + span.line_offset, column,
                          length=length, source_line=line_text))


def fail(message: str) -> NoReturn:
    """Print `message` on stderr and exit with status 1; a character of it that is not
    printable (an ESC, a lone CR of a file name a message quotes) as its escape, so that
    no input can move the terminal's cursor or colour its text."""
    _drop_unwritable_stdout()
    print(terminal_safe(message), file=sys.stderr)
    sys.exit(1)


def _drop_unwritable_stdout() -> None:
    """When the standard output cannot take what is buffered for it (its pipe's reader is
    gone), point it at /dev/null: Python's flush at exit would print its own traceback."""
    try:
        sys.stdout.flush()
    except OSError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
