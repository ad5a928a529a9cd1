// RUN: pase-opt %s --split-input-file --parsing-diagnostics | filecheck %s

/// #pase.pipeline: the schedule is 1f1b or gpipe

"test.op"() {plan = #pase.pipeline<devices = 8, machine = "m", stages = 2, microbatches = 4, schedule = "zigzag", step = 1.0, bubble = 0.0, memory = 1.0>} : () -> ()

// CHECK: {{.*}}pase-pipeline-invalid-parse.mlir:5:36{{$}}
// CHECK: #pase.pipeline schedule must be one of 1f1b, gpipe, got 'zigzag'

// -----

/// #pase.pipeline: the stages divide the devices

"test.op"() {plan = #pase.pipeline<devices = 8, machine = "m", stages = 3, microbatches = 4, schedule = "gpipe", step = 1.0, bubble = 0.0, memory = 1.0>} : () -> ()

// CHECK: {{.*}}pase-pipeline-invalid-parse.mlir:14:36{{$}}
// CHECK: #pase.pipeline stages must divide its 8 devices, got 3

// -----

/// #pase.pipeline: times are finite and at least 0

"test.op"() {plan = #pase.pipeline<devices = 8, machine = "m", stages = 2, microbatches = 4, schedule = "gpipe", step = -1.0, bubble = 0.0, memory = 1.0>} : () -> ()

// CHECK: {{.*}}pase-pipeline-invalid-parse.mlir:23:121{{$}}
// CHECK: #pase.pipeline step must be finite and at least 0, got -1.0

// -----

/// #pase.segment: indices count from 0

"test.op"() {seg = #pase.segment<-1>} : () -> ()

// CHECK: {{.*}}pase-pipeline-invalid-parse.mlir:32:34{{$}}
// CHECK: #pase.segment index must be at least 0, got -1

// -----

/// #pase.stage: a group of at least one device

"test.op"() {stage = #pase.stage<0, offset = 0, devices = 0>} : () -> ()

// CHECK: {{.*}}pase-pipeline-invalid-parse.mlir:41:34{{$}}
// CHECK: #pase.stage
