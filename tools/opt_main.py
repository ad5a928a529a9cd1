"""`PaseOptMain`: xDSL's `xDSLOptMain` with pase's universe and located diagnostics.

    PaseOptMain(["models/mlp.dnn", "-p", "pase-search{devices=8}"]).run()

Dialects, passes and the `.dnn` frontend come from `pase.universe.PASE`, which xDSL's
multiverse (the registry plain `xdsl-opt` reads too) loads through pase's `xdsl.universe`
entry point. What xDSL's driver does not do, and this class adds:
MLIR ops get their `file:line:col` as location (so verifier and pass errors point at
the source), an undefined value is reported at its first use, `--split-input-file`
chunks count lines of the file, an option given twice is an error, the output is held
until the run succeeded, and `--help` lists pase's passes with their options.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import sys
import textwrap
from collections.abc import Callable, Iterator, Sequence
from io import BytesIO, StringIO
from typing import IO, NoReturn, cast

from xdsl.dialects.builtin import FileLineColLoc, IntAttr, ModuleOp
from xdsl.passes import ModulePass, get_pass_option_infos
from xdsl.utils.arg_spec import (
    PipelineLexer,
    SpecToken,
    SpecTokenKind,
    _parse_spec,
    parse_spec,
)
from xdsl.utils.exceptions import ArgSpecParseError
from xdsl.utils.lexer import Input, Span
from xdsl.utils.target import Target
from xdsl.xdsl_opt_main import xDSLOptMain

from pase.core import weights
from pase.core.diagnostics import (
    Diagnostic,
    shown_line,
    terminal_safe,
)
from pase.core.files import (
    BYTE_ORDER_MARK,
    decode_text,
    note_input,
    open_input,
    read_bounded,
    write_atomically,
    write_bytes_atomically,
)
from pase.core.numbers import LONGEST_INTEGER
from pase.formats.strategy_input import standard_input_taken
from pase.frontend.mlir import LocatedMlirFrontend, MlirOptions, verify_located
from pase.universe import PASE

BINARY_FRONTENDS = ("onnx",)
PASE_TARGETS = ("mlir", "dnn", "jax")
ONNX_HELP = """

.dnn sources:
  -f 'dnn{memory-gib=4}'
      memory-gib=G  the most the IR of the file's statements may take; a file past it
                    is refused before any of it is built (pase-run reads at this default)

.mlir sources:
  -f 'mlir{memory-gib=4}'
      memory-gib=G  the most the IR of the file's tokens may take; a file past it is
                    refused before any of it is built (pase-run reads at this default)

