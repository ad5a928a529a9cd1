// RUN: PASE_ROUNDTRIP
// RUN: PASE_GENERIC_ROUNDTRIP

/// embedding of i32 and of i64 ids

dnn.graph @embedding(b = 4, s = 3, v = 100, e = 8) {
  %ids = dnn.input : !dnn.tensor<[b = 4, s = 3], i32>
  %ids64 = dnn.input : !dnn.tensor<[s = 3], i64>
  %table = dnn.param : !dnn.tensor<[v = 100, e = 8], f32>
  %x = dnn.embedding %ids, %table : (!dnn.tensor<[b = 4, s = 3], i32>, !dnn.tensor<[v = 100, e = 8], f32>) -> !dnn.tensor<[b = 4, s = 3, e = 8], f32>
  %y = dnn.embedding %ids64, %table : (!dnn.tensor<[s = 3], i64>, !dnn.tensor<[v = 100, e = 8], f32>) -> !dnn.tensor<[s = 3, e = 8], f32>
  dnn.return %x, %y : !dnn.tensor<[b = 4, s = 3, e = 8], f32>, !dnn.tensor<[s = 3, e = 8], f32>
}

// CHECK-LABEL: dnn.graph @embedding(b = 4, s = 3, v = 100, e = 8) {
// CHECK-NEXT:    %ids = dnn.input : !dnn.tensor<[b = 4, s = 3], i32>
// CHECK-NEXT:    %ids64 = dnn.input : !dnn.tensor<[s = 3], i64>
// CHECK-NEXT:    %table = dnn.param : !dnn.tensor<[v = 100, e = 8], f32>
// CHECK-NEXT:    %x = dnn.embedding %ids, %table : (!dnn.tensor<[b = 4, s = 3], i32>, !dnn.tensor<[v = 100, e = 8], f32>) -> !dnn.tensor<[b = 4, s = 3, e = 8], f32>
// CHECK-NEXT:    %y = dnn.embedding %ids64, %table : (!dnn.tensor<[s = 3], i64>, !dnn.tensor<[v = 100, e = 8], f32>) -> !dnn.tensor<[s = 3, e = 8], f32>
// CHECK-NEXT:    dnn.return %x, %y : !dnn.tensor<[b = 4, s = 3, e = 8], f32>, !dnn.tensor<[s = 3, e = 8], f32>
// CHECK-NEXT:  }
// GENERIC:     %x = "dnn.embedding"(%ids, %table) : (!dnn.tensor<[b = 4, s = 3], i32>, !dnn.tensor<[v = 100, e = 8], f32>) -> !dnn.tensor<[b = 4, s = 3, e = 8], f32>
// GENERIC:     %y = "dnn.embedding"(%ids64, %table) : (!dnn.tensor<[s = 3], i64>, !dnn.tensor<[v = 100, e = 8], f32>) -> !dnn.tensor<[s = 3, e = 8], f32>

// -----

/// lstm: x [b, s, e], w [l, 2e, 4e]

dnn.graph @lstm(b = 4, s = 3, e = 8, l = 2, k = 16, n = 32) {
  %x = dnn.input : !dnn.tensor<[b = 4, s = 3, e = 8], f32>
  %w = dnn.param : !dnn.tensor<[l = 2, k = 16, n = 32], f32>
  %y = dnn.lstm %x, %w : (!dnn.tensor<[b = 4, s = 3, e = 8], f32>, !dnn.tensor<[l = 2, k = 16, n = 32], f32>) -> !dnn.tensor<[b = 4, s = 3, e = 8], f32>
  dnn.return %y : !dnn.tensor<[b = 4, s = 3, e = 8], f32>
}

// CHECK-LABEL: dnn.graph @lstm(b = 4, s = 3, e = 8, l = 2, k = 16, n = 32) {
// CHECK-NEXT:    %x = dnn.input : !dnn.tensor<[b = 4, s = 3, e = 8], f32>
// CHECK-NEXT:    %w = dnn.param : !dnn.tensor<[l = 2, k = 16, n = 32], f32>
// CHECK-NEXT:    %y = dnn.lstm %x, %w : (!dnn.tensor<[b = 4, s = 3, e = 8], f32>, !dnn.tensor<[l = 2, k = 16, n = 32], f32>) -> !dnn.tensor<[b = 4, s = 3, e = 8], f32>
// CHECK-NEXT:    dnn.return %y : !dnn.tensor<[b = 4, s = 3, e = 8], f32>
// CHECK-NEXT:  }
// GENERIC:     %y = "dnn.lstm"(%x, %w) : (!dnn.tensor<[b = 4, s = 3, e = 8], f32>, !dnn.tensor<[l = 2, k = 16, n = 32], f32>) -> !dnn.tensor<[b = 4, s = 3, e = 8], f32>
