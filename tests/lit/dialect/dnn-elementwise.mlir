// RUN: PASE_ROUNDTRIP
// RUN: PASE_GENERIC_ROUNDTRIP

/// Unary elementwise ops keep their operand's type

dnn.graph @unary(b = 4, d = 8) {
  %x = dnn.input : !dnn.tensor<[b = 4, d = 8], f32>
  %r = dnn.relu %x : (!dnn.tensor<[b = 4, d = 8], f32>) -> !dnn.tensor<[b = 4, d = 8], f32>
  %g = dnn.gelu %r : (!dnn.tensor<[b = 4, d = 8], f32>) -> !dnn.tensor<[b = 4, d = 8], f32>
  %t = dnn.tanh %g : (!dnn.tensor<[b = 4, d = 8], f32>) -> !dnn.tensor<[b = 4, d = 8], f32>
  %s = dnn.sigmoid %t : (!dnn.tensor<[b = 4, d = 8], f32>) -> !dnn.tensor<[b = 4, d = 8], f32>
  %e = dnn.exp %s : (!dnn.tensor<[b = 4, d = 8], f32>) -> !dnn.tensor<[b = 4, d = 8], f32>
  %x64 = dnn.input : !dnn.tensor<[d = 8], f64>
  %e64 = dnn.exp %x64 : (!dnn.tensor<[d = 8], f64>) -> !dnn.tensor<[d = 8], f64>
  dnn.return %e, %e64 : !dnn.tensor<[b = 4, d = 8], f32>, !dnn.tensor<[d = 8], f64>
}

// CHECK-LABEL: dnn.graph @unary(b = 4, d = 8) {
// CHECK-NEXT:    %x = dnn.input : !dnn.tensor<[b = 4, d = 8], f32>
// CHECK-NEXT:    %r = dnn.relu %x : (!dnn.tensor<[b = 4, d = 8], f32>) -> !dnn.tensor<[b = 4, d = 8], f32>
// CHECK-NEXT:    %g = dnn.gelu %r : (!dnn.tensor<[b = 4, d = 8], f32>) -> !dnn.tensor<[b = 4, d = 8], f32>
// CHECK-NEXT:    %t = dnn.tanh %g : (!dnn.tensor<[b = 4, d = 8], f32>) -> !dnn.tensor<[b = 4, d = 8], f32>
// CHECK-NEXT:    %s = dnn.sigmoid %t : (!dnn.tensor<[b = 4, d = 8], f32>) -> !dnn.tensor<[b = 4, d = 8], f32>
// CHECK-NEXT:    %e = dnn.exp %s : (!dnn.tensor<[b = 4, d = 8], f32>) -> !dnn.tensor<[b = 4, d = 8], f32>
// CHECK-NEXT:    %x64 = dnn.input : !dnn.tensor<[d = 8], f64>
// CHECK-NEXT:    %e64 = dnn.exp %x64 : (!dnn.tensor<[d = 8], f64>) -> !dnn.tensor<[d = 8], f64>
// CHECK-NEXT:    dnn.return %e, %e64 : !dnn.tensor<[b = 4, d = 8], f32>, !dnn.tensor<[d = 8], f64>
// CHECK-NEXT:  }
// GENERIC:     %r = "dnn.relu"(%x) : (!dnn.tensor<[b = 4, d = 8], f32>) -> !dnn.tensor<[b = 4, d = 8], f32>
// GENERIC:     %g = "dnn.gelu"(%r)
// GENERIC:     %t = "dnn.tanh"(%g)
// GENERIC:     %s = "dnn.sigmoid"(%t)
// GENERIC:     %e = "dnn.exp"(%s)

// -----

/// Binary ops broadcast by name: one operand's dims are all dims of the other; the result has the larger operand's dims (lhs's for the same set)

