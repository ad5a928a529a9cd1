// RUN: PASE_ROUNDTRIP
// RUN: PASE_GENERIC_ROUNDTRIP

/// concat of two and of three operands along the one differing dimension

dnn.graph @concat(b = 2, c1 = 3, c2 = 5, c3 = 4, c = 8, cc = 12, h = 4) {
  %x = dnn.input : !dnn.tensor<[b = 2, c1 = 3, h = 4], f32>
  %y = dnn.input : !dnn.tensor<[b = 2, c2 = 5, h = 4], f32>
  %z = dnn.input : !dnn.tensor<[b = 2, c3 = 4, h = 4], f32>
  %xy = dnn.concat %x, %y : (!dnn.tensor<[b = 2, c1 = 3, h = 4], f32>, !dnn.tensor<[b = 2, c2 = 5, h = 4], f32>) -> !dnn.tensor<[b = 2, c = 8, h = 4], f32>
  %xyz = dnn.concat %x, %y, %z : (!dnn.tensor<[b = 2, c1 = 3, h = 4], f32>, !dnn.tensor<[b = 2, c2 = 5, h = 4], f32>, !dnn.tensor<[b = 2, c3 = 4, h = 4], f32>) -> !dnn.tensor<[b = 2, cc = 12, h = 4], f32>
  dnn.return %xy, %xyz : !dnn.tensor<[b = 2, c = 8, h = 4], f32>, !dnn.tensor<[b = 2, cc = 12, h = 4], f32>
}

// CHECK-LABEL: dnn.graph @concat(b = 2, c1 = 3, c2 = 5, c3 = 4, c = 8, cc = 12, h = 4) {
// CHECK-NEXT:    %x = dnn.input : !dnn.tensor<[b = 2, c1 = 3, h = 4], f32>
// CHECK-NEXT:    %y = dnn.input : !dnn.tensor<[b = 2, c2 = 5, h = 4], f32>
// CHECK-NEXT:    %z = dnn.input : !dnn.tensor<[b = 2, c3 = 4, h = 4], f32>
// CHECK-NEXT:    %xy = dnn.concat %x, %y : (!dnn.tensor<[b = 2, c1 = 3, h = 4], f32>, !dnn.tensor<[b = 2, c2 = 5, h = 4], f32>) -> !dnn.tensor<[b = 2, c = 8, h = 4], f32>
// CHECK-NEXT:    %xyz = dnn.concat %x, %y, %z : (!dnn.tensor<[b = 2, c1 = 3, h = 4], f32>, !dnn.tensor<[b = 2, c2 = 5, h = 4], f32>, !dnn.tensor<[b = 2, c3 = 4, h = 4], f32>) -> !dnn.tensor<[b = 2, cc = 12, h = 4], f32>
// CHECK-NEXT:    dnn.return %xy, %xyz : !dnn.tensor<[b = 2, c = 8, h = 4], f32>, !dnn.tensor<[b = 2, cc = 12, h = 4], f32>
// CHECK-NEXT:  }
// GENERIC:     %xy = "dnn.concat"(%x, %y) : (!dnn.tensor<[b = 2, c1 = 3, h = 4], f32>, !dnn.tensor<[b = 2, c2 = 5, h = 4], f32>) -> !dnn.tensor<[b = 2, c = 8, h = 4], f32>
// GENERIC:     %xyz = "dnn.concat"(%x, %y, %z)

// -----

/// reshape: merge consecutive dims, split a dim, rename a dim

dnn.graph @reshape(b = 2, s = 3, h = 4, k = 8, d = 32, bs = 6, t = 3) {
  %x = dnn.input : !dnn.tensor<[b = 2, s = 3, h = 4, k = 8], f32>
  %merged = dnn.reshape %x : (!dnn.tensor<[b = 2, s = 3, h = 4, k = 8], f32>) -> !dnn.tensor<[b = 2, s = 3, d = 32], f32>
  %split = dnn.reshape %merged : (!dnn.tensor<[b = 2, s = 3, d = 32], f32>) -> !dnn.tensor<[b = 2, s = 3, h = 4, k = 8], f32>
  %flat = dnn.reshape %merged : (!dnn.tensor<[b = 2, s = 3, d = 32], f32>) -> !dnn.tensor<[bs = 6, d = 32], f32>
  %renamed = dnn.reshape %x : (!dnn.tensor<[b = 2, s = 3, h = 4, k = 8], f32>) -> !dnn.tensor<[b = 2, t = 3, h = 4, k = 8], f32>
  dnn.return %split, %flat, %renamed : !dnn.tensor<[b = 2, s = 3, h = 4, k = 8], f32>, !dnn.tensor<[bs = 6, d = 32], f32>, !dnn.tensor<[b = 2, t = 3, h = 4, k = 8], f32>
}

// CHECK-LABEL: dnn.graph @reshape(b = 2, s = 3, h = 4, k = 8, d = 32, bs = 6, t = 3) {
// CHECK-NEXT:    %x = dnn.input : !dnn.tensor<[b = 2, s = 3, h = 4, k = 8], f32>
// CHECK-NEXT:    %merged = dnn.reshape %x : (!dnn.tensor<[b = 2, s = 3, h = 4, k = 8], f32>) -> !dnn.tensor<[b = 2, s = 3, d = 32], f32>
// CHECK-NEXT:    %split = dnn.reshape %merged : (!dnn.tensor<[b = 2, s = 3, d = 32], f32>) -> !dnn.tensor<[b = 2, s = 3, h = 4, k = 8], f32>
// CHECK-NEXT:    %flat = dnn.reshape %merged : (!dnn.tensor<[b = 2, s = 3, d = 32], f32>) -> !dnn.tensor<[bs = 6, d = 32], f32>
// CHECK-NEXT:    %renamed = dnn.reshape %x : (!dnn.tensor<[b = 2, s = 3, h = 4, k = 8], f32>) -> !dnn.tensor<[b = 2, t = 3, h = 4, k = 8], f32>
// CHECK-NEXT:    dnn.return %split, %flat, %renamed : !dnn.tensor<[b = 2, s = 3, h = 4, k = 8], f32>, !dnn.tensor<[bs = 6, d = 32], f32>, !dnn.tensor<[b = 2, t = 3, h = 4, k = 8], f32>
// CHECK-NEXT:  }
// GENERIC:     %merged = "dnn.reshape"(%x) : (!dnn.tensor<[b = 2, s = 3, h = 4, k = 8], f32>) -> !dnn.tensor<[b = 2, s = 3, d = 32], f32>
// GENERIC:     %renamed = "dnn.reshape"(%x) : (!dnn.tensor<[b = 2, s = 3, h = 4, k = 8], f32>) -> !dnn.tensor<[b = 2, t = 3, h = 4, k = 8], f32>
