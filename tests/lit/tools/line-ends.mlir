// One definition of a line everywhere: a line ends at "\n" (a "\r" before it is part of the
// line end). A form feed, vertical tab, U+2028/U+2029, NEL or a lone CR in a comment is a
// character of its line: the printed line is the one the location counts. A byte that is
// not UTF-8 is located at its line and column of the file, in .dnn, .mlir, stdin and
// --split-input-file chunks. (The inputs are written by Inputs/line_ends.py;
// tests/tools/test_line_ends.py runs every one of them in-process.)
// RUN: python %S/Inputs/line_ends.py %t
// RUN: not pase-opt %t.ff.dnn 2>&1 | filecheck %s --check-prefix=DNN --strict-whitespace
// RUN: not pase-opt %t.ls.mlir 2>&1 | filecheck %s --check-prefix=MLIR --strict-whitespace
// RUN: not pase-opt %t.nel.dnn 2>&1 | filecheck %s --check-prefix=DNN --strict-whitespace
// RUN: not pase-opt %t.crlf.mlir 2>&1 | filecheck %s --check-prefix=MLIR --strict-whitespace
// RUN: not pase-opt %t.lone-cr.dnn 2>&1 | filecheck %s --check-prefix=LONE-CR --strict-whitespace
// RUN: not pase-opt %t.latin1.dnn 2>&1 | filecheck %s --check-prefix=LATIN1-DNN --strict-whitespace
// RUN: not pase-opt -f dnn < %t.latin1.dnn 2>&1 | filecheck %s --check-prefix=LATIN1-STDIN --strict-whitespace
// RUN: not pase-opt %t.latin1.mlir 2>&1 | filecheck %s --check-prefix=LATIN1-MLIR --strict-whitespace
// RUN: not pase-opt %t.split-latin1.mlir --split-input-file 2>&1 | filecheck %s --check-prefix=SPLIT-MLIR --strict-whitespace

// DNN:          {{^.*}}.dnn:4:10: error: undefined value %y{{$}}
// DNN-NEXT:     {{^}}  return %y{{$}}
// DNN-NEXT:     {{^}}         ^^{{$}}
// DNN-NOT:      {{.}}

// MLIR:         {{^.*}}.mlir:4:14: error: use of undefined value %y{{$}}
// MLIR-NEXT:    {{^}}  dnn.return %y : !dnn.tensor<[b = 2], f32>{{$}}
// MLIR-NEXT:    {{^}}             ^^{{$}}
// MLIR-NOT:     {{.}}

/// A lone CR ends no line (as for lark, xDSL and mlir-opt): the comment runs to the end of
/// the file, which is one line, printed with each CR as a space.
// LONE-CR:      {{^.*}}.lone-cr.dnn:1:75: error: unexpected end of file; expected 'return', '}', a %value{{$}}
// LONE-CR-NEXT: {{^}}graph @g(b = 2) {   // a note on the model   %x = input [b]   return %y }{{$}}
// LONE-CR-NEXT: {{^}}                                                                          ^{{$}}
// LONE-CR-NOT:  {{.}}

// LATIN1-DNN:   {{^.*}}.latin1.dnn:2:16: error: the input is not UTF-8 text (invalid continuation byte at byte 33){{$}}
// LATIN1-DNN-NEXT: {{^}}  // a note caf{{.}} on the model{{$}}
// LATIN1-DNN-NEXT: {{^}}               ^{{$}}
// LATIN1-DNN-NOT: {{.}}

// LATIN1-STDIN: {{^}}stdin:2:16: error: the input is not UTF-8 text (invalid continuation byte at byte 33){{$}}
// LATIN1-STDIN-NEXT: {{^}}  // a note caf{{.}} on the model{{$}}

// LATIN1-MLIR:  {{^.*}}.latin1.mlir:2:16: error: the input is not UTF-8 text (invalid continuation byte at byte 37){{$}}
// LATIN1-MLIR-NEXT: {{^}}  // a note caf{{.}} on the model{{$}}
// LATIN1-MLIR-NEXT: {{^}}               ^{{$}}
// LATIN1-MLIR-NOT: {{.}}

/// The line and byte of the file, not of its chunk.
// SPLIT-MLIR:   {{^.*}}.split-latin1.mlir:9:16: error: the input is not UTF-8 text (invalid continuation byte at byte 193){{$}}
