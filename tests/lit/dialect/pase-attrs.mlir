// RUN: PASE_ROUNDTRIP
// RUN: PASE_GENERIC_ROUNDTRIP

/// #pase.config on layers: split factors, the empty (unsplit) form, next to other attributes

dnn.graph @configs(b = 8, d = 16, h = 4) {
  %x = dnn.input : !dnn.tensor<[b = 8, d = 16], f32>
  %w = dnn.param : !dnn.tensor<[d = 16, h = 4], f32>
  %y = dnn.einsum %x, %w {pase.config = #pase.config<b = 4, h = 2>} : (!dnn.tensor<[b = 8, d = 16], f32>, !dnn.tensor<[d = 16, h = 4], f32>) -> !dnn.tensor<[b = 8, h = 4], f32>
  %r = dnn.relu %y {pase.config = #pase.config<>} : (!dnn.tensor<[b = 8, h = 4], f32>) -> !dnn.tensor<[b = 8, h = 4], f32>
  %s = dnn.einsum %x, %w {pase.config = #pase.config<d = 2>, pase.num_configs = 7 : i64} : (!dnn.tensor<[b = 8, d = 16], f32>, !dnn.tensor<[d = 16, h = 4], f32>) -> !dnn.tensor<[b = 8, h = 4], f32>
  dnn.return %r, %s : !dnn.tensor<[b = 8, h = 4], f32>, !dnn.tensor<[b = 8, h = 4], f32>
}

// CHECK-LABEL: dnn.graph @configs(b = 8, d = 16, h = 4) {
// CHECK-NEXT:    %x = dnn.input : !dnn.tensor<[b = 8, d = 16], f32>
// CHECK-NEXT:    %w = dnn.param : !dnn.tensor<[d = 16, h = 4], f32>
// CHECK-NEXT:    %y = dnn.einsum %x, %w {pase.config = #pase.config<b = 4, h = 2>} : (!dnn.tensor<[b = 8, d = 16], f32>, !dnn.tensor<[d = 16, h = 4], f32>) -> !dnn.tensor<[b = 8, h = 4], f32>
// CHECK-NEXT:    %r = dnn.relu %y {pase.config = #pase.config<>} : (!dnn.tensor<[b = 8, h = 4], f32>) -> !dnn.tensor<[b = 8, h = 4], f32>
// CHECK-NEXT:    %s = dnn.einsum %x, %w {pase.config = #pase.config<d = 2>, pase.num_configs = 7 : i64} : (!dnn.tensor<[b = 8, d = 16], f32>, !dnn.tensor<[d = 16, h = 4], f32>) -> !dnn.tensor<[b = 8, h = 4], f32>
// CHECK-NEXT:    dnn.return %r, %s : !dnn.tensor<[b = 8, h = 4], f32>, !dnn.tensor<[b = 8, h = 4], f32>
// CHECK-NEXT:  }

// GENERIC:      %y = "dnn.einsum"(%x, %w) {pase.config = #pase.config<b = 4, h = 2>} : (!dnn.tensor<[b = 8, d = 16], f32>, !dnn.tensor<[d = 16, h = 4], f32>) -> !dnn.tensor<[b = 8, h = 4], f32>
// GENERIC-NEXT: %r = "dnn.relu"(%y) {pase.config = #pase.config<>} : (!dnn.tensor<[b = 8, h = 4], f32>) -> !dnn.tensor<[b = 8, h = 4], f32>
// GENERIC-NEXT: %s = "dnn.einsum"(%x, %w) {pase.config = #pase.config<d = 2>, pase.num_configs = 7 : i64}

// -----

/// Factors of 1 are omitted: #pase.config<b = 1, h = 2> prints as #pase.config<h = 2>,
/// and one of all ones as #pase.config<>

dnn.graph @ones(b = 8, h = 4) {
  %x = dnn.input : !dnn.tensor<[b = 8, h = 4], f32>
  %r = dnn.relu %x {pase.config = #pase.config<b = 1, h = 2>} : (!dnn.tensor<[b = 8, h = 4], f32>) -> !dnn.tensor<[b = 8, h = 4], f32>
  %t = dnn.tanh %r {pase.config = #pase.config<b = 1, h = 1>} : (!dnn.tensor<[b = 8, h = 4], f32>) -> !dnn.tensor<[b = 8, h = 4], f32>
  dnn.return %t : !dnn.tensor<[b = 8, h = 4], f32>
}

// CHECK-LABEL: dnn.graph @ones(b = 8, h = 4) {
// CHECK-NEXT:    %x = dnn.input : !dnn.tensor<[b = 8, h = 4], f32>
// CHECK-NEXT:    %r = dnn.relu %x {pase.config = #pase.config<h = 2>} : (!dnn.tensor<[b = 8, h = 4], f32>) -> !dnn.tensor<[b = 8, h = 4], f32>
// CHECK-NEXT:    %t = dnn.tanh %r {pase.config = #pase.config<>} : (!dnn.tensor<[b = 8, h = 4], f32>) -> !dnn.tensor<[b = 8, h = 4], f32>
// CHECK-NEXT:    dnn.return %t : !dnn.tensor<[b = 8, h = 4], f32>
// CHECK-NEXT:  }

// GENERIC:      %r = "dnn.relu"(%x) {pase.config = #pase.config<h = 2>}
// GENERIC-NEXT: %t = "dnn.tanh"(%r) {pase.config = #pase.config<>}

// -----

/// #pase.strategy on a graph: floats print in the shortest form that reads back exactly

dnn.graph @strategy(b = 8) attributes {pase.strategy = #pase.strategy<devices = 8, machine = "pase-default", total = 1.5e-02, compute = 0.01, communication = 3.0e-03, redistribution = 0.0, data_parallel = 2.1e-02>} {
  %x = dnn.input : !dnn.tensor<[b = 8], f32>
  dnn.return %x : !dnn.tensor<[b = 8], f32>
}

dnn.graph @tiny(b = 8) attributes {pase.strategy = #pase.strategy<devices = 1, machine = "v100-nvlink", total = 1.0e-05, compute = 1.0e-05, communication = 0.0, redistribution = 0.0, data_parallel = 1.25e+03>, note = "kept"} {
  %x = dnn.input : !dnn.tensor<[b = 8], f32>
  dnn.return %x : !dnn.tensor<[b = 8], f32>
}

// CHECK-LABEL: dnn.graph @strategy(b = 8) attributes {pase.strategy = #pase.strategy<devices = 8, machine = "pase-default", total = 0.015, compute = 0.01, communication = 0.003, redistribution = 0.0, data_parallel = 0.021, speedup = {{[0-9.]+}}>} {
// CHECK-NEXT:    %x = dnn.input : !dnn.tensor<[b = 8], f32>
// CHECK-NEXT:    dnn.return %x : !dnn.tensor<[b = 8], f32>
// CHECK-NEXT:  }
// CHECK-LABEL: dnn.graph @tiny(b = 8) attributes {pase.strategy = #pase.strategy<devices = 1, machine = "v100-nvlink", total = 1.0e-05, compute = 1.0e-05, communication = 0.0, redistribution = 0.0, data_parallel = 1250.0, speedup = {{[0-9.]+}}>, note = "kept"} {

// GENERIC:      }) {pase.strategy = #pase.strategy<devices = 8, machine = "pase-default", total = 0.015, compute = 0.01, communication = 0.003, redistribution = 0.0, data_parallel = 0.021, speedup = {{[0-9.]+}}>} : () -> ()
// GENERIC:      }) {pase.strategy = #pase.strategy<devices = 1, machine = "v100-nvlink", total = 1.0e-05, compute = 1.0e-05, communication = 0.0, redistribution = 0.0, data_parallel = 1250.0, speedup = {{[0-9.]+}}>, note = "kept"} : () -> ()

// -----

/// The attributes pase-autodiff writes: pase.layer (the forward layer), pase.grid_order
/// (an einsum gradient's grid order) and pase.layout_of, a #pase.layout of a layer's
/// result or of one of its operands

dnn.graph @gradients(b = 8, d = 16, h = 4) {
  %x = dnn.input : !dnn.tensor<[b = 8, d = 16], f32>
  %w = dnn.param : !dnn.tensor<[d = 16, h = 4], f32>
  %y = dnn.einsum %x, %w : (!dnn.tensor<[b = 8, d = 16], f32>, !dnn.tensor<[d = 16, h = 4], f32>) -> !dnn.tensor<[b = 8, h = 4], f32>
  %dw = dnn.einsum %y, %x {pase.layer = "y", pase.grid_order = ["b", "h", "d"]} : (!dnn.tensor<[b = 8, h = 4], f32>, !dnn.tensor<[b = 8, d = 16], f32>) -> !dnn.tensor<[d = 16, h = 4], f32>
  %s = dnn.add %y, %y {pase.layout_of = #pase.layout<"y">} : (!dnn.tensor<[b = 8, h = 4], f32>, !dnn.tensor<[b = 8, h = 4], f32>) -> !dnn.tensor<[b = 8, h = 4], f32>
  %w_next = dnn.sgd %w, %dw lr 1.000000e-02 : f64 {pase.layout_of = #pase.layout<"y", operand 1>} : (!dnn.tensor<[d = 16, h = 4], f32>, !dnn.tensor<[d = 16, h = 4], f32>) -> !dnn.tensor<[d = 16, h = 4], f32>
  dnn.return %s, %w_next : !dnn.tensor<[b = 8, h = 4], f32>, !dnn.tensor<[d = 16, h = 4], f32>
}

// CHECK-LABEL: dnn.graph @gradients(b = 8, d = 16, h = 4) {
// CHECK:         %dw = dnn.einsum %y, %x {pase.layer = "y", pase.grid_order = ["b", "h", "d"]} : (!dnn.tensor<[b = 8, h = 4], f32>, !dnn.tensor<[b = 8, d = 16], f32>) -> !dnn.tensor<[d = 16, h = 4], f32>
// CHECK-NEXT:    %s = dnn.add %y, %y {pase.layout_of = #pase.layout<"y">} : (!dnn.tensor<[b = 8, h = 4], f32>, !dnn.tensor<[b = 8, h = 4], f32>) -> !dnn.tensor<[b = 8, h = 4], f32>
// CHECK-NEXT:    %w_next = dnn.sgd %w, %dw lr 1.000000e-02 : f64 {pase.layout_of = #pase.layout<"y", operand 1>} : (!dnn.tensor<[d = 16, h = 4], f32>, !dnn.tensor<[d = 16, h = 4], f32>) -> !dnn.tensor<[d = 16, h = 4], f32>

// GENERIC:      %dw = "dnn.einsum"(%y, %x) {pase.layer = "y", pase.grid_order = ["b", "h", "d"]}
// GENERIC-NEXT: %s = "dnn.add"(%y, %y) {pase.layout_of = #pase.layout<"y">}
// GENERIC-NEXT: %w_next = "dnn.sgd"(%w, %dw) <{lr = 1.000000e-02 : f64}> {pase.layout_of = #pase.layout<"y", operand 1>}
