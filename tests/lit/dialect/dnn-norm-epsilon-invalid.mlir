// RUN: pase-opt %s --split-input-file --verify-diagnostics | filecheck %s

/// a norm's epsilon is a positive finite float

dnn.graph @g(b = 2, d = 4) {
  %x = dnn.input : !dnn.tensor<[b = 2, d = 4], f32>
  %y = dnn.layernorm %x over [d] epsilon 0.0 : (!dnn.tensor<[b = 2, d = 4], f32>) -> !dnn.tensor<[b = 2, d = 4], f32>
  dnn.return %y : !dnn.tensor<[b = 2, d = 4], f32>
}

// CHECK: {{.*}}dnn-norm-epsilon-invalid.mlir:7:3: error: 'dnn.layernorm' op layernorm epsilon must be a positive finite float, got 0.0

// -----

dnn.graph @g(b = 2, d = 4) {
  %x = dnn.input : !dnn.tensor<[b = 2, d = 4], f32>
  %y = dnn.rmsnorm %x over [d] epsilon -1.0e-06 : (!dnn.tensor<[b = 2, d = 4], f32>) -> !dnn.tensor<[b = 2, d = 4], f32>
  dnn.return %y : !dnn.tensor<[b = 2, d = 4], f32>
}

// CHECK: {{.*}}dnn-norm-epsilon-invalid.mlir:17:3: error: 'dnn.rmsnorm' op rmsnorm epsilon must be a positive finite float, got -1e-06

// -----

dnn.graph @g(b = 2, d = 4) {
  %x = dnn.input : !dnn.tensor<[b = 2, d = 4], f32>
  %y = "dnn.batchnorm"(%x) <{over = ["b"], epsilon = 0x7FF0000000000000 : f64}> : (!dnn.tensor<[b = 2, d = 4], f32>) -> !dnn.tensor<[b = 2, d = 4], f32>
  dnn.return %y : !dnn.tensor<[b = 2, d = 4], f32>
}

// CHECK: {{.*}}dnn-norm-epsilon-invalid.mlir:27:3: error: 'dnn.batchnorm' op batchnorm epsilon must be a positive finite float, got inf
