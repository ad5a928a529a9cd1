// RUN: PASE_ROUNDTRIP
// RUN: PASE_GENERIC_ROUNDTRIP

/// clip: ReLU6 and negative bounds, printed with a point before any exponent

dnn.graph @clip(b = 4, d = 8) {
  %x = dnn.input : !dnn.tensor<[b = 4, d = 8], f32>
  %r6 = dnn.clip %x min 0.0 max 6.0 : (!dnn.tensor<[b = 4, d = 8], f32>) -> !dnn.tensor<[b = 4, d = 8], f32>
  %c = dnn.clip %r6 min -1.0e-05 max 2.5e+20 : (!dnn.tensor<[b = 4, d = 8], f32>) -> !dnn.tensor<[b = 4, d = 8], f32>
  dnn.return %c : !dnn.tensor<[b = 4, d = 8], f32>
}

// CHECK-LABEL: dnn.graph @clip(b = 4, d = 8) {
// CHECK-NEXT:    %x = dnn.input : !dnn.tensor<[b = 4, d = 8], f32>
// CHECK-NEXT:    %r6 = dnn.clip %x min 0.0 max 6.0 : (!dnn.tensor<[b = 4, d = 8], f32>) -> !dnn.tensor<[b = 4, d = 8], f32>
// CHECK-NEXT:    %c = dnn.clip %r6 min -1.0e-05 max 2.5e+20 : (!dnn.tensor<[b = 4, d = 8], f32>) -> !dnn.tensor<[b = 4, d = 8], f32>
// GENERIC:     %r6 = "dnn.clip"(%x) <{min = 0.000000e+00 : f64, max = 6.000000e+00 : f64}>

// -----

/// slice: a range along one dim, replaced in place by a new dim

dnn.graph @slice(b = 4, e3 = 12, e = 4, p = 6, s = 2) {
  %x = dnn.input : !dnn.tensor<[b = 4, e3 = 12], f32>
  %k = dnn.slice %x along e3 from 4 : (!dnn.tensor<[b = 4, e3 = 12], f32>) -> !dnn.tensor<[b = 4, e = 4], f32>
  %t = dnn.param : !dnn.tensor<[p = 6, e = 4], f32>
  %pos = dnn.slice %t along p from 0 : (!dnn.tensor<[p = 6, e = 4], f32>) -> !dnn.tensor<[s = 2, e = 4], f32>
  dnn.return %k, %pos : !dnn.tensor<[b = 4, e = 4], f32>, !dnn.tensor<[s = 2, e = 4], f32>
}

// CHECK-LABEL: dnn.graph @slice(b = 4, e3 = 12, e = 4, p = 6, s = 2) {
// CHECK:         %k = dnn.slice %x along e3 from 4 : (!dnn.tensor<[b = 4, e3 = 12], f32>) -> !dnn.tensor<[b = 4, e = 4], f32>
// CHECK:         %pos = dnn.slice %t along p from 0 : (!dnn.tensor<[p = 6, e = 4], f32>) -> !dnn.tensor<[s = 2, e = 4], f32>
// GENERIC:     %k = "dnn.slice"(%x) <{dim = "e3", start = #builtin.int<4>}>

// -----

/// mask causal: over [query, key], a fill; mask padding: by a keep tensor over [batch, key]

dnn.graph @mask(b = 2, s = 4, t = 4) {
  %x = dnn.input : !dnn.tensor<[b = 2, s = 4, t = 4], f32>
  %keep = dnn.input : !dnn.tensor<[b = 2, t = 4], i64>
  %m = dnn.mask causal %x over [s, t] fill -1.0e+09 : (!dnn.tensor<[b = 2, s = 4, t = 4], f32>) -> !dnn.tensor<[b = 2, s = 4, t = 4], f32>
  %p = dnn.mask padding %m, %keep over [b, t] fill -1.0e+09 : (!dnn.tensor<[b = 2, s = 4, t = 4], f32>, !dnn.tensor<[b = 2, t = 4], i64>) -> !dnn.tensor<[b = 2, s = 4, t = 4], f32>
  dnn.return %p : !dnn.tensor<[b = 2, s = 4, t = 4], f32>
}

