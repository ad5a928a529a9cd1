// RUN: pase-opt %s --split-input-file --verify-diagnostics | filecheck %s

/// clip min above max

dnn.graph @g(b = 2, d = 3) {
  %x = dnn.input : !dnn.tensor<[b = 2, d = 3], f32>
  %y = dnn.clip %x min 6.0 max 0.0 : (!dnn.tensor<[b = 2, d = 3], f32>) -> !dnn.tensor<[b = 2, d = 3], f32>
  dnn.return %y : !dnn.tensor<[b = 2, d = 3], f32>
}

// CHECK: {{.*}}dnn-exported-invalid.mlir:7:3: error: 'dnn.clip' op clip min 6.0 must be at most its max 0.0
