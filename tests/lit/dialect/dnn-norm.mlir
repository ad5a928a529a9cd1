// RUN: PASE_ROUNDTRIP
// RUN: PASE_GENERIC_ROUNDTRIP

/// softmax over one and over several dimensions

dnn.graph @softmax(b = 4, h = 2, s = 3, t = 3) {
  %x = dnn.input : !dnn.tensor<[b = 4, h = 2, s = 3, t = 3], f32>
  %p = dnn.softmax %x over [t] : (!dnn.tensor<[b = 4, h = 2, s = 3, t = 3], f32>) -> !dnn.tensor<[b = 4, h = 2, s = 3, t = 3], f32>
  %q = dnn.softmax %x over [s, t] : (!dnn.tensor<[b = 4, h = 2, s = 3, t = 3], f32>) -> !dnn.tensor<[b = 4, h = 2, s = 3, t = 3], f32>
  dnn.return %p, %q : !dnn.tensor<[b = 4, h = 2, s = 3, t = 3], f32>, !dnn.tensor<[b = 4, h = 2, s = 3, t = 3], f32>
}

// CHECK-LABEL: dnn.graph @softmax(b = 4, h = 2, s = 3, t = 3) {
// CHECK-NEXT:    %x = dnn.input : !dnn.tensor<[b = 4, h = 2, s = 3, t = 3], f32>
// CHECK-NEXT:    %p = dnn.softmax %x over [t] : (!dnn.tensor<[b = 4, h = 2, s = 3, t = 3], f32>) -> !dnn.tensor<[b = 4, h = 2, s = 3, t = 3], f32>
// CHECK-NEXT:    %q = dnn.softmax %x over [s, t] : (!dnn.tensor<[b = 4, h = 2, s = 3, t = 3], f32>) -> !dnn.tensor<[b = 4, h = 2, s = 3, t = 3], f32>
// CHECK-NEXT:    dnn.return %p, %q : !dnn.tensor<[b = 4, h = 2, s = 3, t = 3], f32>, !dnn.tensor<[b = 4, h = 2, s = 3, t = 3], f32>
// CHECK-NEXT:  }
// GENERIC:     %p = "dnn.softmax"(%x) <{over = ["t"]}>
// GENERIC:     %q = "dnn.softmax"(%x) <{over = ["s", "t"]}>

// -----

/// layernorm with and without scale and bias

dnn.graph @layernorm(b = 4, s = 3, d = 8) {
  %x = dnn.input : !dnn.tensor<[b = 4, s = 3, d = 8], f32>
  %g = dnn.param : !dnn.tensor<[d = 8], f32>
  %beta = dnn.param : !dnn.tensor<[d = 8], f32>
  %y = dnn.layernorm %x, %g, %beta over [d] : (!dnn.tensor<[b = 4, s = 3, d = 8], f32>, !dnn.tensor<[d = 8], f32>, !dnn.tensor<[d = 8], f32>) -> !dnn.tensor<[b = 4, s = 3, d = 8], f32>
  %z = dnn.layernorm %y over [d] : (!dnn.tensor<[b = 4, s = 3, d = 8], f32>) -> !dnn.tensor<[b = 4, s = 3, d = 8], f32>
  dnn.return %z : !dnn.tensor<[b = 4, s = 3, d = 8], f32>
}

// CHECK-LABEL: dnn.graph @layernorm(b = 4, s = 3, d = 8) {
// CHECK-NEXT:    %x = dnn.input : !dnn.tensor<[b = 4, s = 3, d = 8], f32>
// CHECK-NEXT:    %g = dnn.param : !dnn.tensor<[d = 8], f32>
// CHECK-NEXT:    %beta = dnn.param : !dnn.tensor<[d = 8], f32>
// CHECK-NEXT:    %y = dnn.layernorm %x, %g, %beta over [d] : (!dnn.tensor<[b = 4, s = 3, d = 8], f32>, !dnn.tensor<[d = 8], f32>, !dnn.tensor<[d = 8], f32>) -> !dnn.tensor<[b = 4, s = 3, d = 8], f32>
// CHECK-NEXT:    %z = dnn.layernorm %y over [d] : (!dnn.tensor<[b = 4, s = 3, d = 8], f32>) -> !dnn.tensor<[b = 4, s = 3, d = 8], f32>
// CHECK-NEXT:    dnn.return %z : !dnn.tensor<[b = 4, s = 3, d = 8], f32>
// CHECK-NEXT:  }
// GENERIC:     %y = "dnn.layernorm"(%x, %g, %beta) <{over = ["d"]}>
// GENERIC:     %z = "dnn.layernorm"(%y) <{over = ["d"]}>

// -----