ONNX models (pase-opt model.onnx, or -f onnx; needs pip install 'pase[onnx]'):
  -f 'onnx{batch=N loss=cross-entropy memory-gib=4}'
      batch=N       the batch size: the size of the inputs' symbolic batch axis (axis
                    0), or a new size for a static one where the graph does not fix it
      loss=KIND     the training loss of a model whose output is not a scalar:
                    cross-entropy (default; over the output's last axis, against a new
                    'labels' input) or mean
      memory-gib=G  the most the model's file and external data (.onnx.data) may
                    take together; a model past it is refused before it is read
  -t dnn prints the imported graph as .dnn source: pase-opt model.onnx -t dnn -o model.dnn"""


class _Output(StringIO):
    """Holds the output until the run succeeded (xdsl-opt closes it when done)."""

    def close(self) -> None:
        pass


class PaseOptMain(xDSLOptMain):
    version_format = "pase-opt (xdsl {xdsl_version})"

    def __init__(self, args: Sequence[str] | None = None):
        super().__init__(description="pase optimizer driver: parallelization strategies "
                         "for DNN training, on the dnn dialect", args=args)

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser) -> None:
        super().register_all_arguments(arg_parser)
        arg_parser.formatter_class = argparse.RawDescriptionHelpFormatter
        parse_args = arg_parser.parse_args

        def parse_checked(*args, **kwargs):  # type: ignore[no-untyped-def]
            # -f and -t checked before xDSL parses them (as a pass pipeline, in its error)
            parsed = parse_args(*args, **kwargs)
            if parsed.input_file == "-":  # the standard input, as for mlir-opt
                parsed.input_file = None
            if parsed.output_file == "":  # (xDSL would print to the standard output)
                _usage_error("-o '': an empty file name; give -o FILE, or -o - for the "
                             "standard output")
            check_frontend_options(parsed.frontend or "")
            check_frontend_options(parsed.target, "-t")
            return parsed

        arg_parser.parse_args = parse_checked  # type: ignore[method-assign]
        arg_parser.error = _usage_error  # type: ignore[method-assign]
        for action in arg_parser._actions:
            if action.dest == "passes":
                action.help = ("comma-separated pass pipeline, e.g. "
                               "'pase-annotate-configs{devices=8}'; the pase passes are "
                               "listed below, and xDSL's own (canonicalize, cse, ...) work too")
        original_format_help = arg_parser.format_help

        def format_help() -> str:  # imports every pass: only when --help asks for them
            arg_parser.epilog = "pase passes:\n" + "\n".join(
                pass_summary(factory()) for factory in PASE.all_passes.values()) + ONNX_HELP
            return original_format_help()

        arg_parser.format_help = format_help  # type: ignore[method-assign]

    def get_input_stream(self) -> tuple[IO[bytes], str]:
        """The input, checked to be UTF-8 text before `--split-input-file` splits it, so that
        a byte that is not is located in the file (`decode_text`), not in its chunk."""
        check_frontend_options(self.args.frontend or "")
        self.check_target_options()
        self.mlir_options()  # (a bad one refused before the input is opened)
        if self.args.input_file is None:
            stream, file_extension = super().get_input_stream()
            standard_input_taken("the model")  # (so a strategy "-" cannot be read there)
        else:  # (a named FIFO without a writer: xDSL's open waits for ever)
            stream = open_input(self.args.input_file)
            file_extension = os.path.splitext(self.args.input_file)[1].replace(".", "")
        if self.args.input_file:
            note_input(self.args.input_file)  # no output of the run may replace it
        if not (self.args.frontend or file_extension):  # parse_spec("") is a pipeline error
            stream.close()
            _usage_error(f"cannot tell the format of {self.get_input_name()} without an "
                         "extension; name it .dnn, .mlir or .onnx, or give -f dnn (or mlir, "
                         "onnx)")
        if self.args.frontend:  # -f names the format whatever the file's name ends with
            file_extension = parse_spec(self.args.frontend).name
        if parse_spec(self.args.frontend or file_extension).name in BINARY_FRONTENDS:
            return stream, file_extension
        with stream:
            data = read_bounded(stream, self.get_input_name())
        decode_text(data, self.get_input_name())
        return BytesIO(data.removeprefix(BYTE_ORDER_MARK.encode())), file_extension

    def mlir_options(self) -> MlirOptions:
        """`-f 'mlir{memory-gib=G}'`'s options (the defaults without -f or for another -f)."""
        spec = parse_spec(self.args.frontend) if self.args.frontend else None
        return MlirOptions.from_spec(spec) if spec and spec.name == "mlir" else MlirOptions()

    def check_target_options(self) -> None:
        """Read a pase target's options (`-t 'jax{devices=N}'`) before the run, so that a bad
        one is refused before any work (xDSL reads them when it prints the result)."""
        check_frontend_options(self.args.target, "-t")
        spec = parse_spec(self.args.target)
        if spec.name not in PASE_TARGETS:
            return
        target = cast(Callable[[], type[Target]], self.available_targets[spec.name])()
        try:
            target.from_spec(spec)
        except ValueError as error:  # (xDSL's mlir target does not name itself)
            message = str(error)
            raise ValueError(message if message.startswith("-t ") else
                             f"-t {spec.name}: {message}") from None

    def parse_chunk(self, chunk: IO[bytes], file_extension: str,
                    start_offset: int = 0) -> ModuleOp | None:
        """Parse one chunk; `start_offset` is the number of file lines before it.

        xDSL passes `start_offset` to this hook only, not to a `Frontend`, and shifts
        only the lines of MLIR parse errors. So MLIR goes through `LocatedMlirFrontend` (which
        also gives ops their locations), and for any other frontend (`.dnn`) the
        locations and the diagnostic are moved to file lines here."""
        name = self.get_input_name()
        frontend = parse_spec(self.args.frontend or file_extension).name
        if frontend in BINARY_FRONTENDS:  # bytes, not text: no chunks, no lines
            return super().parse_chunk(chunk, file_extension)
        text = chunk.read().decode("utf-8")  # valid: `get_input_stream` checked the whole input
        if frontend == "mlir":
            return LocatedMlirFrontend(self.args.no_implicit_module, start_offset,
                                       self.mlir_options().memory_gib).parse(
                self.ctx, BytesIO(text.encode()), name)
        if self.args.split_input_file and all(
                not line.strip() or line.lstrip().startswith("//")
                for line in text.split("\n")):
            return ModuleOp([])  # an empty chunk (after a trailing marker), as for MLIR
        try:
            module = super().parse_chunk(BytesIO(text.encode()), file_extension)
        except Diagnostic as error:
            if self.args.parsing_diagnostics:  # as xdsl-opt does for MLIR parse errors
                print(at_file_line(error, start_offset))
                return None
            raise at_file_line(error, start_offset) from None
        if start_offset and module is not None:
            for op in module.walk():
                if isinstance(op.location, FileLineColLoc):
                    op.location = FileLineColLoc(
                        op.location.filename, IntAttr(op.location.line.data + start_offset),
                        op.location.column)
        return module

    def prepare_output(self) -> IO[str]:
        self.output = _Output()
        return self.output

    def setup_pipeline(self) -> None:
        check_pass_options(self.args.passes)
        super().setup_pipeline()
        verify = not self.args.disable_verify
        callback = self.pipeline.callback
        # xDSL's callback verifies too; `located_callback` verifies once, then calls it.
        self.args.disable_verify = True

        def located_callback(previous, module, next_pass) -> None:  # type: ignore[no-untyped-def]
            if verify:
                verify_once(module)
            if callback is not None:
                callback(previous, module, next_pass)

        object.__setattr__(self.pipeline, "callback", located_callback)

    def write_output(self) -> None:
        """Write the held output to `-o FILE` (a regular file atomically, a stream into) or
        the standard output: inside `deferred_writes()`, when the run succeeded. A `-t jax`
        program of a model with weights (ONNX) gets them beside it: `FILE.weights.npz`."""
        values = getattr(self, "model_weights", None)
        if values is None or parse_spec(self.args.target).name != "jax":
            write_atomically(self.args.output_file or "-", self.output.getvalue())
        else:
            output = self.args.output_file
            if not output or output == "-" or (os.path.exists(output) and not (
                    os.path.isfile(output) or os.path.isdir(output))):  # /dev/null, a FIFO
                _usage_error("-t jax of a model with weights writes them beside the program: "
                             "give -o FILE.py (a file, not a stream)")
            write_atomically(output, self.output.getvalue())
            stem = os.path.splitext(self.args.output_file)[0]
            write_bytes_atomically(stem + weights.WEIGHTS_SUFFIX, weights.npz_bytes(values))

    def output_resulting_program(self, prog: ModuleOp) -> str:
        """The target's text; the model's weights kept for `write_output`. xDSL's own
        targets (x86-asm, llvm, wgsl, ...) print only their dialects: given a `dnn` or
        `dist` op they would fail inside xDSL or print nothing, so that is refused here."""
        target = parse_spec(self.args.target).name
        if target not in PASE_TARGETS and target in self.available_targets:
            pase_op = next((op for op in prog.walk()
                            if op.name.startswith(("dnn.", "dist."))), None)
            if pase_op is not None:
                _usage_error(f"-t {target} prints xDSL's own dialects, not {pase_op.name}; "
                             f"pase's targets are {', '.join(PASE_TARGETS)}")
        self.model_weights = weights.initial_values(prog)
        return super().output_resulting_program(prog)


