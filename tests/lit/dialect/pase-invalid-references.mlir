// RUN: pase-opt %s --split-input-file --verify-diagnostics | filecheck %s
// RUN: pase-opt %s --split-input-file --verify-diagnostics -p pase-lower-spmd{devices=1} | filecheck %s

// The layers pase.layer and pase.layout_of name exist, checked at the op that names them.

/// pase.layer names a forward layer of the graph

dnn.graph @g(b = 4) {
  %w = dnn.param : !dnn.tensor<[b = 4], f32>
  %l = dnn.reduce sum %w over [b] {pase.config = #pase.config<>} : (!dnn.tensor<[b = 4], f32>) -> !dnn.tensor<[], f32>
  %dw = dnn.vjp "dnn.reduce" sum [0] (%w) -> %l over [b] {pase.layer = "nope"} : (!dnn.tensor<[b = 4], f32>), !dnn.tensor<[], f32> -> (!dnn.tensor<[b = 4], f32>)
  dnn.return %l, %dw : !dnn.tensor<[], f32>, !dnn.tensor<[b = 4], f32>
}

// CHECK: {{.*}}pase-invalid-references.mlir:11:3: error: 'dnn.vjp' op pase.layer names 'nope', which is not a forward layer of @g

// -----

/// pase.layout_of names a forward layer of the graph

dnn.graph @g(b = 4) {
  %w = dnn.param : !dnn.tensor<[b = 4], f32>
  %l = dnn.reduce sum %w over [b] {pase.config = #pase.config<>} : (!dnn.tensor<[b = 4], f32>) -> !dnn.tensor<[], f32>
  %dw = dnn.vjp "dnn.reduce" sum [0] (%w) -> %l over [b] {pase.layer = "l"} : (!dnn.tensor<[b = 4], f32>), !dnn.tensor<[], f32> -> (!dnn.tensor<[b = 4], f32>)
  %w_next = dnn.sgd %w, %dw lr 1.0e-02 : f64 {pase.layout_of = #pase.layout<"dw", operand 0>} : (!dnn.tensor<[b = 4], f32>, !dnn.tensor<[b = 4], f32>) -> !dnn.tensor<[b = 4], f32>
  dnn.return %l, %w_next : !dnn.tensor<[], f32>, !dnn.tensor<[b = 4], f32>
}

// CHECK: {{.*}}pase-invalid-references.mlir:25:3: error: 'dnn.sgd' op pase.layout_of names 'dw', which is not a forward layer of @g

// -----

/// a layout's operand is one of the layer's operands

dnn.graph @g(b = 4) {
  %w = dnn.param : !dnn.tensor<[b = 4], f32>
  %l = dnn.reduce sum %w over [b] {pase.config = #pase.config<>} : (!dnn.tensor<[b = 4], f32>) -> !dnn.tensor<[], f32>
  %dw = dnn.vjp "dnn.reduce" sum [0] (%w) -> %l over [b] {pase.layer = "l"} : (!dnn.tensor<[b = 4], f32>), !dnn.tensor<[], f32> -> (!dnn.tensor<[b = 4], f32>)
  %w_next = dnn.sgd %w, %dw lr 1.0e-02 : f64 {pase.layout_of = #pase.layout<"l", operand 9223372036854775807>} : (!dnn.tensor<[b = 4], f32>, !dnn.tensor<[b = 4], f32>) -> !dnn.tensor<[b = 4], f32>
  dnn.return %l, %w_next : !dnn.tensor<[], f32>, !dnn.tensor<[b = 4], f32>
}

// CHECK: {{.*}}pase-invalid-references.mlir:39:3: error: 'dnn.sgd' op pase.layout_of names operand 9223372036854775807 of layer 'l', which has 1 operand
