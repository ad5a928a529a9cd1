// RUN: PASE_ROUNDTRIP
// RUN: PASE_GENERIC_ROUNDTRIP

/// einsum of one operand: a transpose, and a sum over a dimension

dnn.graph @einsum1(b = 4, d = 8) {
  %x = dnn.input : !dnn.tensor<[b = 4, d = 8], f32>
  %t = dnn.einsum %x : (!dnn.tensor<[b = 4, d = 8], f32>) -> !dnn.tensor<[d = 8, b = 4], f32>
  %s = dnn.einsum %x : (!dnn.tensor<[b = 4, d = 8], f32>) -> !dnn.tensor<[b = 4], f32>
  dnn.return %t, %s : !dnn.tensor<[d = 8, b = 4], f32>, !dnn.tensor<[b = 4], f32>
}

// CHECK-LABEL: dnn.graph @einsum1(b = 4, d = 8) {
// CHECK-NEXT:    %x = dnn.input : !dnn.tensor<[b = 4, d = 8], f32>
// CHECK-NEXT:    %t = dnn.einsum %x : (!dnn.tensor<[b = 4, d = 8], f32>) -> !dnn.tensor<[d = 8, b = 4], f32>
// CHECK-NEXT:    %s = dnn.einsum %x : (!dnn.tensor<[b = 4, d = 8], f32>) -> !dnn.tensor<[b = 4], f32>
// CHECK-NEXT:    dnn.return %t, %s : !dnn.tensor<[d = 8, b = 4], f32>, !dnn.tensor<[b = 4], f32>
// CHECK-NEXT:  }
// GENERIC:     %t = "dnn.einsum"(%x) : (!dnn.tensor<[b = 4, d = 8], f32>) -> !dnn.tensor<[d = 8, b = 4], f32>
// GENERIC:     %s = "dnn.einsum"(%x) : (!dnn.tensor<[b = 4, d = 8], f32>) -> !dnn.tensor<[b = 4], f32>

// -----

/// einsum of two operands: a matrix product, and an outer product

dnn.graph @einsum2(b = 4, d = 8, h = 16) {
  %x = dnn.input : !dnn.tensor<[b = 4, d = 8], f32>
  %w = dnn.param : !dnn.tensor<[d = 8, h = 16], f32>
  %y = dnn.einsum %x, %w : (!dnn.tensor<[b = 4, d = 8], f32>, !dnn.tensor<[d = 8, h = 16], f32>) -> !dnn.tensor<[b = 4, h = 16], f32>
  %o = dnn.einsum %x, %w : (!dnn.tensor<[b = 4, d = 8], f32>, !dnn.tensor<[d = 8, h = 16], f32>) -> !dnn.tensor<[b = 4, d = 8, h = 16], f32>
  dnn.return %y, %o : !dnn.tensor<[b = 4, h = 16], f32>, !dnn.tensor<[b = 4, d = 8, h = 16], f32>
}

// CHECK-LABEL: dnn.graph @einsum2(b = 4, d = 8, h = 16) {
// CHECK-NEXT:    %x = dnn.input : !dnn.tensor<[b = 4, d = 8], f32>
// CHECK-NEXT:    %w = dnn.param : !dnn.tensor<[d = 8, h = 16], f32>
// CHECK-NEXT:    %y = dnn.einsum %x, %w : (!dnn.tensor<[b = 4, d = 8], f32>, !dnn.tensor<[d = 8, h = 16], f32>) -> !dnn.tensor<[b = 4, h = 16], f32>
// CHECK-NEXT:    %o = dnn.einsum %x, %w : (!dnn.tensor<[b = 4, d = 8], f32>, !dnn.tensor<[d = 8, h = 16], f32>) -> !dnn.tensor<[b = 4, d = 8, h = 16], f32>
// CHECK-NEXT:    dnn.return %y, %o : !dnn.tensor<[b = 4, h = 16], f32>, !dnn.tensor<[b = 4, d = 8, h = 16], f32>
// CHECK-NEXT:  }
// GENERIC:     %y = "dnn.einsum"(%x, %w) : (!dnn.tensor<[b = 4, d = 8], f32>, !dnn.tensor<[d = 8, h = 16], f32>) -> !dnn.tensor<[b = 4, h = 16], f32>

// -----

/// einsum of three operands (attention-style contraction), f64

dnn.graph @einsum3(b = 2, s = 3, h = 4, k = 5, d = 6) {
  %x = dnn.input : !dnn.tensor<[b = 2, s = 3, d = 6], f64>
  %wq = dnn.param : !dnn.tensor<[d = 6, h = 4, k = 5], f64>
  %g = dnn.param : !dnn.tensor<[h = 4], f64>
  %q = dnn.einsum %x, %wq, %g : (!dnn.tensor<[b = 2, s = 3, d = 6], f64>, !dnn.tensor<[d = 6, h = 4, k = 5], f64>, !dnn.tensor<[h = 4], f64>) -> !dnn.tensor<[b = 2, h = 4, s = 3, k = 5], f64>
  dnn.return %q : !dnn.tensor<[b = 2, h = 4, s = 3, k = 5], f64>
}

// CHECK-LABEL: dnn.graph @einsum3(b = 2, s = 3, h = 4, k = 5, d = 6) {
// CHECK-NEXT:    %x = dnn.input : !dnn.tensor<[b = 2, s = 3, d = 6], f64>
// CHECK-NEXT:    %wq = dnn.param : !dnn.tensor<[d = 6, h = 4, k = 5], f64>
// CHECK-NEXT:    %g = dnn.param : !dnn.tensor<[h = 4], f64>
// CHECK-NEXT:    %q = dnn.einsum %x, %wq, %g : (!dnn.tensor<[b = 2, s = 3, d = 6], f64>, !dnn.tensor<[d = 6, h = 4, k = 5], f64>, !dnn.tensor<[h = 4], f64>) -> !dnn.tensor<[b = 2, h = 4, s = 3, k = 5], f64>
// CHECK-NEXT:    dnn.return %q : !dnn.tensor<[b = 2, h = 4, s = 3, k = 5], f64>
// CHECK-NEXT:  }
// GENERIC:     %q = "dnn.einsum"(%x, %wq, %g) : (!dnn.tensor<[b = 2, s = 3, d = 6], f64>, !dnn.tensor<[d = 6, h = 4, k = 5], f64>, !dnn.tensor<[h = 4], f64>) -> !dnn.tensor<[b = 2, h = 4, s = 3, k = 5], f64>