def at_file_line(error: Diagnostic, start_offset: int) -> Diagnostic:
    """`error`, located in a `--split-input-file` chunk, moved to its line of the file (the
    line it shows is the chunk's own)."""
    if error.line:
        if error.source_line is None and error.source is not None:
            error.source_line = shown_line(error.source, error.line)
        error.line += start_offset
    return error


def pass_summary(pass_class: type[ModulePass]) -> str:
    """`--help`'s entry for a pass, from its fields and its docstring's first line: the
    pass with its options' defaults, a spec `-p` takes as it is. An option whose default is
    None (no value: the pass decides) is not in the spec, where `-p` would read `none` as
    its value, but on a line of its own with the type it takes:

        pase-autodiff{lr=0.01}
            Append the backward pass and an SGD update to every graph.
        pase-lower-spmd
            optional: devices=<int>
            Lower every `dnn.graph` to a `dist.program` on `devices` devices.
    """
    infos = get_pass_option_infos(pass_class)
    # (xDSL shows a None default as `none`, as it shows `recompute="none"`: the field tells)
    unset = {field.name for field in dataclasses.fields(pass_class)  # type: ignore[arg-type]
             if field.default is None}
    options = " ".join(f"{info.name.replace('_', '-')}={info.default_value or chr(34) * 2}"
                       for info in infos if info.name not in unset)
    optional = " ".join(
        f"{info.name.replace('_', '-')}=<{_optional_type(info.expected_type)}>"
        for info in infos if info.name in unset)
    spec = f"{pass_class.name}{{{options}}}" if options else pass_class.name
    summary = (pass_class.__doc__ or "").strip().split("\n", 1)[0]
    return "\n".join([*textwrap.wrap(spec, 88, initial_indent="  ",
                                     subsequent_indent=" " * (len(pass_class.name) + 3),
                                     break_on_hyphens=False),
                      *([f"      optional: {optional}"] if optional else []),
                      f"      {summary}"])


