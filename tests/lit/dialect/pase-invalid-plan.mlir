// RUN: pase-opt %s --split-input-file --verify-diagnostics | filecheck %s

// The training step and the plan's placement are checked by the verifier, at the op that
// breaks them, before any pass (pase-autodiff, pase-lower-spmd, -t jax, pase-run) reads them.

/// pase.training names known options

dnn.graph @g(b = 4) attributes {pase.training = {optimizer = "lion", precision = "fp32", recompute = "none", zero = "0"}} {
  %w = dnn.param : !dnn.tensor<[b = 4], f32>
  %l = dnn.reduce sum %w over [b] : (!dnn.tensor<[b = 4], f32>) -> !dnn.tensor<[], f32>
  dnn.return %l : !dnn.tensor<[], f32>
}

// CHECK: {{.*}}pase-invalid-plan.mlir:8:1: error: 'dnn.graph' op pase.training: unknown optimizer 'lion'; it is one of sgd, momentum, adam

// -----

/// a layer's pase.zero is a ZeRO stage

dnn.graph @g(b = 4) {
  %w = dnn.param : !dnn.tensor<[b = 4], f32>
  %l = dnn.reduce sum %w over [b] {pase.zero = 5 : i64} : (!dnn.tensor<[b = 4], f32>) -> !dnn.tensor<[], f32>
  dnn.return %l : !dnn.tensor<[], f32>
}

// CHECK: {{.*}}pase-invalid-plan.mlir:22:3: error: 'dnn.reduce' op pase.zero must be a ZeRO stage 0 to 3 (e.g. pase.zero = 1 : i64), got 5 : i64

// -----

/// a layer's pase.recompute is a unit attribute

dnn.graph @g(b = 4) {
  %w = dnn.param : !dnn.tensor<[b = 4], f32>
  %l = dnn.reduce sum %w over [b] {pase.recompute = "yes"} : (!dnn.tensor<[b = 4], f32>) -> !dnn.tensor<[], f32>
  dnn.return %l : !dnn.tensor<[], f32>
}

// CHECK: {{.*}}pase-invalid-plan.mlir:34:3: error: 'dnn.reduce' op pase.recompute is a unit attribute (present or absent), got "yes"

// -----

/// a configuration fits the strategy's devices

