"""The `.dnn` frontend: lark grammar, diagnostics, and lowering into the `dnn` dialect.

    >>> from pase.frontend import parse_file
    >>> module = parse_file("models/mlp.dnn")   # a verified builtin.module
"""

from pase.core.diagnostics import Diagnostic
from pase.frontend.lower import parse_file, parse_text

__all__ = ["Diagnostic", "parse_file", "parse_text"]
