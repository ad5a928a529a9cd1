// RUN: PASE_ROUNDTRIP
// RUN: PASE_GENERIC_ROUNDTRIP

/// #pase.segment and #pase.stage on layers, #pase.pipeline on the graph

dnn.graph @staged(b = 8, h = 4) attributes {pase.pipeline = #pase.pipeline<devices = 8, machine = "v100-nvlink", stages = 2, microbatches = 4, schedule = "1f1b", step = 1.2e-02, bubble = 0.2, memory = 1.5e+09>} {
  %x = dnn.input : !dnn.tensor<[b = 8, h = 4], f32>
  %y = dnn.relu %x {pase.config = #pase.config<b = 4>, pase.segment = #pase.segment<0>, pase.stage = #pase.stage<0, offset = 0, devices = 4>} : (!dnn.tensor<[b = 8, h = 4], f32>) -> !dnn.tensor<[b = 8, h = 4], f32>
  %z = dnn.tanh %y {pase.config = #pase.config<h = 2>, pase.segment = #pase.segment<1>, pase.stage = #pase.stage<1, offset = 4, devices = 4>} : (!dnn.tensor<[b = 8, h = 4], f32>) -> !dnn.tensor<[b = 8, h = 4], f32>
  dnn.return %z : !dnn.tensor<[b = 8, h = 4], f32>
}

// CHECK-LABEL: dnn.graph @staged(b = 8, h = 4) attributes {pase.pipeline = #pase.pipeline<devices = 8, machine = "v100-nvlink", stages = 2, microbatches = 4, schedule = "1f1b", step = 0.012, bubble = 0.2, memory = 1500000000.0>} {
// CHECK-NEXT:    %x = dnn.input : !dnn.tensor<[b = 8, h = 4], f32>
// CHECK-NEXT:    %y = dnn.relu %x {pase.config = #pase.config<b = 4>, pase.segment = #pase.segment<0>, pase.stage = #pase.stage<0, offset = 0, devices = 4>} : (!dnn.tensor<[b = 8, h = 4], f32>) -> !dnn.tensor<[b = 8, h = 4], f32>
// CHECK-NEXT:    %z = dnn.tanh %y {pase.config = #pase.config<h = 2>, pase.segment = #pase.segment<1>, pase.stage = #pase.stage<1, offset = 4, devices = 4>} : (!dnn.tensor<[b = 8, h = 4], f32>) -> !dnn.tensor<[b = 8, h = 4], f32>
// CHECK-NEXT:    dnn.return %z : !dnn.tensor<[b = 8, h = 4], f32>
// CHECK-NEXT:  }
// GENERIC:      %y = "dnn.relu"(%x) {pase.config = #pase.config<b = 4>, pase.segment = #pase.segment<0>, pase.stage = #pase.stage<0, offset = 0, devices = 4>}
// GENERIC:      #pase.pipeline<devices = 8, machine = "v100-nvlink", stages = 2, microbatches = 4, schedule = "1f1b", step = 0.012, bubble = 0.2, memory = 1500000000.0>
