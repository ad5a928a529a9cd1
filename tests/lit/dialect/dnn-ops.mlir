// RUN: PASE_ROUNDTRIP
// RUN: PASE_GENERIC_ROUNDTRIP

/// The two-layer perceptron of docs/language.md: graph, input, param, einsum, relu, loss, return

dnn.graph @mlp(b = 64, d = 256, h = 1024, c = 10) {
  %x = dnn.input : !dnn.tensor<[b = 64, d = 256], f32>
  %t = dnn.input : !dnn.tensor<[b = 64], i32>
  %w1 = dnn.param : !dnn.tensor<[d = 256, h = 1024], f32>
  %h = dnn.einsum %x, %w1 : (!dnn.tensor<[b = 64, d = 256], f32>, !dnn.tensor<[d = 256, h = 1024], f32>) -> !dnn.tensor<[b = 64, h = 1024], f32>
  %a = dnn.relu %h : (!dnn.tensor<[b = 64, h = 1024], f32>) -> !dnn.tensor<[b = 64, h = 1024], f32>
  %w2 = dnn.param : !dnn.tensor<[h = 1024, c = 10], f32>
  %z = dnn.einsum %a, %w2 : (!dnn.tensor<[b = 64, h = 1024], f32>, !dnn.tensor<[h = 1024, c = 10], f32>) -> !dnn.tensor<[b = 64, c = 10], f32>
  %l = dnn.softmax_cross_entropy %z, %t over [c] : (!dnn.tensor<[b = 64, c = 10], f32>, !dnn.tensor<[b = 64], i32>) -> !dnn.tensor<[], f32>
  dnn.return %l : !dnn.tensor<[], f32>
}

// CHECK-LABEL: dnn.graph @mlp(b = 64, d = 256, h = 1024, c = 10) {
// CHECK-NEXT:   %x = dnn.input : !dnn.tensor<[b = 64, d = 256], f32>
// CHECK-NEXT:   %t = dnn.input : !dnn.tensor<[b = 64], i32>
// CHECK-NEXT:   %w1 = dnn.param : !dnn.tensor<[d = 256, h = 1024], f32>
// CHECK-NEXT:   %h = dnn.einsum %x, %w1 : (!dnn.tensor<[b = 64, d = 256], f32>, !dnn.tensor<[d = 256, h = 1024], f32>) -> !dnn.tensor<[b = 64, h = 1024], f32>
// CHECK-NEXT:   %a = dnn.relu %h : (!dnn.tensor<[b = 64, h = 1024], f32>) -> !dnn.tensor<[b = 64, h = 1024], f32>
// CHECK-NEXT:   %w2 = dnn.param : !dnn.tensor<[h = 1024, c = 10], f32>
// CHECK-NEXT:   %z = dnn.einsum %a, %w2 : (!dnn.tensor<[b = 64, h = 1024], f32>, !dnn.tensor<[h = 1024, c = 10], f32>) -> !dnn.tensor<[b = 64, c = 10], f32>
// CHECK-NEXT:   %l = dnn.softmax_cross_entropy %z, %t over [c] : (!dnn.tensor<[b = 64, c = 10], f32>, !dnn.tensor<[b = 64], i32>) -> !dnn.tensor<[], f32>
// CHECK-NEXT:   dnn.return %l : !dnn.tensor<[], f32>
// CHECK-NEXT: }

// GENERIC: "dnn.graph"() <{sym_name = "mlp", dim_names = ["b", "d", "h", "c"], dim_sizes = [#builtin.int<64>, #builtin.int<256>, #builtin.int<1024>, #builtin.int<10>]}> ({
// GENERIC: "dnn.softmax_cross_entropy"(%z, %t) <{over = ["c"]}>

// -----

/// dnn.input and dnn.param of every element type; several return values

dnn.graph @element_types(b = 4, d = 8) {
  %x32 = dnn.input : !dnn.tensor<[b = 4, d = 8], f32>
  %x64 = dnn.input : !dnn.tensor<[b = 4, d = 8], f64>
  %i32 = dnn.input : !dnn.tensor<[b = 4], i32>
  %i64 = dnn.input : !dnn.tensor<[b = 4], i64>
  %w32 = dnn.param : !dnn.tensor<[d = 8], f32>
  %w64 = dnn.param : !dnn.tensor<[d = 8, b = 4], f64>
  dnn.return %x32, %x64, %i32, %i64, %w32, %w64 : !dnn.tensor<[b = 4, d = 8], f32>, !dnn.tensor<[b = 4, d = 8], f64>, !dnn.tensor<[b = 4], i32>, !dnn.tensor<[b = 4], i64>, !dnn.tensor<[d = 8], f32>, !dnn.tensor<[d = 8, b = 4], f64>
}

