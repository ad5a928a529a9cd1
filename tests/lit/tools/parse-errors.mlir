// The MLIR parser's errors, where pase-opt places them better than xDSL does.
// RUN: not pase-opt %s 2>&1 | filecheck %s --strict-whitespace
// RUN: pase-opt %S/Inputs/comments-only.mlir | filecheck %s --check-prefix=EMPTY

// An undefined value is reported at its first use, not at the end of the input.
dnn.graph @g(b = 4) {
  %x = dnn.input : !dnn.tensor<[b = 4], f32>
  %y = dnn.relu %z : (!dnn.tensor<[b = 4], f32>) -> !dnn.tensor<[b = 4], f32>
  dnn.return %y : !dnn.tensor<[b = 4], f32>
}
// CHECK:      {{^}}{{.*}}parse-errors.mlir:8:17: error: use of undefined value %z{{$}}
// CHECK-NEXT: {{^}}  %y = dnn.relu %z : (!dnn.tensor<[b = 4], f32>) -> !dnn.tensor<[b = 4], f32>{{$}}
// CHECK-NEXT: {{^}}                ^^{{$}}

// A file of comments only is an empty module, as in mlir-opt.
// EMPTY:      builtin.module {
// EMPTY-NEXT: }
