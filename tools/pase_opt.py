"""`pase-opt`: xdsl-opt with pase's dialects, passes and the `.dnn` frontend.

    pase-opt models/mlp.dnn -p 'pase-annotate-configs{devices=8}'
    pase-opt graph.mlir --split-input-file --verify-diagnostics

Every xdsl-opt flag works. Errors in the input (syntax, verifier, a bad pass option)
are one diagnostic, `file:line:col: error: message` where there is a location, and
exit status 1; `-o FILE` is written only when everything succeeded.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from io import StringIO
from typing import IO, Any, NoReturn

from xdsl.dialects.builtin import FileLineColLoc, IntAttr, ModuleOp, StringAttr
from xdsl.ir import AttributeInvT, Operation, SSAValue
from xdsl.parser import Parser, UnresolvedOperand
from xdsl.utils.arg_spec import PipelineLexer, SpecTokenKind, parse_spec
from xdsl.utils.exceptions import ArgSpecParseError, DiagnosticException, ParseError
from xdsl.utils.lexer import Span
from xdsl.utils.mlir_lexer import MLIRTokenKind as TokenKind
from xdsl.xdsl_opt_main import xDSLOptMain

from pase.core.diagnostics import at_op, offset_to_line_column
from pase.core.files import deferred_writes, write_atomically
from pase.dialect import get_all_dialects
from pase.frontend import Diagnostic, parse_text
from pase.passes import PASS_SUMMARIES, get_all_passes

NOTHING_PARSED = "Could not parse entire input!"


class LocatedParser(Parser):
    """The MLIR parser, recording each op's `file:line:col` as its location, and reporting
    an undefined value at its first use (xDSL reports it at the end of the input)."""

    line_offset = 0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.first_uses: dict[str, Span] = {}

    def resolve_operand(self, operand: UnresolvedOperand,
                        type: AttributeInvT) -> SSAValue[AttributeInvT]:
        name = operand.operand_name
        if name not in self.ssa_values:
            self.first_uses.setdefault(name, operand.span)
        return super().resolve_operand(operand, type)

    def parse_module(self, allow_implicit_module: bool = True) -> ModuleOp:
        try:
            return super().parse_module(allow_implicit_module)
        except ParseError as error:
            if self._current_token.kind == TokenKind.EOF and error.msg == NOTHING_PARSED:
                return ModuleOp([])  # as mlir-opt: no ops (only comments) is an empty module
            undefined = [name for name in self.forward_ssa_references
                         if name in self.first_uses]
            if not error.msg.startswith("values used but not defined") or not undefined:
                raise
            more = f" (and {len(undefined) - 1} more)" if len(undefined) > 1 else ""
            raise ParseError(self.first_uses[undefined[0]],
                             f"use of undefined value %{undefined[0]}{more}") from None

    def parse_operation(self) -> Operation:
        span = self._current_token.span
        op = super().parse_operation()
        if not isinstance(op.location, FileLineColLoc):
            content = span.input.content
            text = content if isinstance(content, str) else content.decode("utf-8", "replace")
            line, column = offset_to_line_column(text, span.start)
            op.location = FileLineColLoc(StringAttr(span.input.name),
                                         IntAttr(line + self.line_offset), IntAttr(column))
        return op


class _Output(StringIO):
    """Holds the output until the run succeeded (xdsl-opt closes it when done)."""

    def close(self) -> None:
        pass


class PaseOptMain(xDSLOptMain):
    version_format = "pase-opt (xdsl {xdsl_version})"

    def __init__(self, args: Sequence[str] | None = None):
        super().__init__(description="pase optimizer driver: parallelization strategies "
                         "for DNN training, on the dnn dialect", args=args)

    def register_all_dialects(self) -> None:
        super().register_all_dialects()
        for name, factory in get_all_dialects().items():
            self.ctx.register_dialect(name, factory)

    def register_all_passes(self) -> None:
        super().register_all_passes()
        for name, factory in get_all_passes().items():
            self.register_pass(name, factory)

    def register_all_frontends(self) -> None:
        super().register_all_frontends()
        self.available_frontends["dnn"] = lambda stream: parse_text(stream.read().decode())

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser) -> None:
        super().register_all_arguments(arg_parser)
        arg_parser.formatter_class = argparse.RawDescriptionHelpFormatter
        arg_parser.error = _usage_error  # type: ignore[method-assign]
        for action in arg_parser._actions:
            if action.dest == "passes":
                action.help = ("comma-separated pass pipeline, e.g. "
                               "'pase-annotate-configs{devices=8}'; the pase passes are "
                               "listed below, and xDSL's own (canonicalize, cse, ...) work too")
        arg_parser.epilog = "pase passes:\n" + "\n".join(
            f"  {spec}\n      {summary}" for spec, summary in PASS_SUMMARIES.items())

    def parse_chunk(self, chunk: IO[bytes], file_extension: str,
                    start_offset: int = 0) -> ModuleOp | None:
        frontend = parse_spec(self.args.frontend or file_extension).name
        data = chunk.read()
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as error:
            raise Diagnostic(f"the input is not UTF-8 text ({error.reason} at byte "
                             f"{error.start})", self.get_input_name()) from None
        if frontend == "dnn":
            if self.args.split_input_file and all(
                    not line.strip() or line.lstrip().startswith("//")
                    for line in text.splitlines()):
                return ModuleOp([])  # an empty chunk (after a trailing marker), as for MLIR
            try:
                module = parse_text(text, self.get_input_name())
            except Diagnostic as error:
                if error.line:
                    # Keep the chunk's own line for the caret before moving to file lines.
                    lines = (error.source or "").splitlines()
                    if error.source_line is None and error.line <= len(lines):
                        error.source_line = lines[error.line - 1]
                    error.line += start_offset
                if self.args.parsing_diagnostics:  # as xdsl-opt does for MLIR parse errors
                    print(error)
                    return None
                raise
            if start_offset:  # locations count lines of the file, not of the chunk
                for op in module.walk():
                    if isinstance(op.location, FileLineColLoc):
                        op.location = FileLineColLoc(
                            op.location.filename, IntAttr(op.location.line.data + start_offset),
                            op.location.column)
            return module
        if frontend == "mlir":
            parser = LocatedParser(self.ctx, text, self.get_input_name())
            parser.line_offset = start_offset
            return parser.parse_module(not self.args.no_implicit_module)
        from io import BytesIO

        return super().parse_chunk(BytesIO(data), file_extension, start_offset)

    def prepare_output(self) -> IO[str]:
        self.output = _Output()
        return self.output

    def setup_pipeline(self) -> None:
        check_unique_options(self.args.passes)
        super().setup_pipeline()
        verify = not self.args.disable_verify
        callback = self.pipeline.callback

        def located_callback(previous, module, next_pass) -> None:  # type: ignore[no-untyped-def]
            if verify:
                verify_located(module)
            if callback is not None:
                callback(previous, module, next_pass)

        object.__setattr__(self.pipeline, "callback", located_callback)


def check_unique_options(pipeline: str) -> None:
    """Raise `ArgSpecParseError` at an option given twice in one pass's `{...}`: xDSL keeps
    the last silently, so `pase-search{devices=8 devices=4}` would search 4 devices."""
    if not pipeline:
        return
    seen: set[str] | None = None
    previous = None
    for token in PipelineLexer._generator(pipeline):
        if token.kind is SpecTokenKind.L_BRACE:
            seen = set()
        elif token.kind is SpecTokenKind.R_BRACE:
            seen = None
        elif (seen is not None and token.kind is SpecTokenKind.IDENT and previous in (
                SpecTokenKind.L_BRACE, SpecTokenKind.SPACE)):
            key = token.span.text.replace("-", "_")
            if key in seen:
                raise ArgSpecParseError(token, f"option '{token.span.text}' is given twice")
            seen.add(key)
        previous = token.kind


def verify_located(module: ModuleOp) -> None:
    """Verify op by op, so a failure names the op's source location."""
    for op in module.walk():
        try:
            op.verify(verify_nested_ops=False)
        except DiagnosticException as error:
            message = f"'{op.name}' op " + str(error).split("\n", 1)[0]
            raise DiagnosticException(str(at_op(op, message))) from None