// CHECK-LABEL: dnn.graph @mask(b = 2, s = 4, t = 4) {
// CHECK:         %m = dnn.mask causal %x over [s, t] fill -1000000000.0 : (!dnn.tensor<[b = 2, s = 4, t = 4], f32>) -> !dnn.tensor<[b = 2, s = 4, t = 4], f32>
// CHECK-NEXT:    %p = dnn.mask padding %m, %keep over [b, t] fill -1000000000.0 : (!dnn.tensor<[b = 2, s = 4, t = 4], f32>, !dnn.tensor<[b = 2, t = 4], i64>) -> !dnn.tensor<[b = 2, s = 4, t = 4], f32>
// GENERIC:     %m = "dnn.mask"(%x) <{kind = "causal", over = ["s", "t"], fill = -1.000000e+09 : f64}>
// GENERIC:     %p = "dnn.mask"(%m, %keep) <{kind = "padding", over = ["b", "t"], fill = -1.000000e+09 : f64}>

// -----

/// div (broadcasting by name), sqrt, neg, pow with a constant exponent

dnn.graph @arithmetic(b = 4, d = 8) {
  %x = dnn.input : !dnn.tensor<[b = 4, d = 8], f32>
  %v = dnn.param : !dnn.tensor<[d = 8], f32>
  %q = dnn.div %x, %v : (!dnn.tensor<[b = 4, d = 8], f32>, !dnn.tensor<[d = 8], f32>) -> !dnn.tensor<[b = 4, d = 8], f32>
  %r = dnn.sqrt %q : (!dnn.tensor<[b = 4, d = 8], f32>) -> !dnn.tensor<[b = 4, d = 8], f32>
  %n = dnn.neg %r : (!dnn.tensor<[b = 4, d = 8], f32>) -> !dnn.tensor<[b = 4, d = 8], f32>
  %p = dnn.pow %n exponent 2.0 : (!dnn.tensor<[b = 4, d = 8], f32>) -> !dnn.tensor<[b = 4, d = 8], f32>
  dnn.return %p : !dnn.tensor<[b = 4, d = 8], f32>
}

// CHECK-LABEL: dnn.graph @arithmetic(b = 4, d = 8) {
// CHECK:         %q = dnn.div %x, %v : (!dnn.tensor<[b = 4, d = 8], f32>, !dnn.tensor<[d = 8], f32>) -> !dnn.tensor<[b = 4, d = 8], f32>
// CHECK-NEXT:    %r = dnn.sqrt %q : (!dnn.tensor<[b = 4, d = 8], f32>) -> !dnn.tensor<[b = 4, d = 8], f32>
// CHECK-NEXT:    %n = dnn.neg %r : (!dnn.tensor<[b = 4, d = 8], f32>) -> !dnn.tensor<[b = 4, d = 8], f32>
// CHECK-NEXT:    %p = dnn.pow %n exponent 2.0 : (!dnn.tensor<[b = 4, d = 8], f32>) -> !dnn.tensor<[b = 4, d = 8], f32>
// GENERIC:     %p = "dnn.pow"(%n) <{exponent = 2.000000e+00 : f64}>

// -----

/// rmsnorm with a scale over the normalized dims, and without

dnn.graph @rmsnorm(b = 4, s = 2, d = 8) {
  %x = dnn.input : !dnn.tensor<[b = 4, s = 2, d = 8], f32>
  %g = dnn.param : !dnn.tensor<[d = 8], f32>
  %y = dnn.rmsnorm %x, %g over [d] : (!dnn.tensor<[b = 4, s = 2, d = 8], f32>, !dnn.tensor<[d = 8], f32>) -> !dnn.tensor<[b = 4, s = 2, d = 8], f32>
  %z = dnn.rmsnorm %y over [s, d] : (!dnn.tensor<[b = 4, s = 2, d = 8], f32>) -> !dnn.tensor<[b = 4, s = 2, d = 8], f32>
  dnn.return %z : !dnn.tensor<[b = 4, s = 2, d = 8], f32>
}

// CHECK-LABEL: dnn.graph @rmsnorm(b = 4, s = 2, d = 8) {
// CHECK:         %y = dnn.rmsnorm %x, %g over [d] : (!dnn.tensor<[b = 4, s = 2, d = 8], f32>, !dnn.tensor<[d = 8], f32>) -> !dnn.tensor<[b = 4, s = 2, d = 8], f32>
// CHECK-NEXT:    %z = dnn.rmsnorm %y over [s, d] : (!dnn.tensor<[b = 4, s = 2, d = 8], f32>) -> !dnn.tensor<[b = 4, s = 2, d = 8], f32>
// GENERIC:     %y = "dnn.rmsnorm"(%x, %g) <{over = ["d"]}>

