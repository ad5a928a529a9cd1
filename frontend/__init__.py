"""Frontends: source languages into the `dnn` dialect, each file one xDSL `Frontend`.

    >>> from pase.frontend import parse_file
    >>> module = parse_file("models/mlp.dnn")   # a verified builtin.module

The names below load `pase.frontend.dnn` (and its parser) on first use, so that reading
an `.onnx` model (`pase.frontend.onnx`) does not load the `.dnn` parser.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pase.frontend.dnn import DnnFrontend, parse_file, parse_text

__all__ = ["DnnFrontend", "parse_file", "parse_text"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from pase.frontend import dnn

        return getattr(dnn, name)
    raise AttributeError(f"module 'pase.frontend' has no attribute '{name}'")