def format_parse_error(error: ParseError) -> str:
    span = error.span
    content = span.input.content
    text = content.decode("utf-8", "replace") if isinstance(content, bytes) else content
    line, column = offset_to_line_column(text, span.start)
    line_text = text.splitlines()[line - 1] if line <= len(text.splitlines()) else ""
    length = max(min(span.end, len(text)) - span.start, 1)
    return str(Diagnostic(error.msg, span.input.name, line + span.line_offset, column,
                          length=min(length, max(len(line_text) - column + 1, 1)),
                          source_line=line_text))


def main(args: Sequence[str] | None = None) -> None:
    """Run pase-opt; any error is one diagnostic on stderr and exit status 1."""
    try:
        with deferred_writes():  # what passes write (export=) lands only if the run succeeds
            driver = PaseOptMain(args)
            driver.run()
            write_output(driver.output.getvalue(), driver.args.output_file)
    except SystemExit as exit_:
        # argparse exits 2 on a bad flag; pase reports every usage error as status 1.
        sys.exit(1 if exit_.code == 2 else exit_.code)
    except Diagnostic as error:
        _fail(str(error))
    except ParseError as error:
        _fail(format_parse_error(error))
    except DiagnosticException as error:
        message = str(error)
        first_line = message.split("\n", 1)[0]
        _fail(message if "error: " in first_line else f"error: {message}")
    except ArgSpecParseError as error:
        _fail(f"pase-opt: error: {error}")
    except OSError as error:
        _fail(f"pase-opt: error: cannot open {error.filename}: {error.strerror}")
    except ValueError as error:
        _fail(f"pase-opt: error: {error}")
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception as error:  # a bug in pase: still one line, with a way to see more
        if os.environ.get("PASE_DEBUG"):
            raise
        _fail(f"pase-opt: internal error: {type(error).__name__}: {error} "
              "(rerun with PASE_DEBUG=1 for the traceback, and please report it)")


def write_output(text: str, path: str | None) -> None:
    """Print, or write `path` atomically (`pase.core.files.write_atomically`)."""
    if path is None:
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    try:
        write_atomically(path, text)
    except OSError as error:
        _fail(f"pase-opt: error: cannot write {path}: {error.strerror}")


def _usage_error(message: str) -> NoReturn:
    """A bad command line: one line, exit status 1 (argparse would print its usage)."""
    print(f"pase-opt: error: {message} (see pase-opt --help)", file=sys.stderr)
    sys.exit(1)


def _fail(message: str) -> None:
    print(message, file=sys.stderr)
    sys.exit(1)