/// batchnorm with and without scale and bias; they range over the channels

dnn.graph @batchnorm(b = 4, c = 6, h = 5, w = 5) {
  %x = dnn.input : !dnn.tensor<[b = 4, c = 6, h = 5, w = 5], f32>
  %g = dnn.param : !dnn.tensor<[c = 6], f32>
  %beta = dnn.param : !dnn.tensor<[c = 6], f32>
  %y = dnn.batchnorm %x, %g, %beta over [b, h, w] : (!dnn.tensor<[b = 4, c = 6, h = 5, w = 5], f32>, !dnn.tensor<[c = 6], f32>, !dnn.tensor<[c = 6], f32>) -> !dnn.tensor<[b = 4, c = 6, h = 5, w = 5], f32>
  %z = dnn.batchnorm %y over [b, h, w] : (!dnn.tensor<[b = 4, c = 6, h = 5, w = 5], f32>) -> !dnn.tensor<[b = 4, c = 6, h = 5, w = 5], f32>
  dnn.return %z : !dnn.tensor<[b = 4, c = 6, h = 5, w = 5], f32>
}

// CHECK-LABEL: dnn.graph @batchnorm(b = 4, c = 6, h = 5, w = 5) {
// CHECK-NEXT:    %x = dnn.input : !dnn.tensor<[b = 4, c = 6, h = 5, w = 5], f32>
// CHECK-NEXT:    %g = dnn.param : !dnn.tensor<[c = 6], f32>
// CHECK-NEXT:    %beta = dnn.param : !dnn.tensor<[c = 6], f32>
// CHECK-NEXT:    %y = dnn.batchnorm %x, %g, %beta over [b, h, w] : (!dnn.tensor<[b = 4, c = 6, h = 5, w = 5], f32>, !dnn.tensor<[c = 6], f32>, !dnn.tensor<[c = 6], f32>) -> !dnn.tensor<[b = 4, c = 6, h = 5, w = 5], f32>
// CHECK-NEXT:    %z = dnn.batchnorm %y over [b, h, w] : (!dnn.tensor<[b = 4, c = 6, h = 5, w = 5], f32>) -> !dnn.tensor<[b = 4, c = 6, h = 5, w = 5], f32>
// CHECK-NEXT:    dnn.return %z : !dnn.tensor<[b = 4, c = 6, h = 5, w = 5], f32>
// CHECK-NEXT:  }
// GENERIC:     %y = "dnn.batchnorm"(%x, %g, %beta) <{over = ["b", "h", "w"]}>
// GENERIC:     %z = "dnn.batchnorm"(%y) <{over = ["b", "h", "w"]}>

// -----

/// reduce sum and mean drop the reduced dimensions

dnn.graph @reduce(b = 4, s = 3, d = 8) {
  %x = dnn.input : !dnn.tensor<[b = 4, s = 3, d = 8], f32>
  %s = dnn.reduce sum %x over [s] : (!dnn.tensor<[b = 4, s = 3, d = 8], f32>) -> !dnn.tensor<[b = 4, d = 8], f32>
  %m = dnn.reduce mean %x over [b, d] : (!dnn.tensor<[b = 4, s = 3, d = 8], f32>) -> !dnn.tensor<[s = 3], f32>
  dnn.return %s, %m : !dnn.tensor<[b = 4, d = 8], f32>, !dnn.tensor<[s = 3], f32>
}

// CHECK-LABEL: dnn.graph @reduce(b = 4, s = 3, d = 8) {
// CHECK-NEXT:    %x = dnn.input : !dnn.tensor<[b = 4, s = 3, d = 8], f32>
// CHECK-NEXT:    %s = dnn.reduce sum %x over [s] : (!dnn.tensor<[b = 4, s = 3, d = 8], f32>) -> !dnn.tensor<[b = 4, d = 8], f32>
// CHECK-NEXT:    %m = dnn.reduce mean %x over [b, d] : (!dnn.tensor<[b = 4, s = 3, d = 8], f32>) -> !dnn.tensor<[s = 3], f32>
// CHECK-NEXT:    dnn.return %s, %m : !dnn.tensor<[b = 4, d = 8], f32>, !dnn.tensor<[s = 3], f32>
// CHECK-NEXT:  }
// GENERIC:     %s = "dnn.reduce"(%x) <{kind = "sum", over = ["s"]}> : (!dnn.tensor<[b = 4, s = 3, d = 8], f32>) -> !dnn.tensor<[b = 4, d = 8], f32>
// GENERIC:     %m = "dnn.reduce"(%x) <{kind = "mean", over = ["b", "d"]}> : (!dnn.tensor<[b = 4, s = 3, d = 8], f32>) -> !dnn.tensor<[s = 3], f32>