dnn.graph @binary(b = 4, s = 3, d = 8) {
  %x = dnn.input : !dnn.tensor<[b = 4, s = 3, d = 8], f32>
  %y = dnn.input : !dnn.tensor<[b = 4, s = 3, d = 8], f32>
  %bias = dnn.param : !dnn.tensor<[d = 8], f32>
  %row = dnn.input : !dnn.tensor<[s = 3, b = 4], f32>
  %same = dnn.add %x, %y : (!dnn.tensor<[b = 4, s = 3, d = 8], f32>, !dnn.tensor<[b = 4, s = 3, d = 8], f32>) -> !dnn.tensor<[b = 4, s = 3, d = 8], f32>
  %bcast = dnn.sub %x, %bias : (!dnn.tensor<[b = 4, s = 3, d = 8], f32>, !dnn.tensor<[d = 8], f32>) -> !dnn.tensor<[b = 4, s = 3, d = 8], f32>
  %lhs_small = dnn.mul %bias, %x : (!dnn.tensor<[d = 8], f32>, !dnn.tensor<[b = 4, s = 3, d = 8], f32>) -> !dnn.tensor<[b = 4, s = 3, d = 8], f32>
  %perm = dnn.add %row, %x : (!dnn.tensor<[s = 3, b = 4], f32>, !dnn.tensor<[b = 4, s = 3, d = 8], f32>) -> !dnn.tensor<[b = 4, s = 3, d = 8], f32>
  %x_sb = dnn.input : !dnn.tensor<[s = 3, b = 4], f32>
  %y_bs = dnn.input : !dnn.tensor<[b = 4, s = 3], f32>
  %same_set = dnn.add %x_sb, %y_bs : (!dnn.tensor<[s = 3, b = 4], f32>, !dnn.tensor<[b = 4, s = 3], f32>) -> !dnn.tensor<[s = 3, b = 4], f32>
  dnn.return %same, %bcast, %lhs_small, %perm, %same_set : !dnn.tensor<[b = 4, s = 3, d = 8], f32>, !dnn.tensor<[b = 4, s = 3, d = 8], f32>, !dnn.tensor<[b = 4, s = 3, d = 8], f32>, !dnn.tensor<[b = 4, s = 3, d = 8], f32>, !dnn.tensor<[s = 3, b = 4], f32>
}

// CHECK-LABEL: dnn.graph @binary(b = 4, s = 3, d = 8) {
// CHECK-NEXT:    %x = dnn.input : !dnn.tensor<[b = 4, s = 3, d = 8], f32>
// CHECK-NEXT:    %y = dnn.input : !dnn.tensor<[b = 4, s = 3, d = 8], f32>
// CHECK-NEXT:    %bias = dnn.param : !dnn.tensor<[d = 8], f32>
// CHECK-NEXT:    %row = dnn.input : !dnn.tensor<[s = 3, b = 4], f32>
// CHECK-NEXT:    %same = dnn.add %x, %y : (!dnn.tensor<[b = 4, s = 3, d = 8], f32>, !dnn.tensor<[b = 4, s = 3, d = 8], f32>) -> !dnn.tensor<[b = 4, s = 3, d = 8], f32>
// CHECK-NEXT:    %bcast = dnn.sub %x, %bias : (!dnn.tensor<[b = 4, s = 3, d = 8], f32>, !dnn.tensor<[d = 8], f32>) -> !dnn.tensor<[b = 4, s = 3, d = 8], f32>
// CHECK-NEXT:    %lhs_small = dnn.mul %bias, %x : (!dnn.tensor<[d = 8], f32>, !dnn.tensor<[b = 4, s = 3, d = 8], f32>) -> !dnn.tensor<[b = 4, s = 3, d = 8], f32>
// CHECK-NEXT:    %perm = dnn.add %row, %x : (!dnn.tensor<[s = 3, b = 4], f32>, !dnn.tensor<[b = 4, s = 3, d = 8], f32>) -> !dnn.tensor<[b = 4, s = 3, d = 8], f32>
// CHECK-NEXT:    %x_sb = dnn.input : !dnn.tensor<[s = 3, b = 4], f32>
// CHECK-NEXT:    %y_bs = dnn.input : !dnn.tensor<[b = 4, s = 3], f32>
// CHECK-NEXT:    %same_set = dnn.add %x_sb, %y_bs : (!dnn.tensor<[s = 3, b = 4], f32>, !dnn.tensor<[b = 4, s = 3], f32>) -> !dnn.tensor<[s = 3, b = 4], f32>
// CHECK-NEXT:    dnn.return %same, %bcast, %lhs_small, %perm, %same_set : !dnn.tensor<[b = 4, s = 3, d = 8], f32>, !dnn.tensor<[b = 4, s = 3, d = 8], f32>, !dnn.tensor<[b = 4, s = 3, d = 8], f32>, !dnn.tensor<[b = 4, s = 3, d = 8], f32>, !dnn.tensor<[s = 3, b = 4], f32>
// CHECK-NEXT:  }
// GENERIC:     %same = "dnn.add"(%x, %y)
// GENERIC:     %bcast = "dnn.sub"(%x, %bias) : (!dnn.tensor<[b = 4, s = 3, d = 8], f32>, !dnn.tensor<[d = 8], f32>) -> !dnn.tensor<[b = 4, s = 3, d = 8], f32>
// GENERIC:     %lhs_small = "dnn.mul"(%bias, %x) : (!dnn.tensor<[d = 8], f32>, !dnn.tensor<[b = 4, s = 3, d = 8], f32>) -> !dnn.tensor<[b = 4, s = 3, d = 8], f32>
// GENERIC:     %same_set = "dnn.add"(%x_sb, %y_bs) : (!dnn.tensor<[s = 3, b = 4], f32>, !dnn.tensor<[b = 4, s = 3], f32>) -> !dnn.tensor<[s = 3, b = 4], f32>
