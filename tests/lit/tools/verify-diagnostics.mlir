// A verifier error is `file:line:col: error: 'op' op message` with the source line and a
// caret. `--verify-diagnostics` prints it on stdout and exits 0; without the flag it
// goes to stderr with exit status 1.
// RUN: pase-opt %s --verify-diagnostics | filecheck %s --strict-whitespace
// RUN: not pase-opt %s 2>&1 | filecheck %s --strict-whitespace
// RUN: pase-opt %s --disable-verify | filecheck %s --check-prefix=UNVERIFIED

dnn.graph @g(b = 4, d = 8) {
  %x = dnn.input : !dnn.tensor<[b = 4, d = 8], f32>
  %y = dnn.softmax %x over [q] : (!dnn.tensor<[b = 4, d = 8], f32>) -> !dnn.tensor<[b = 4, d = 8], f32>
  dnn.return %y : !dnn.tensor<[b = 4, d = 8], f32>
}

// CHECK:      {{^.*}}verify-diagnostics.mlir:10:3: error: 'dnn.softmax' op softmax over 'q', which is not a dimension of [b, d]{{$}}
// CHECK-NEXT: {{^}}  %y = dnn.softmax %x over [q] : (!dnn.tensor<[b = 4, d = 8], f32>) -> !dnn.tensor<[b = 4, d = 8], f32>{{$}}
// CHECK-NEXT: {{^}}  ^{{$}}
// CHECK-NOT:  {{.}}

// UNVERIFIED: %y = dnn.softmax %x over [q]
