"""Write the inputs of line-ends.mlir: the same model with a hostile character in a comment
before an error, with lone-CR and CRLF line ends, and with a byte that is not UTF-8.

    python line_ends.py PREFIX    # writes PREFIX.ff.dnn, PREFIX.cr.mlir, ...
"""

import sys

DNN = "graph @g(b = 2) {{\n  // a note{mark}on the model\n  %x = input [b]\n  return %y\n}}\n"
MLIR = ("dnn.graph @g(b = 2) {{\n  // a note{mark}on the model\n"
        "  %x = dnn.input : !dnn.tensor<[b = 2], f32>\n"
        "  dnn.return %y : !dnn.tensor<[b = 2], f32>\n}}\n")
MARKS = {"ff": "\f", "vt": "\v", "ls": "\u2028", "ps": "\u2029", "nel": "\x85", "fs": "\x1c",
         "cr": "\r"}


def main(prefix: str) -> None:
    for name, mark in MARKS.items():
        for suffix, text in (("dnn", DNN), ("mlir", MLIR)):
            with open(f"{prefix}.{name}.{suffix}", "w", encoding="utf-8", newline="") as out:
                out.write(text.format(mark=mark))
    for name, end in (("lone-cr", "\r"), ("crlf", "\r\n")):
        for suffix, text in (("dnn", DNN), ("mlir", MLIR)):
            with open(f"{prefix}.{name}.{suffix}", "w", encoding="utf-8", newline="") as out:
                out.write(text.format(mark=" ").replace("\n", end))
    for suffix, text in (("dnn", DNN), ("mlir", MLIR)):
        data = text.format(mark=" caf\xe9 ").encode("latin-1")
        with open(f"{prefix}.latin1.{suffix}", "wb") as out:
            out.write(data)
        with open(f"{prefix}.split-latin1.{suffix}", "wb") as out:
            out.write(b"// -----\n" + text.format(mark=" ").encode() + b"// -----\n" + data)


if __name__ == "__main__":
    main(sys.argv[1])
