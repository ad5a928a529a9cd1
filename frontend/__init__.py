"""Frontends: source languages into the `dnn` dialect, each file one xDSL `Frontend`.

    >>> from pase.frontend import parse_file
    >>> module = parse_file("models/mlp.dnn")   # a verified builtin.module
"""

from pase.core.diagnostics import Diagnostic
from pase.frontend.dnn import DnnFrontend, parse_file, parse_text

__all__ = ["Diagnostic", "DnnFrontend", "parse_file", "parse_text"]
