"""How big the package's source is: lines per file and the longest functions, so drift is seen.

    .venv/bin/python benchmarks/size.py              # the 20 largest files and functions
    .venv/bin/python benchmarks/size.py --top 0      # only what is over the limits

The style guide's limits (no package source file over 600 lines, no function over 100; aim
for about 500 and 80) hold for the package's own source: every `.py` file below the checkout
except `tests/`, `benchmarks/`, `models/` and hidden or build folders. A file's lines are its
physical lines; a function's run from its `def` (decorators aside) to its last line, nested
functions and methods each counted on their own as well as inside their parent. Rows over a
limit are flagged `over`; they are always printed, whatever `--top` says. Like every
benchmark this prints and asserts nothing.
"""

from __future__ import annotations

import argparse
import ast
from dataclasses import dataclass
from pathlib import Path

from common import markdown_table, positive_int, run_main

from pase.core.usage import UsageParser

ROOT = Path(__file__).resolve().parent.parent
NOT_SOURCE = {"tests", "benchmarks", "models", "build"}
FILE_LIMIT, FILE_AIM = 600, 500
FUNCTION_LIMIT, FUNCTION_AIM = 100, 80


@dataclass(frozen=True)
class Function:
    path: str
    name: str
    """Qualified by the classes and functions it is defined in: `Partitioner.best.walk`."""
    line: int
    lines: int


def source_files(root: Path) -> list[Path]:
    """The package's `.py` files, sorted: hidden, build, test, benchmark and model folders
    aside."""
    files = []
    for path in root.rglob("*.py"):
        parts = path.relative_to(root).parts
        if not any(part.startswith(".") or part in NOT_SOURCE for part in parts[:-1]):
            files.append(path)
    return sorted(files)


def functions(tree: ast.Module, path: str) -> list[Function]:
    """Every function and method of a module, with its qualified name and length.

    >>> tree = ast.parse("class A:\\n    def f(self):\\n        def g():\\n            pass\\n")
    >>> [(f.name, f.line, f.lines) for f in functions(tree, "a.py")]
    [('A.f', 2, 3), ('A.f.g', 3, 2)]
    """
    found: list[Function] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                name = prefix + child.name
                end = child.end_lineno or child.lineno
                found.append(Function(path, name, child.lineno, end - child.lineno + 1))
                visit(child, name + ".")
            elif isinstance(child, ast.ClassDef):
                visit(child, prefix + child.name + ".")
            else:
                visit(child, prefix)

    visit(tree, "")
    return found


def _flag(lines: int, limit: int, aim: int) -> str:
    return "over" if lines > limit else "above aim" if lines > aim else ""


def main() -> None:
    parser = UsageParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--top", type=positive_int, default=20,
                        help="how many of the largest files and functions to list "
                             "(default 20); those over a limit are listed anyway")
    arguments = parser.parse_args()
    files: list[tuple[str, int]] = []
    every_function: list[Function] = []
    for path in source_files(ROOT):
        name = path.relative_to(ROOT).as_posix()
        text = path.read_text(encoding="utf-8")
        files.append((name, len(text.splitlines())))
        every_function += functions(ast.parse(text, name), name)
    files.sort(key=lambda row: (-row[1], row[0]))
    every_function.sort(key=lambda f: (-f.lines, f.path, f.line))

    total = sum(lines for _, lines in files)
    print(f"{len(files)} source files, {total} lines, {len(every_function)} functions "
          f"(tests, benchmarks and models aside)\n")
    shown_files = [row for i, row in enumerate(files)
                   if i < arguments.top or row[1] > FILE_LIMIT]
    print(f"## Files (limit {FILE_LIMIT} lines, aim {FILE_AIM})\n")
    print("\n".join(markdown_table(
        (("file", "<"), ("lines", ">"), ("", "<")),
        [[name, str(lines), _flag(lines, FILE_LIMIT, FILE_AIM)]
         for name, lines in shown_files])))
    shown_functions = [f for i, f in enumerate(every_function)
                       if i < arguments.top or f.lines > FUNCTION_LIMIT]
    print(f"\n## Functions (limit {FUNCTION_LIMIT} lines, aim {FUNCTION_AIM})\n")
    print("\n".join(markdown_table(
        (("function", "<"), ("where", "<"), ("lines", ">"), ("", "<")),
        [[f.name, f"{f.path}:{f.line}", str(f.lines),
          _flag(f.lines, FUNCTION_LIMIT, FUNCTION_AIM)] for f in shown_functions])))
    over_files = sum(lines > FILE_LIMIT for _, lines in files)
    over_functions = sum(f.lines > FUNCTION_LIMIT for f in every_function)
    print(f"\n{over_files} files over {FILE_LIMIT} lines, {over_functions} functions over "
          f"{FUNCTION_LIMIT} lines")


if __name__ == "__main__":
    run_main(main)
