// RUN: pase-opt %s --split-input-file --parsing-diagnostics | filecheck %s

/// #pase.config: a dimension split twice

dnn.graph @g(b = 8, h = 4) {
  %x = dnn.input : !dnn.tensor<[b = 8, h = 4], f32>
  %y = dnn.relu %x {pase.config = #pase.config<b = 2, b = 4>} : (!dnn.tensor<[b = 8, h = 4], f32>) -> !dnn.tensor<[b = 8, h = 4], f32>
  dnn.return %y : !dnn.tensor<[b = 8, h = 4], f32>
}

// CHECK: {{.*}}pase-invalid-parse.mlir:7:61{{$}}
// CHECK: dimension 'b' is split twice in #pase.config

// -----

/// #pase.config: factors are at least 1

dnn.graph @g(b = 8, h = 4) {
  %x = dnn.input : !dnn.tensor<[b = 8, h = 4], f32>
  %y = dnn.relu %x {pase.config = #pase.config<b = 0>} : (!dnn.tensor<[b = 8, h = 4], f32>) -> !dnn.tensor<[b = 8, h = 4], f32>
  dnn.return %y : !dnn.tensor<[b = 8, h = 4], f32>
}

// CHECK: {{.*}}pase-invalid-parse.mlir:20:54{{$}}
// CHECK: split factor of 'b' must be at least 1, got 0

// -----

/// #pase.config: negative factors

dnn.graph @g(b = 8, h = 4) {
  %x = dnn.input : !dnn.tensor<[b = 8, h = 4], f32>
  %y = dnn.relu %x {pase.config = #pase.config<h = -2>} : (!dnn.tensor<[b = 8, h = 4], f32>) -> !dnn.tensor<[b = 8, h = 4], f32>
  dnn.return %y : !dnn.tensor<[b = 8, h = 4], f32>
}

// CHECK: {{.*}}pase-invalid-parse.mlir:33:55{{$}}
// CHECK: split factor of 'h' must be at least 1, got -2

// -----

/// #pase.config: dim = factor pairs

dnn.graph @g(b = 8, h = 4) {
  %x = dnn.input : !dnn.tensor<[b = 8, h = 4], f32>
  %y = dnn.relu %x {pase.config = #pase.config<b 2>} : (!dnn.tensor<[b = 8, h = 4], f32>) -> !dnn.tensor<[b = 8, h = 4], f32>
  dnn.return %y : !dnn.tensor<[b = 8, h = 4], f32>
}

// CHECK: {{.*}}pase-invalid-parse.mlir:46:50{{$}}
// CHECK: Expected '='

// -----

/// #pase.config: factors are integers

dnn.graph @g(b = 8, h = 4) {
  %x = dnn.input : !dnn.tensor<[b = 8, h = 4], f32>
  %y = dnn.relu %x {pase.config = #pase.config<b = 2.0>} : (!dnn.tensor<[b = 8, h = 4], f32>) -> !dnn.tensor<[b = 8, h = 4], f32>
  dnn.return %y : !dnn.tensor<[b = 8, h = 4], f32>
}

// CHECK: {{.*}}pase-invalid-parse.mlir:59:52{{$}}
// CHECK: Expected integer literal

// -----

/// #pase.strategy: every field, in order

dnn.graph @g(b = 8) attributes {pase.strategy = #pase.strategy<devices = 8, machine = "m">} {
  %x = dnn.input : !dnn.tensor<[b = 8], f32>
  dnn.return %x : !dnn.tensor<[b = 8], f32>
}

// CHECK: {{.*}}pase-invalid-parse.mlir:70:90{{$}}
// CHECK: Expected ','

// -----

/// #pase.strategy: field names

dnn.graph @g(b = 8) attributes {pase.strategy = #pase.strategy<devices = 8, machine = "m", overall = 1.0, compute = 1.0, communication = 0.0, redistribution = 0.0, data_parallel = 2.0>} {
  %x = dnn.input : !dnn.tensor<[b = 8], f32>
  dnn.return %x : !dnn.tensor<[b = 8], f32>
}

// CHECK: {{.*}}pase-invalid-parse.mlir:82:92{{$}}
// CHECK: Expected 'total'

// -----

/// #pase.strategy: the machine is a string

dnn.graph @g(b = 8) attributes {pase.strategy = #pase.strategy<devices = 8, machine = m, total = 1.0, compute = 1.0, communication = 0.0, redistribution = 0.0, data_parallel = 2.0>} {
  %x = dnn.input : !dnn.tensor<[b = 8], f32>
  dnn.return %x : !dnn.tensor<[b = 8], f32>
}

// CHECK: {{.*}}pase-invalid-parse.mlir:94:87{{$}}
// CHECK: string literal expected

// -----

/// #pase.layout: operands count from 0

dnn.graph @g(b = 8) {
  %x = dnn.param : !dnn.tensor<[b = 8], f32>
  %y = dnn.add %x, %x {pase.layout_of = #pase.layout<"y", operand -1>} : (!dnn.tensor<[b = 8], f32>, !dnn.tensor<[b = 8], f32>) -> !dnn.tensor<[b = 8], f32>
  dnn.return %y : !dnn.tensor<[b = 8], f32>
}

// CHECK: {{.*}}pase-invalid-parse.mlir:108:67{{$}}
// CHECK: #pase.layout names operand -1 of layer 'y'; operands count from 0

// -----

/// #pase.layout: the operand index follows the keyword `operand`

dnn.graph @g(b = 8) {
  %x = dnn.param : !dnn.tensor<[b = 8], f32>
  %y = dnn.add %x, %x {pase.layout_of = #pase.layout<"y", 1>} : (!dnn.tensor<[b = 8], f32>, !dnn.tensor<[b = 8], f32>) -> !dnn.tensor<[b = 8], f32>
  dnn.return %y : !dnn.tensor<[b = 8], f32>
}

// CHECK: {{.*}}pase-invalid-parse.mlir:121:59{{$}}
// CHECK: Expected 'operand'

// -----

/// #pase.layout: the layer is named by a string

dnn.graph @g(b = 8) {
  %x = dnn.param : !dnn.tensor<[b = 8], f32>
  %y = dnn.add %x, %x {pase.layout_of = #pase.layout<y>} : (!dnn.tensor<[b = 8], f32>, !dnn.tensor<[b = 8], f32>) -> !dnn.tensor<[b = 8], f32>
  dnn.return %y : !dnn.tensor<[b = 8], f32>
}

// CHECK: {{.*}}pase-invalid-parse.mlir:134:54{{$}}
// CHECK: string literal expected (a layer name)