// CHECK-LABEL: dnn.graph @element_types(b = 4, d = 8) {
// CHECK-NEXT:    %x32 = dnn.input : !dnn.tensor<[b = 4, d = 8], f32>
// CHECK-NEXT:    %x64 = dnn.input : !dnn.tensor<[b = 4, d = 8], f64>
// CHECK-NEXT:    %i32 = dnn.input : !dnn.tensor<[b = 4], i32>
// CHECK-NEXT:    %i64 = dnn.input : !dnn.tensor<[b = 4], i64>
// CHECK-NEXT:    %w32 = dnn.param : !dnn.tensor<[d = 8], f32>
// CHECK-NEXT:    %w64 = dnn.param : !dnn.tensor<[d = 8, b = 4], f64>
// CHECK-NEXT:    dnn.return %x32, %x64, %i32, %i64, %w32, %w64 : !dnn.tensor<[b = 4, d = 8], f32>, !dnn.tensor<[b = 4, d = 8], f64>, !dnn.tensor<[b = 4], i32>, !dnn.tensor<[b = 4], i64>, !dnn.tensor<[d = 8], f32>, !dnn.tensor<[d = 8, b = 4], f64>
// CHECK-NEXT:  }
// GENERIC:     "dnn.graph"() <{sym_name = "element_types", dim_names = ["b", "d"], dim_sizes = [#builtin.int<4>, #builtin.int<8>]}> ({
// GENERIC:     %x64 = "dnn.input"() : () -> !dnn.tensor<[b = 4, d = 8], f64>
// GENERIC:     %i64 = "dnn.input"() : () -> !dnn.tensor<[b = 4], i64>
// GENERIC:     %w64 = "dnn.param"() : () -> !dnn.tensor<[d = 8, b = 4], f64>
// GENERIC:     "dnn.return"(%x32, %x64, %i32, %i64, %w32, %w64) : (!dnn.tensor<[b = 4, d = 8], f32>, !dnn.tensor<[b = 4, d = 8], f64>, !dnn.tensor<[b = 4], i32>, !dnn.tensor<[b = 4], i64>, !dnn.tensor<[d = 8], f32>, !dnn.tensor<[d = 8, b = 4], f64>) -> ()

// -----

/// A scalar input; a graph may return a value that is only data

dnn.graph @scalar(b = 2) {
  %s = dnn.input : !dnn.tensor<[], f32>
  %x = dnn.input : !dnn.tensor<[b = 2], f32>
  dnn.return %s : !dnn.tensor<[], f32>
}

// CHECK-LABEL: dnn.graph @scalar(b = 2) {
// CHECK-NEXT:    %s = dnn.input : !dnn.tensor<[], f32>
// CHECK-NEXT:    %x = dnn.input : !dnn.tensor<[b = 2], f32>
// CHECK-NEXT:    dnn.return %s : !dnn.tensor<[], f32>
// CHECK-NEXT:  }
// GENERIC:     %s = "dnn.input"() : () -> !dnn.tensor<[], f32>

// -----

/// softmax_cross_entropy with i64 labels over a middle dimension, f64 logits

dnn.graph @loss(b = 4, c = 10, s = 3) {
  %z = dnn.input : !dnn.tensor<[b = 4, c = 10, s = 3], f64>
  %t = dnn.input : !dnn.tensor<[b = 4, s = 3], i64>
  %l = dnn.softmax_cross_entropy %z, %t over [c] : (!dnn.tensor<[b = 4, c = 10, s = 3], f64>, !dnn.tensor<[b = 4, s = 3], i64>) -> !dnn.tensor<[], f64>
  dnn.return %l : !dnn.tensor<[], f64>
}

// CHECK-LABEL: dnn.graph @loss(b = 4, c = 10, s = 3) {
// CHECK-NEXT:    %z = dnn.input : !dnn.tensor<[b = 4, c = 10, s = 3], f64>
// CHECK-NEXT:    %t = dnn.input : !dnn.tensor<[b = 4, s = 3], i64>
// CHECK-NEXT:    %l = dnn.softmax_cross_entropy %z, %t over [c] : (!dnn.tensor<[b = 4, c = 10, s = 3], f64>, !dnn.tensor<[b = 4, s = 3], i64>) -> !dnn.tensor<[], f64>
// CHECK-NEXT:    dnn.return %l : !dnn.tensor<[], f64>
// CHECK-NEXT:  }
// GENERIC:     %l = "dnn.softmax_cross_entropy"(%z, %t) <{over = ["c"]}> : (!dnn.tensor<[b = 4, c = 10, s = 3], f64>, !dnn.tensor<[b = 4, s = 3], i64>) -> !dnn.tensor<[], f64>

// -----

/// Two graphs in one module; each has its own dimension table

dnn.graph @first(b = 4) {
  %x = dnn.input : !dnn.tensor<[b = 4], f32>
  dnn.return %x : !dnn.tensor<[b = 4], f32>
}
dnn.graph @second(b = 8, d = 2) {
  %x = dnn.input : !dnn.tensor<[b = 8, d = 2], f32>
  dnn.return %x : !dnn.tensor<[b = 8, d = 2], f32>
}

// CHECK-LABEL: dnn.graph @first(b = 4) {
// CHECK-NEXT:    %x = dnn.input : !dnn.tensor<[b = 4], f32>
// CHECK-NEXT:    dnn.return %x : !dnn.tensor<[b = 4], f32>
// CHECK-NEXT:  }
// CHECK-LABEL: dnn.graph @second(b = 8, d = 2) {
// CHECK-NEXT:    %x = dnn.input : !dnn.tensor<[b = 8, d = 2], f32>
// CHECK-NEXT:    dnn.return %x : !dnn.tensor<[b = 8, d = 2], f32>
// CHECK-NEXT:  }
// GENERIC:     "dnn.graph"() <{sym_name = "first", dim_names = ["b"], dim_sizes = [#builtin.int<4>]}> ({
// GENERIC:     "dnn.graph"() <{sym_name = "second", dim_names = ["b", "d"], dim_sizes = [#builtin.int<8>, #builtin.int<2>]}> ({
