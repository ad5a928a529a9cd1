// RUN: pase-opt %s --split-input-file -p 'pase-search{devices=4}' | filecheck %s

/// A two-layer perceptron with a small batch and large weights, on pase-default
/// (20e12 FLOP/s, 8e9 bytes/s). Each einsum splitting h 4 ways uses all devices with no
/// collective: x is input data (no input gradient), w1 and w2 range over h (no weight
/// gradient sum), the first einsum sums nothing and the second sums over h only its
/// 4x8 output (AR(32, 4) = 48 words, 2.4e-8 s). relu follows h. Any other split of the
/// einsums pays an all-reduce of a weight or of a 4x4096 activation. The loss splits the
/// batch: it reads the replicated 4x8 logits with no forward traffic, returns 24 of each
/// device's 32 gradient words (1.2e-8 s) and all-reduces the mean loss (1.5 words).
/// compute = 6·4·1024·4096/4 + 2·4·4096/4 + 6·4·8·4096/4 + 7·4·8/4 FLOPs = 1.268534e-6 s;
/// total = 1.268534e-6 + 2.475e-8 + 1.2e-8 = 1.305284e-6 s.

dnn.graph @mlp(b = 4, d = 1024, h = 4096, c = 8) {
  %x = dnn.input : !dnn.tensor<[b = 4, d = 1024], f32>
  %t = dnn.input : !dnn.tensor<[b = 4], i32>
  %w1 = dnn.param : !dnn.tensor<[d = 1024, h = 4096], f32>
  %y = dnn.einsum %x, %w1 : (!dnn.tensor<[b = 4, d = 1024], f32>, !dnn.tensor<[d = 1024, h = 4096], f32>) -> !dnn.tensor<[b = 4, h = 4096], f32>
  %a = dnn.relu %y : (!dnn.tensor<[b = 4, h = 4096], f32>) -> !dnn.tensor<[b = 4, h = 4096], f32>
  %w2 = dnn.param : !dnn.tensor<[h = 4096, c = 8], f32>
  %z = dnn.einsum %a, %w2 : (!dnn.tensor<[b = 4, h = 4096], f32>, !dnn.tensor<[h = 4096, c = 8], f32>) -> !dnn.tensor<[b = 4, c = 8], f32>
  %l = dnn.softmax_cross_entropy %z, %t over [c] : (!dnn.tensor<[b = 4, c = 8], f32>, !dnn.tensor<[b = 4], i32>) -> !dnn.tensor<[], f32>
  dnn.return %l : !dnn.tensor<[], f32>
}

// CHECK-LABEL: dnn.graph @mlp(b = 4, d = 1024, h = 4096, c = 8) attributes {pase.strategy = #pase.strategy<devices = 4, machine = "pase-default", total = 1.30528{{[0-9]*}}e-06, compute = 1.26853{{[0-9]*}}e-06, communication = 2.475{{[0-9]*}}e-08, redistribution = 1.2{{0*}}e-08, data_parallel = {{[0-9.e+-]+}}, speedup = {{[0-9.]+}}>} {
// CHECK-NEXT:    %x = dnn.input : !dnn.tensor<[b = 4, d = 1024], f32>
// CHECK-NEXT:    %t = dnn.input : !dnn.tensor<[b = 4], i32>
// CHECK-NEXT:    %w1 = dnn.param : !dnn.tensor<[d = 1024, h = 4096], f32>
// CHECK-NEXT:    %y = dnn.einsum %x, %w1 {pase.config = #pase.config<h = 4>} : (!dnn.tensor<[b = 4, d = 1024], f32>, !dnn.tensor<[d = 1024, h = 4096], f32>) -> !dnn.tensor<[b = 4, h = 4096], f32>
// CHECK-NEXT:    %a = dnn.relu %y {pase.config = #pase.config<h = 4>} : (!dnn.tensor<[b = 4, h = 4096], f32>) -> !dnn.tensor<[b = 4, h = 4096], f32>
// CHECK-NEXT:    %w2 = dnn.param : !dnn.tensor<[h = 4096, c = 8], f32>
// CHECK-NEXT:    %z = dnn.einsum %a, %w2 {pase.config = #pase.config<h = 4>} : (!dnn.tensor<[b = 4, h = 4096], f32>, !dnn.tensor<[h = 4096, c = 8], f32>) -> !dnn.tensor<[b = 4, c = 8], f32>
// CHECK-NEXT:    %l = dnn.softmax_cross_entropy %z, %t over [c] {pase.config = #pase.config<b = 4>} : (!dnn.tensor<[b = 4, c = 8], f32>, !dnn.tensor<[b = 4], i32>) -> !dnn.tensor<[], f32>
// CHECK-NEXT:    dnn.return %l : !dnn.tensor<[], f32>
// CHECK-NEXT:  }

