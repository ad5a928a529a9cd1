// RUN: pase-opt %s --split-input-file --verify-diagnostics | filecheck %s

/// dnn.vjp: one result per operand in wrt

dnn.graph @g(b = 4, d = 8) {
  %x = dnn.param : !dnn.tensor<[b = 4, d = 8], f32>
  %y = dnn.relu %x : (!dnn.tensor<[b = 4, d = 8], f32>) -> !dnn.tensor<[b = 4, d = 8], f32>
  %dx, %dy = dnn.vjp "dnn.relu" [0] (%x) -> %y grad %y : (!dnn.tensor<[b = 4, d = 8], f32>), !dnn.tensor<[b = 4, d = 8], f32> -> (!dnn.tensor<[b = 4, d = 8], f32>, !dnn.tensor<[b = 4, d = 8], f32>)
  dnn.return %dx : !dnn.tensor<[b = 4, d = 8], f32>
}

// CHECK: {{.*}}dnn-vjp-invalid.mlir:8:3: error: 'dnn.vjp' op dnn.vjp has 2 results for 1 operands in wrt

// -----

/// dnn.vjp: wrt indexes the forward operands

dnn.graph @g(b = 4, d = 8, h = 2) {
  %x = dnn.input : !dnn.tensor<[b = 4, d = 8], f32>
  %w = dnn.param : !dnn.tensor<[d = 8, h = 2], f32>
  %y = dnn.einsum %x, %w : (!dnn.tensor<[b = 4, d = 8], f32>, !dnn.tensor<[d = 8, h = 2], f32>) -> !dnn.tensor<[b = 4, h = 2], f32>
  %dw = dnn.vjp "dnn.einsum" [2] (%x, %w) -> %y grad %y : (!dnn.tensor<[b = 4, d = 8], f32>, !dnn.tensor<[d = 8, h = 2], f32>), !dnn.tensor<[b = 4, h = 2], f32> -> (!dnn.tensor<[d = 8, h = 2], f32>)
  dnn.return %dw : !dnn.tensor<[d = 8, h = 2], f32>
}

// CHECK: {{.*}}dnn-vjp-invalid.mlir:22:3: error: 'dnn.vjp' op dnn.vjp wrt index 2 is not a forward operand

// -----

/// dnn.vjp: a gradient has its operand's type

dnn.graph @g(b = 4, d = 8, h = 2) {
  %x = dnn.input : !dnn.tensor<[b = 4, d = 8], f32>
  %w = dnn.param : !dnn.tensor<[d = 8, h = 2], f32>
  %y = dnn.einsum %x, %w : (!dnn.tensor<[b = 4, d = 8], f32>, !dnn.tensor<[d = 8, h = 2], f32>) -> !dnn.tensor<[b = 4, h = 2], f32>
  %dw = dnn.vjp "dnn.einsum" [1] (%x, %w) -> %y grad %y : (!dnn.tensor<[b = 4, d = 8], f32>, !dnn.tensor<[d = 8, h = 2], f32>), !dnn.tensor<[b = 4, h = 2], f32> -> (!dnn.tensor<[b = 4, d = 8], f32>)
  dnn.return %dw : !dnn.tensor<[b = 4, d = 8], f32>
}

// CHECK: {{.*}}dnn-vjp-invalid.mlir:36:3: error: 'dnn.vjp' op the gradient of operand 1 must have its type !dnn.tensor<[d = 8, h = 2], f32>

// -----

/// dnn.vjp: the incoming gradient has the forward result's type (the custom form
/// resolves it with that type, so only the generic form can say otherwise)

