// RUN: pase-opt %s --split-input-file --verify-diagnostics | filecheck %s

/// dnn.tanh: the result has the operand's shape

dnn.graph @g(b = 2, e = 4) {
  %x = dnn.input : !dnn.tensor<[b = 2, e = 4], f32>
  %y = dnn.tanh %x : (!dnn.tensor<[b = 2, e = 4], f32>) -> !dnn.tensor<[e = 4, b = 2], f32>
  dnn.return %y : !dnn.tensor<[e = 4, b = 2], f32>
}

// CHECK: {{.*}}dnn-elementwise-invalid.mlir:7:3: error: 'dnn.tanh' op result type !dnn.tensor<[e = 4, b = 2], f32> does not match the inferred !dnn.tensor<[b = 2, e = 4], f32>

// -----

/// dnn.sigmoid: takes floating-point tensors

dnn.graph @g(b = 2, e = 4) {
  %x = dnn.input : !dnn.tensor<[b = 2, e = 4], i32>
  %y = dnn.sigmoid %x : (!dnn.tensor<[b = 2, e = 4], i32>) -> !dnn.tensor<[b = 2, e = 4], i32>
  dnn.return %y : !dnn.tensor<[b = 2, e = 4], i32>
}

// CHECK: {{.*}}dnn-elementwise-invalid.mlir:19:3: error: 'dnn.sigmoid' op sigmoid takes floating-point tensors, got i32

// -----

/// dnn.exp: one operand

dnn.graph @g(b = 2, e = 4) {
  %x = dnn.input : !dnn.tensor<[b = 2, e = 4], f32>
  %y = dnn.exp %x, %x : (!dnn.tensor<[b = 2, e = 4], f32>, !dnn.tensor<[b = 2, e = 4], f32>) -> !dnn.tensor<[b = 2, e = 4], f32>
  dnn.return %y : !dnn.tensor<[b = 2, e = 4], f32>
}

// CHECK: {{.*}}dnn-elementwise-invalid.mlir:31:3: error: 'dnn.exp' op exp takes 1 operand, got 2

// -----

/// dnn.neg: keeps the element type

dnn.graph @g(b = 2, e = 4) {
  %x = dnn.input : !dnn.tensor<[b = 2, e = 4], f32>
  %y = dnn.neg %x : (!dnn.tensor<[b = 2, e = 4], f32>) -> !dnn.tensor<[b = 2, e = 4], f64>
  dnn.return %y : !dnn.tensor<[b = 2, e = 4], f64>
}

// CHECK: {{.*}}dnn-elementwise-invalid.mlir:43:3: error: 'dnn.neg' op result type !dnn.tensor<[b = 2, e = 4], f64> does not match the inferred !dnn.tensor<[b = 2, e = 4], f32>

// -----

/// dnn.pow: the result has the operand's shape

dnn.graph @g(b = 2, e = 4) {
  %x = dnn.input : !dnn.tensor<[b = 2, e = 4], f32>
  %y = dnn.pow %x exponent 2.0 : (!dnn.tensor<[b = 2, e = 4], f32>) -> !dnn.tensor<[b = 2], f32>
  dnn.return %y : !dnn.tensor<[b = 2], f32>
}

// CHECK: {{.*}}dnn-elementwise-invalid.mlir:55:3: error: 'dnn.pow' op result type !dnn.tensor<[b = 2], f32> does not match the inferred !dnn.tensor<[b = 2, e = 4], f32>

// -----

/// dnn.mul: broadcasting by name, so one operand's dims are all dims of the other

dnn.graph @g(b = 2, e = 4, c = 3) {
  %x = dnn.input : !dnn.tensor<[b = 2, e = 4], f32>
  %z = dnn.input : !dnn.tensor<[c = 3], f32>
  %y = dnn.mul %x, %z : (!dnn.tensor<[b = 2, e = 4], f32>, !dnn.tensor<[c = 3], f32>) -> !dnn.tensor<[b = 2, e = 4], f32>
  dnn.return %y : !dnn.tensor<[b = 2, e = 4], f32>
}

// CHECK: {{.*}}dnn-elementwise-invalid.mlir:68:3: error: 'dnn.mul' op mul broadcasts by name, so the dims of one operand must all be dims of the other; [b, e] has [b, e] and [c] has [c]

// -----

/// dnn.mul: two operands

dnn.graph @g(b = 2, e = 4) {
  %x = dnn.input : !dnn.tensor<[b = 2, e = 4], f32>
  %y = dnn.mul %x : (!dnn.tensor<[b = 2, e = 4], f32>) -> !dnn.tensor<[b = 2, e = 4], f32>
  dnn.return %y : !dnn.tensor<[b = 2, e = 4], f32>
}

// CHECK: {{.*}}dnn-elementwise-invalid.mlir:80:3: error: 'dnn.mul' op mul takes 2 operands, got 1

// -----

/// dnn.broadcast: the result keeps the operand's dims in their order

dnn.graph @g(b = 2, d = 3, e = 4) {
  %x = dnn.input : !dnn.tensor<[d = 3, e = 4], f32>
  %y = dnn.broadcast %x : (!dnn.tensor<[d = 3, e = 4], f32>) -> !dnn.tensor<[b = 2, e = 4, d = 3], f32>
  dnn.return %y : !dnn.tensor<[b = 2, e = 4, d = 3], f32>
}

// CHECK: {{.*}}dnn-elementwise-invalid.mlir:92:3: error: 'dnn.broadcast' op broadcast result [b, e, d] must hold every dimension of [d, e] in its order

// -----

/// dnn.broadcast: adds a dim

dnn.graph @g(b = 2, e = 4) {
  %x = dnn.input : !dnn.tensor<[b = 2, e = 4], f32>
  %y = dnn.broadcast %x : (!dnn.tensor<[b = 2, e = 4], f32>) -> !dnn.tensor<[b = 2, e = 4], f32>
  dnn.return %y : !dnn.tensor<[b = 2, e = 4], f32>
}

// CHECK: {{.*}}dnn-elementwise-invalid.mlir:104:3: error: 'dnn.broadcast' op broadcast result [b, e] adds no dimension to [b, e]

// -----

/// dnn.broadcast: takes floating-point tensors

dnn.graph @g(b = 2, e = 4) {
  %x = dnn.input : !dnn.tensor<[e = 4], i64>
  %y = dnn.broadcast %x : (!dnn.tensor<[e = 4], i64>) -> !dnn.tensor<[b = 2, e = 4], i64>
  dnn.return %y : !dnn.tensor<[b = 2, e = 4], i64>
}

// CHECK: {{.*}}dnn-elementwise-invalid.mlir:116:3: error: 'dnn.broadcast' op broadcast takes floating-point tensors, got i64