def _optional_type(expected_type: str) -> str:
    """`int` of xDSL's `'int | None'`: the type an optional option's value takes."""
    return " | ".join(part for part in expected_type.strip("'").split(" | ")
                      if part != "None")


def check_pass_options(pipeline: str) -> None:
    """Raise `ArgSpecParseError` at an option given twice in one pass's `{...}` (xDSL keeps
    the last silently, so `pase-search{devices=8 devices=4}` would search 4 devices), and at
    an integer too long to convert (`LONGEST_INTEGER`; xDSL would fail unlocated), and at a
    comma that ends the pipeline (xDSL runs `pase-search{devices=4},` as if it were not
    there, where `,,` and a leading comma are errors)."""
    if not pipeline:
        return
    seen: set[str] | None = None
    previous = None
    last = None
    for token in _pipeline_tokens(pipeline):
        if token.kind is SpecTokenKind.EOF and last is not None and \
                last.kind is SpecTokenKind.COMMA:
            raise ArgSpecParseError(last, "a comma that ends the pipeline; a pass name must "
                                    "follow it (or drop the comma)")
        if token.kind is not SpecTokenKind.SPACE:
            last = token
        if token.kind is SpecTokenKind.NUMBER and "." not in token.span.text and len(
                token.span.text.lstrip("+-")) > LONGEST_INTEGER:
            raise ArgSpecParseError(token, f"an integer of {len(token.span.text):,} digits; "
                                    f"options take integers of at most {LONGEST_INTEGER} "
                                    "digits (devices at most 8,192)")
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


def _pipeline_tokens(pipeline: str) -> Iterator[SpecToken]:
    """xDSL's tokens of a pass pipeline. A character xDSL does not read in an option's
    value is its "Unknown token" error with the reason: such a value is quoted
    (`export=x.json`, `machine=/data/m.toml`; README: file paths are quoted), and a
    number starts with a digit (`factor=.5`)."""
    tokens = PipelineLexer._generator(pipeline)
    seen: list[SpecToken] = []
    while True:
        try:
            token = next(tokens)
        except StopIteration:
            return
        except ArgSpecParseError:
            raise _unread_value(pipeline, seen) from None
        seen = [*seen[-1:], token]
        yield token