dnn.graph @g(b = 4, d = 8) {
  %x = dnn.param : !dnn.tensor<[b = 4, d = 8], f32>
  %y = dnn.relu %x : (!dnn.tensor<[b = 4, d = 8], f32>) -> !dnn.tensor<[b = 4, d = 8], f32>
  %dy = dnn.input : !dnn.tensor<[b = 4, d = 8], f64>
  %dx = "dnn.vjp"(%x, %y, %dy) <{forward = "dnn.relu", wrt = [#builtin.int<0>], operandSegmentSizes = array<i32: 1, 1, 1>}> : (!dnn.tensor<[b = 4, d = 8], f32>, !dnn.tensor<[b = 4, d = 8], f32>, !dnn.tensor<[b = 4, d = 8], f64>) -> !dnn.tensor<[b = 4, d = 8], f32>
  dnn.return %dx : !dnn.tensor<[b = 4, d = 8], f32>
}

// CHECK: {{.*}}dnn-vjp-invalid.mlir:51:3: error: 'dnn.vjp' op the incoming gradient must have the forward result's type

// -----

/// dnn.vjp: only a scalar loss may leave out `grad`

dnn.graph @g(b = 4, d = 8) {
  %x = dnn.param : !dnn.tensor<[b = 4, d = 8], f32>
  %y = dnn.relu %x : (!dnn.tensor<[b = 4, d = 8], f32>) -> !dnn.tensor<[b = 4, d = 8], f32>
  %dx = dnn.vjp "dnn.relu" [0] (%x) -> %y : (!dnn.tensor<[b = 4, d = 8], f32>), !dnn.tensor<[b = 4, d = 8], f32> -> (!dnn.tensor<[b = 4, d = 8], f32>)
  dnn.return %dx : !dnn.tensor<[b = 4, d = 8], f32>
}

// CHECK: {{.*}}dnn-vjp-invalid.mlir:64:3: error: 'dnn.vjp' op only a scalar loss may leave out its incoming gradient

// -----

/// dnn.vjp: the forward layer's shape rule holds (conv2d's output size from stride and padding)

dnn.graph @g(b = 2, ci = 3, co = 4, h = 8, w = 8, r = 3, s = 3, ho = 4, wo = 4) {
  %x = dnn.input : !dnn.tensor<[b = 2, ci = 3, h = 8, w = 8], f32>
  %f = dnn.param : !dnn.tensor<[co = 4, ci = 3, r = 3, s = 3], f32>
  %y = dnn.input : !dnn.tensor<[b = 2, co = 4, ho = 4, wo = 4], f32>
  %df = dnn.vjp "dnn.conv2d" [1] (%x, %f) -> %y grad %y stride 1 padding 1 : (!dnn.tensor<[b = 2, ci = 3, h = 8, w = 8], f32>, !dnn.tensor<[co = 4, ci = 3, r = 3, s = 3], f32>), !dnn.tensor<[b = 2, co = 4, ho = 4, wo = 4], f32> -> (!dnn.tensor<[co = 4, ci = 3, r = 3, s = 3], f32>)
  dnn.return %df : !dnn.tensor<[co = 4, ci = 3, r = 3, s = 3], f32>
}

// CHECK: {{.*}}dnn-vjp-invalid.mlir:78:3: error: 'dnn.vjp' op conv2d output dimension 'ho' must be 8 (input 8, window 3, stride 1, padding 1), but it is 4

// -----

/// dnn.vjp: the forward layer's result type is the inferred one

dnn.graph @g(b = 4, d = 8) {
  %x = dnn.param : !dnn.tensor<[b = 4, d = 8], f32>
  %y = dnn.input : !dnn.tensor<[b = 4], f32>
  %dx = dnn.vjp "dnn.relu" [0] (%x) -> %y grad %y : (!dnn.tensor<[b = 4, d = 8], f32>), !dnn.tensor<[b = 4], f32> -> (!dnn.tensor<[b = 4, d = 8], f32>)
  dnn.return %dx : !dnn.tensor<[b = 4, d = 8], f32>
}

// CHECK: {{.*}}dnn-vjp-invalid.mlir:91:3: error: 'dnn.vjp' op result type !dnn.tensor<[b = 4], f32> does not match the inferred !dnn.tensor<[b = 4, d = 8], f32>

// -----

/// dnn.vjp: the forward op is a dnn layer (the custom form rejects it while parsing)

dnn.graph @g(b = 4, d = 8) {
  %x = dnn.param : !dnn.tensor<[b = 4, d = 8], f32>
  %dx = "dnn.vjp"(%x, %x, %x) <{forward = "dnn.sgd", wrt = [#builtin.int<0>], operandSegmentSizes = array<i32: 1, 1, 1>}> : (!dnn.tensor<[b = 4, d = 8], f32>, !dnn.tensor<[b = 4, d = 8], f32>, !dnn.tensor<[b = 4, d = 8], f32>) -> !dnn.tensor<[b = 4, d = 8], f32>
  dnn.return %dx : !dnn.tensor<[b = 4, d = 8], f32>
}

// CHECK: {{.*}}dnn-vjp-invalid.mlir:103:3: error: 'dnn.vjp' op unknown layer op 'dnn.sgd'

// -----

/// dnn.sgd: parameter, gradient and result have one type

dnn.graph @g(d = 8, h = 2) {
  %w = dnn.param : !dnn.tensor<[d = 8, h = 2], f32>
  %dw = dnn.input : !dnn.tensor<[d = 8, h = 2], f64>
  %w_next = dnn.sgd %w, %dw lr 1.000000e-02 : f64 : (!dnn.tensor<[d = 8, h = 2], f32>, !dnn.tensor<[d = 8, h = 2], f64>) -> !dnn.tensor<[d = 8, h = 2], f32>
  dnn.return %w_next : !dnn.tensor<[d = 8, h = 2], f32>
}

// CHECK: {{.*}}dnn-vjp-invalid.mlir:116:3: error: 'dnn.sgd' op dnn.sgd needs the parameter, its gradient and the result to have one type

// -----

/// dnn.sgd: the result has the parameter's type

dnn.graph @g(d = 8, h = 2) {
  %w = dnn.param : !dnn.tensor<[d = 8, h = 2], f32>
  %w_next = dnn.sgd %w, %w lr 1.000000e-02 : f64 : (!dnn.tensor<[d = 8, h = 2], f32>, !dnn.tensor<[d = 8, h = 2], f32>) -> !dnn.tensor<[h = 2, d = 8], f32>
  dnn.return %w_next : !dnn.tensor<[h = 2, d = 8], f32>
}

// CHECK: {{.*}}dnn-vjp-invalid.mlir:128:3: error: 'dnn.sgd' op dnn.sgd needs the parameter, its gradient and the result to have one type
