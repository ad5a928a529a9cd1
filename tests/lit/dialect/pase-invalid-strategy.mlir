// RUN: pase-opt %s --split-input-file --parsing-diagnostics | filecheck %s

// #pase.strategy's own invariants, reported at the offending value.

/// devices is at least 1

dnn.graph @g(b = 4) attributes {pase.strategy = #pase.strategy<devices = 0, machine = "pase-default", total = 1.0, compute = 1.0, communication = 0.0, redistribution = 0.0, data_parallel = 1.0>} {
  %x = dnn.input : !dnn.tensor<[b = 4], f32>
  dnn.return %x : !dnn.tensor<[b = 4], f32>
}

// CHECK: {{.*}}pase-invalid-strategy.mlir:7:74
// CHECK: #pase.strategy devices must be between 1 and 8,192, got 0

// -----

/// devices is at most 8,192

dnn.graph @g(b = 4) attributes {pase.strategy = #pase.strategy<devices = 8193, machine = "pase-default", total = 1.0, compute = 1.0, communication = 0.0, redistribution = 0.0, data_parallel = 1.0>} {
  %x = dnn.input : !dnn.tensor<[b = 4], f32>
  dnn.return %x : !dnn.tensor<[b = 4], f32>
}

// CHECK: {{.*}}pase-invalid-strategy.mlir:19:74
// CHECK: #pase.strategy devices must be between 1 and 8,192, got 8,193

// -----

/// a 64-bit devices value is no exception

dnn.graph @g(b = 4) attributes {pase.strategy = #pase.strategy<devices = 9223372036854775808, machine = "pase-default", total = 1.0, compute = 1.0, communication = 0.0, redistribution = 0.0, data_parallel = 1.0>} {
  %x = dnn.input : !dnn.tensor<[b = 4], f32>
  dnn.return %x : !dnn.tensor<[b = 4], f32>
}

// CHECK: {{.*}}pase-invalid-strategy.mlir:31:74
// CHECK: #pase.strategy devices must be between 1 and 8,192, got 9,223,372,036,854,775,808

// -----

/// a cost is not negative

dnn.graph @g(b = 4) attributes {pase.strategy = #pase.strategy<devices = 4, machine = "m", total = -1.0, compute = 1.0, communication = 0.0, redistribution = 0.0, data_parallel = 1.0>} {
  %x = dnn.input : !dnn.tensor<[b = 4], f32>
  dnn.return %x : !dnn.tensor<[b = 4], f32>
}

// CHECK: {{.*}}pase-invalid-strategy.mlir:43:100
// CHECK: #pase.strategy total is a cost in seconds, finite and at least 0, got -1.0

// -----

/// a cost is finite

dnn.graph @g(b = 4) attributes {pase.strategy = #pase.strategy<devices = 4, machine = "m", total = 1.0, compute = 1.0, communication = 0.0, redistribution = 0.0, data_parallel = 1.0e999>} {
  %x = dnn.input : !dnn.tensor<[b = 4], f32>
  dnn.return %x : !dnn.tensor<[b = 4], f32>
}

// CHECK: {{.*}}pase-invalid-strategy.mlir:55:179
// CHECK: #pase.strategy data_parallel is a cost in seconds, finite and at least 0, got inf