def _unread_value(pipeline: str, seen: list[SpecToken]) -> ArgSpecParseError:
    """The error at a character xDSL's lexer does not read, after the `seen` tokens (the
    last two): xDSL's "Unknown token", with the reason where it is in an option's value."""
    end = seen[-1].span.end if seen else 0
    error = ArgSpecParseError(SpecToken(SpecTokenKind.IDENT, Span(
        end, end + 1, Input(pipeline, "pass-pipeline"))), "Unknown token")
    if len(seen) == 2 and seen[0].kind is SpecTokenKind.EQUALS and \
            seen[1].kind is SpecTokenKind.IDENT:
        start = seen[1].span.start  # export=x.json
    elif seen and seen[-1].kind is SpecTokenKind.EQUALS:
        start = end  # machine=/data/m.toml, factor=.5
    else:
        return error
    text = re.match(r"[^\s}]*", pipeline[start:])
    value = text.group() if text else ""
    number = re.fullmatch(r"([-+]?)(\.[0-9].*)", value)
    reason = (f"a number starts with a digit: {number[1]}0{number[2]}" if number else
              f"the value {value} holds '{pipeline[end]}': quote it, \"{value}\" (a file "
              "path is quoted)")
    return ArgSpecParseError(SpecToken(SpecTokenKind.IDENT, Span(
        start, start + max(len(value), 1), Input(pipeline, "pass-pipeline"))), reason)


def check_frontend_options(spec: str, flag: str = "-f") -> None:
    """A usage error for `-f`'s options (`-t`'s with `flag`) that do not parse (`-t
    'jax{devices=8'`: xDSL's error would speak of a pass pipeline), and for an integer of
    more than `LONGEST_INTEGER` digits in them (`-f 'onnx{batch=<45 digits>}'`), as
    `check_pass_options` refuses one in `-p`."""
    if spec:
        lexer = PipelineLexer(spec)
        try:
            _parse_spec(lexer)
        except ArgSpecParseError as error:  # "...\npass-pipeline:1:COLUMN\n...\n  REASON here"
            lines = [line.strip() for line in str(error).split("\n") if line.strip()]
            column = lines[1].rsplit(":", 1)[-1] if len(lines) > 2 else "?"
            reason = lines[-1].removesuffix(" here")
            for xdsl, pase in (("Malformed pass arguments", "malformed options"),
                               ("a comma or pass arguments", "'{' or nothing"),
                               ("argument name", "an option's name"),
                               ("pass name", "a format's name")):
                reason = reason.replace(xdsl, pase)
            _usage_error(f"{flag} '{spec}': {reason[:1].lower()}{reason[1:]} at column "
                         f"{column}")
        rest = lexer.lex()
        while rest.kind is SpecTokenKind.SPACE:
            rest = lexer.lex()
        if rest.kind is not SpecTokenKind.EOF:  # (xDSL ignores what follows: 'jax{}}')
            _usage_error(f"{flag} '{spec}': unexpected '{spec[rest.span.start:]}' after the "
                         f"options at column {rest.span.start + 1}")
    for match in re.finditer(r"(?<![\w.])[-+]?\d+(?![\w.])", spec):
        if len(match.group().lstrip("+-")) > LONGEST_INTEGER:
            _usage_error(f"{flag} '{spec[:match.start()]}...': an integer of "
                         f"{len(match.group().lstrip('+-')):,} digits; options take integers "
                         f"of at most {LONGEST_INTEGER} digits")


def verify_once(module: ModuleOp) -> None:
    """What `verify_located(module)` and then xDSL's `module.verify()` raise, in one walk of
    a valid module: the whole module's verifier passes exactly when every op's does and
    the module's structure (parent pointers, terminators) is sound."""
    try:
        module.verify()
    except Exception:
        verify_located(module)  # raises the first op's error, located
        raise  # else the structural error, as xDSL words it


def _usage_error(message: str) -> NoReturn:
    """A bad command line: one line, exit status 1 (argparse would print its usage)."""
    print(terminal_safe(f"pase-opt: error: {message} (see pase-opt --help)"), file=sys.stderr)
    sys.exit(1)