// -----

/// A pinned pase.config is kept: the unsplit loss now sends the gradient of all 32 logits
/// back to devices 1-3 (1.6e-8 s) and needs no mean-loss all-reduce; the rest of the
/// strategy stays. total = 1.305284e-6 − 2.8e-12 + 1.12e-11 − 7.5e-10 − 1.2e-8 + 1.6e-8.

dnn.graph @pinned(b = 4, d = 1024, h = 4096, c = 8) {
  %x = dnn.input : !dnn.tensor<[b = 4, d = 1024], f32>
  %t = dnn.input : !dnn.tensor<[b = 4], i32>
  %w1 = dnn.param : !dnn.tensor<[d = 1024, h = 4096], f32>
  %y = dnn.einsum %x, %w1 : (!dnn.tensor<[b = 4, d = 1024], f32>, !dnn.tensor<[d = 1024, h = 4096], f32>) -> !dnn.tensor<[b = 4, h = 4096], f32>
  %a = dnn.relu %y : (!dnn.tensor<[b = 4, h = 4096], f32>) -> !dnn.tensor<[b = 4, h = 4096], f32>
  %w2 = dnn.param : !dnn.tensor<[h = 4096, c = 8], f32>
  %z = dnn.einsum %a, %w2 : (!dnn.tensor<[b = 4, h = 4096], f32>, !dnn.tensor<[h = 4096, c = 8], f32>) -> !dnn.tensor<[b = 4, c = 8], f32>
  %l = dnn.softmax_cross_entropy %z, %t over [c] {pase.config = #pase.config<>} : (!dnn.tensor<[b = 4, c = 8], f32>, !dnn.tensor<[b = 4], i32>) -> !dnn.tensor<[], f32>
  dnn.return %l : !dnn.tensor<[], f32>
}

// CHECK-LABEL: dnn.graph @pinned(b = 4, d = 1024, h = 4096, c = 8) attributes {pase.strategy = #pase.strategy<devices = 4, machine = "pase-default", total = 1.30854{{[0-9]*}}e-06, compute = 1.26854{{[0-9]*}}e-06, communication = 2.4{{0*}}e-08, redistribution = 1.6{{0*}}e-08, data_parallel = {{[0-9.e+-]+}}, speedup = {{[0-9.]+}}>} {
// CHECK:         %y = dnn.einsum %x, %w1 {pase.config = #pase.config<h = 4>}
// CHECK-NEXT:    %a = dnn.relu %y {pase.config = #pase.config<h = 4>}
// CHECK-NEXT:    %w2 = dnn.param
// CHECK-NEXT:    %z = dnn.einsum %a, %w2 {pase.config = #pase.config<h = 4>}
// CHECK-NEXT:    %l = dnn.softmax_cross_entropy %z, %t over [c] {pase.config = #pase.config<>}
// CHECK-NEXT:    dnn.return %l

// -----

/// A layer with other attributes keeps them next to its new pase.config; a graph of
/// data alone costs nothing.

dnn.graph @attributes(b = 8, d = 16) {
  %x = dnn.input : !dnn.tensor<[b = 8, d = 16], f32>
  %y = dnn.relu %x {pase.num_configs = 5 : i64} : (!dnn.tensor<[b = 8, d = 16], f32>) -> !dnn.tensor<[b = 8, d = 16], f32>
  dnn.return %y : !dnn.tensor<[b = 8, d = 16], f32>
}
dnn.graph @data(b = 8) {
  %x = dnn.input : !dnn.tensor<[b = 8], f32>
  dnn.return %x : !dnn.tensor<[b = 8], f32>
}

// CHECK-LABEL: dnn.graph @attributes(b = 8, d = 16) attributes {pase.strategy = #pase.strategy<devices = 4, machine = "pase-default", total = {{.*}}>} {
// CHECK-NEXT:    %x = dnn.input
// CHECK-NEXT:    %y = dnn.relu %x {pase.num_configs = 5 : i64, pase.config = #pase.config<{{.+}}>}
// CHECK-LABEL: dnn.graph @data(b = 8) attributes {pase.strategy = #pase.strategy<devices = 4, machine = "pase-default", total = 0.0, compute = 0.0, communication = 0.0, redistribution = 0.0, data_parallel = 0.0, speedup = {{[0-9.]+}}>} {
// CHECK-NEXT:    %x = dnn.input : !dnn.tensor<[b = 8], f32>
// CHECK-NEXT:    dnn.return %x