// -----

/// pad: zeros, the edge or a reflection along one dim, replaced by a new dim

dnn.graph @pad(b = 2, c = 3, h = 4, h1 = 5, w = 4, w1 = 7) {
  %x = dnn.input : !dnn.tensor<[b = 2, c = 3, h = 4, w = 4], f32>
  %z = dnn.pad zeros %x along h before 0 after 1 : (!dnn.tensor<[b = 2, c = 3, h = 4, w = 4], f32>) -> !dnn.tensor<[b = 2, c = 3, h1 = 5, w = 4], f32>
  %r = dnn.pad reflect %z along w before 2 after 1 : (!dnn.tensor<[b = 2, c = 3, h1 = 5, w = 4], f32>) -> !dnn.tensor<[b = 2, c = 3, h1 = 5, w1 = 7], f32>
  dnn.return %r : !dnn.tensor<[b = 2, c = 3, h1 = 5, w1 = 7], f32>
}

// CHECK-LABEL: dnn.graph @pad(b = 2, c = 3, h = 4, h1 = 5, w = 4, w1 = 7) {
// CHECK:         %z = dnn.pad zeros %x along h before 0 after 1 : (!dnn.tensor<[b = 2, c = 3, h = 4, w = 4], f32>) -> !dnn.tensor<[b = 2, c = 3, h1 = 5, w = 4], f32>
// CHECK-NEXT:    %r = dnn.pad reflect %z along w before 2 after 1 : (!dnn.tensor<[b = 2, c = 3, h1 = 5, w = 4], f32>) -> !dnn.tensor<[b = 2, c = 3, h1 = 5, w1 = 7], f32>
// GENERIC:     %z = "dnn.pad"(%x) <{kind = "zeros", dim = "h", before = #builtin.int<0>, after = #builtin.int<1>}>

// -----

/// gru: the weight [l, 2e, 3e], and the input and recurrent biases [l, 3e] or none

dnn.graph @gru(b = 2, s = 3, e = 4, l = 1, k = 8, n = 12) {
  %x = dnn.input : !dnn.tensor<[b = 2, s = 3, e = 4], f32>
  %w = dnn.param : !dnn.tensor<[l = 1, k = 8, n = 12], f32>
  %bi = dnn.param : !dnn.tensor<[l = 1, n = 12], f32>
  %bh = dnn.param : !dnn.tensor<[l = 1, n = 12], f32>
  %y = dnn.gru %x, %w, %bi, %bh : (!dnn.tensor<[b = 2, s = 3, e = 4], f32>, !dnn.tensor<[l = 1, k = 8, n = 12], f32>, !dnn.tensor<[l = 1, n = 12], f32>, !dnn.tensor<[l = 1, n = 12], f32>) -> !dnn.tensor<[b = 2, s = 3, e = 4], f32>
  %z = dnn.gru %y, %w : (!dnn.tensor<[b = 2, s = 3, e = 4], f32>, !dnn.tensor<[l = 1, k = 8, n = 12], f32>) -> !dnn.tensor<[b = 2, s = 3, e = 4], f32>
  dnn.return %z : !dnn.tensor<[b = 2, s = 3, e = 4], f32>
}

// CHECK-LABEL: dnn.graph @gru(b = 2, s = 3, e = 4, l = 1, k = 8, n = 12) {
// CHECK:         %y = dnn.gru %x, %w, %bi, %bh : (!dnn.tensor<[b = 2, s = 3, e = 4], f32>, !dnn.tensor<[l = 1, k = 8, n = 12], f32>, !dnn.tensor<[l = 1, n = 12], f32>, !dnn.tensor<[l = 1, n = 12], f32>) -> !dnn.tensor<[b = 2, s = 3, e = 4], f32>
// CHECK-NEXT:    %z = dnn.gru %y, %w : (!dnn.tensor<[b = 2, s = 3, e = 4], f32>, !dnn.tensor<[l = 1, k = 8, n = 12], f32>) -> !dnn.tensor<[b = 2, s = 3, e = 4], f32>