dnn.graph @g(b = 8) attributes {pase.strategy = #pase.strategy<devices = 2, machine = "pase-default", total = 1.0, compute = 1.0, communication = 0.0, redistribution = 0.0, data_parallel = 1.0, speedup = 1.0>} {
  %w = dnn.param : !dnn.tensor<[b = 8], f32>
  %l = dnn.reduce sum %w over [b] {pase.config = #pase.config<b = 4>} : (!dnn.tensor<[b = 8], f32>) -> !dnn.tensor<[], f32>
  dnn.return %l : !dnn.tensor<[], f32>
}

// CHECK: {{.*}}pase-invalid-plan.mlir:46:3: error: 'dnn.reduce' op #pase.config needs 4 devices, but the graph's #pase.strategy has 2

// -----

/// a stage is one of the pipeline's

dnn.graph @g(b = 8) attributes {pase.pipeline = #pase.pipeline<devices = 4, machine = "pase-default", stages = 2, microbatches = 1, schedule = "1f1b", step = 1.0, bubble = 0.0, memory = 1.0>} {
  %w = dnn.param : !dnn.tensor<[b = 8], f32>
  %y = dnn.relu %w {pase.config = #pase.config<>, pase.stage = #pase.stage<0, offset = 0, devices = 2>} : (!dnn.tensor<[b = 8], f32>) -> !dnn.tensor<[b = 8], f32>
  %l = dnn.reduce sum %y over [b] {pase.config = #pase.config<>, pase.stage = #pase.stage<5, offset = 10, devices = 2>} : (!dnn.tensor<[b = 8], f32>) -> !dnn.tensor<[], f32>
  dnn.return %l : !dnn.tensor<[], f32>
}

// CHECK: {{.*}}pase-invalid-plan.mlir:59:3: error: 'dnn.reduce' op #pase.stage 5 must be one of the pipeline's 2 stages, at least the previous layer's (0)

// -----

/// a stage runs on its devices

dnn.graph @g(b = 8) attributes {pase.pipeline = #pase.pipeline<devices = 4, machine = "pase-default", stages = 2, microbatches = 1, schedule = "1f1b", step = 1.0, bubble = 0.0, memory = 1.0>} {
  %w = dnn.param : !dnn.tensor<[b = 8], f32>
  %y = dnn.relu %w {pase.config = #pase.config<>, pase.stage = #pase.stage<0, offset = 0, devices = 2>} : (!dnn.tensor<[b = 8], f32>) -> !dnn.tensor<[b = 8], f32>
  %l = dnn.reduce sum %y over [b] {pase.config = #pase.config<>, pase.stage = #pase.stage<1, offset = 1, devices = 2>} : (!dnn.tensor<[b = 8], f32>) -> !dnn.tensor<[], f32>
  dnn.return %l : !dnn.tensor<[], f32>
}

// CHECK: {{.*}}pase-invalid-plan.mlir:72:3: error: 'dnn.reduce' op stage 1 of 2 on 4 devices runs on devices 2..3: #pase.stage<1, offset = 2, devices = 2>

// -----

/// a configuration fits its stage

dnn.graph @g(b = 8) attributes {pase.pipeline = #pase.pipeline<devices = 4, machine = "pase-default", stages = 2, microbatches = 1, schedule = "1f1b", step = 1.0, bubble = 0.0, memory = 1.0>} {
  %w = dnn.param : !dnn.tensor<[b = 8], f32>
  %y = dnn.relu %w {pase.config = #pase.config<b = 4>, pase.stage = #pase.stage<0, offset = 0, devices = 2>} : (!dnn.tensor<[b = 8], f32>) -> !dnn.tensor<[b = 8], f32>
  %l = dnn.reduce sum %y over [b] {pase.config = #pase.config<>, pase.stage = #pase.stage<1, offset = 2, devices = 2>} : (!dnn.tensor<[b = 8], f32>) -> !dnn.tensor<[], f32>
  dnn.return %l : !dnn.tensor<[], f32>
}

// CHECK: {{.*}}pase-invalid-plan.mlir:84:3: error: 'dnn.relu' op #pase.config needs 4 devices, more than the 2 of its stage

// -----

/// every layer of a pipeline has its stage

dnn.graph @g(b = 8) attributes {pase.pipeline = #pase.pipeline<devices = 4, machine = "pase-default", stages = 2, microbatches = 1, schedule = "1f1b", step = 1.0, bubble = 0.0, memory = 1.0>} {
  %w = dnn.param : !dnn.tensor<[b = 8], f32>
  %y = dnn.relu %w {pase.config = #pase.config<>, pase.stage = #pase.stage<0, offset = 0, devices = 2>} : (!dnn.tensor<[b = 8], f32>) -> !dnn.tensor<[b = 8], f32>
  %l = dnn.reduce sum %y over [b] {pase.config = #pase.config<>} : (!dnn.tensor<[b = 8], f32>) -> !dnn.tensor<[], f32>
  dnn.return %l : !dnn.tensor<[], f32>
}

// CHECK: {{.*}}pase-invalid-plan.mlir:98:3: error: 'dnn.reduce' op this layer has no pase.stage, but the graph has a #pase.pipeline (pase-partition-stages gives every layer its stage)

// -----

/// every stage holds a layer

dnn.graph @g(b = 8) attributes {pase.pipeline = #pase.pipeline<devices = 4, machine = "pase-default", stages = 2, microbatches = 1, schedule = "1f1b", step = 1.0, bubble = 0.0, memory = 1.0>} {
  %w = dnn.param : !dnn.tensor<[b = 8], f32>
  %y = dnn.relu %w {pase.config = #pase.config<>, pase.stage = #pase.stage<0, offset = 0, devices = 2>} : (!dnn.tensor<[b = 8], f32>) -> !dnn.tensor<[b = 8], f32>
  %l = dnn.reduce sum %y over [b] {pase.config = #pase.config<>, pase.stage = #pase.stage<0, offset = 0, devices = 2>} : (!dnn.tensor<[b = 8], f32>) -> !dnn.tensor<[], f32>
  dnn.return %l : !dnn.tensor<[], f32>
}

// CHECK: {{.*}}pase-invalid-plan.mlir:111:3: error: 'dnn.reduce' op the last layer is on stage 0, but the #pase.pipeline has 2 stages: every stage holds a layer

// -----

/// an optimizer step's learning rate is finite and at least 0

dnn.graph @g(b = 4) {
  %w = dnn.param : !dnn.tensor<[b = 4], f32>
  %l = dnn.reduce sum %w over [b] : (!dnn.tensor<[b = 4], f32>) -> !dnn.tensor<[], f32>
  %w_next = dnn.sgd %w, %w lr -1.0 : f64 : (!dnn.tensor<[b = 4], f32>, !dnn.tensor<[b = 4], f32>) -> !dnn.tensor<[b = 4], f32>
  dnn.return %l, %w_next : !dnn.tensor<[], f32>, !dnn.tensor<[b = 4], f32>
}

// CHECK: {{.*}}pase-invalid-plan.mlir:124:3: error: 'dnn.sgd' op dnn.sgd lr must be a finite number at least 0, got -1.0
