// RUN: PASE_ROUNDTRIP
// RUN: PASE_GENERIC_ROUNDTRIP

/// conv2d with stride and padding, with the defaults (stride 1, padding 0), and with padding per spatial dim

dnn.graph @conv(b = 2, ci = 3, co = 8, h = 9, w = 9, r = 3, s = 3, ho = 5, wo = 5, hv = 7, wv = 7, r1 = 1, s7 = 7, wk = 9) {
  %x = dnn.input : !dnn.tensor<[b = 2, ci = 3, h = 9, w = 9], f32>
  %f = dnn.param : !dnn.tensor<[co = 8, ci = 3, r = 3, s = 3], f32>
  %same = dnn.conv2d %x, %f stride 2 padding 1 : (!dnn.tensor<[b = 2, ci = 3, h = 9, w = 9], f32>, !dnn.tensor<[co = 8, ci = 3, r = 3, s = 3], f32>) -> !dnn.tensor<[b = 2, co = 8, ho = 5, wo = 5], f32>
  %valid = dnn.conv2d %x, %f stride 1 padding 0 : (!dnn.tensor<[b = 2, ci = 3, h = 9, w = 9], f32>, !dnn.tensor<[co = 8, ci = 3, r = 3, s = 3], f32>) -> !dnn.tensor<[b = 2, co = 8, hv = 7, wv = 7], f32>
  %f17 = dnn.param : !dnn.tensor<[co = 8, ci = 3, r1 = 1, s7 = 7], f32>
  %keep_width = dnn.conv2d %x, %f17 stride 1 padding [0, 3] : (!dnn.tensor<[b = 2, ci = 3, h = 9, w = 9], f32>, !dnn.tensor<[co = 8, ci = 3, r1 = 1, s7 = 7], f32>) -> !dnn.tensor<[b = 2, co = 8, h = 9, wk = 9], f32>
  dnn.return %same, %valid, %keep_width : !dnn.tensor<[b = 2, co = 8, ho = 5, wo = 5], f32>, !dnn.tensor<[b = 2, co = 8, hv = 7, wv = 7], f32>, !dnn.tensor<[b = 2, co = 8, h = 9, wk = 9], f32>
}

// CHECK-LABEL: dnn.graph @conv(b = 2, ci = 3, co = 8, h = 9, w = 9, r = 3, s = 3, ho = 5, wo = 5, hv = 7, wv = 7, r1 = 1, s7 = 7, wk = 9) {
// CHECK-NEXT:    %x = dnn.input : !dnn.tensor<[b = 2, ci = 3, h = 9, w = 9], f32>
// CHECK-NEXT:    %f = dnn.param : !dnn.tensor<[co = 8, ci = 3, r = 3, s = 3], f32>
// CHECK-NEXT:    %same = dnn.conv2d %x, %f stride 2 padding 1 : (!dnn.tensor<[b = 2, ci = 3, h = 9, w = 9], f32>, !dnn.tensor<[co = 8, ci = 3, r = 3, s = 3], f32>) -> !dnn.tensor<[b = 2, co = 8, ho = 5, wo = 5], f32>
// CHECK-NEXT:    %valid = dnn.conv2d %x, %f stride 1 padding 0 : (!dnn.tensor<[b = 2, ci = 3, h = 9, w = 9], f32>, !dnn.tensor<[co = 8, ci = 3, r = 3, s = 3], f32>) -> !dnn.tensor<[b = 2, co = 8, hv = 7, wv = 7], f32>
// CHECK-NEXT:    %f17 = dnn.param : !dnn.tensor<[co = 8, ci = 3, r1 = 1, s7 = 7], f32>
// CHECK-NEXT:    %keep_width = dnn.conv2d %x, %f17 stride 1 padding [0, 3] : (!dnn.tensor<[b = 2, ci = 3, h = 9, w = 9], f32>, !dnn.tensor<[co = 8, ci = 3, r1 = 1, s7 = 7], f32>) -> !dnn.tensor<[b = 2, co = 8, h = 9, wk = 9], f32>
// CHECK-NEXT:    dnn.return %same, %valid, %keep_width : !dnn.tensor<[b = 2, co = 8, ho = 5, wo = 5], f32>, !dnn.tensor<[b = 2, co = 8, hv = 7, wv = 7], f32>, !dnn.tensor<[b = 2, co = 8, h = 9, wk = 9], f32>
// CHECK-NEXT:  }
// GENERIC:     %same = "dnn.conv2d"(%x, %f) <{stride = #builtin.int<2>, padding = [#builtin.int<1>, #builtin.int<1>]}>
// GENERIC:     %valid = "dnn.conv2d"(%x, %f) <{stride = #builtin.int<1>, padding = [#builtin.int<0>, #builtin.int<0>]}>
// GENERIC:     %keep_width = "dnn.conv2d"(%x, %f17) <{stride = #builtin.int<1>, padding = [#builtin.int<0>, #builtin.int<3>]}>

// -----

/// pool2d max and avg, with a rectangular window and padding

dnn.graph @pool(b = 2, c = 4, h = 8, w = 8, ho = 4, wo = 4, hp = 5, wp = 4) {
  %x = dnn.input : !dnn.tensor<[b = 2, c = 4, h = 8, w = 8], f32>
  %m = dnn.pool2d max %x window [2, 2] stride 2 padding 0 : (!dnn.tensor<[b = 2, c = 4, h = 8, w = 8], f32>) -> !dnn.tensor<[b = 2, c = 4, ho = 4, wo = 4], f32>
  %a = dnn.pool2d avg %x window [2, 3] stride 2 padding 1 : (!dnn.tensor<[b = 2, c = 4, h = 8, w = 8], f32>) -> !dnn.tensor<[b = 2, c = 4, hp = 5, wp = 4], f32>
  dnn.return %m, %a : !dnn.tensor<[b = 2, c = 4, ho = 4, wo = 4], f32>, !dnn.tensor<[b = 2, c = 4, hp = 5, wp = 4], f32>
}

// CHECK-LABEL: dnn.graph @pool(b = 2, c = 4, h = 8, w = 8, ho = 4, wo = 4, hp = 5, wp = 4) {
// CHECK-NEXT:    %x = dnn.input : !dnn.tensor<[b = 2, c = 4, h = 8, w = 8], f32>
// CHECK-NEXT:    %m = dnn.pool2d max %x window [2, 2] stride 2 padding 0 : (!dnn.tensor<[b = 2, c = 4, h = 8, w = 8], f32>) -> !dnn.tensor<[b = 2, c = 4, ho = 4, wo = 4], f32>
// CHECK-NEXT:    %a = dnn.pool2d avg %x window [2, 3] stride 2 padding 1 : (!dnn.tensor<[b = 2, c = 4, h = 8, w = 8], f32>) -> !dnn.tensor<[b = 2, c = 4, hp = 5, wp = 4], f32>
// CHECK-NEXT:    dnn.return %m, %a : !dnn.tensor<[b = 2, c = 4, ho = 4, wo = 4], f32>, !dnn.tensor<[b = 2, c = 4, hp = 5, wp = 4], f32>
// CHECK-NEXT:  }
// GENERIC:     %m = "dnn.pool2d"(%x) <{kind = "max", window = [#builtin.int<2>, #builtin.int<2>], stride = #builtin.int<2>, padding = [#builtin.int<0>, #builtin.int<0>]}>
// GENERIC:     %a = "dnn.pool2d"(%x) <{kind = "avg", window = [#builtin.int<2>, #builtin.int<3>], stride = #builtin.int<2>, padding = [#builtin.int<1>, #builtin.int<1>]}>

// -----

/// grouped convolutions: depthwise (groups = channels, the same channel dim in and out), a 1x1 with genuine size-1 filter dims, and groups 1 left out

dnn.graph @grouped(b = 2, c = 4, h = 5, w = 5, one = 1, r = 3, s = 3, g = 8, c2 = 2, one2 = 1) {
  %x = dnn.input : !dnn.tensor<[b = 2, c = 4, h = 5, w = 5], f32>
  %f = dnn.param : !dnn.tensor<[c = 4, one = 1, r = 3, s = 3], f32>
  %dw = dnn.conv2d %x, %f stride 1 padding 1 groups 4 : (!dnn.tensor<[b = 2, c = 4, h = 5, w = 5], f32>, !dnn.tensor<[c = 4, one = 1, r = 3, s = 3], f32>) -> !dnn.tensor<[b = 2, c = 4, h = 5, w = 5], f32>
  %p = dnn.param : !dnn.tensor<[g = 8, c2 = 2, one = 1, one2 = 1], f32>
  %gr = dnn.conv2d %dw, %p stride 1 padding 0 groups 2 : (!dnn.tensor<[b = 2, c = 4, h = 5, w = 5], f32>, !dnn.tensor<[g = 8, c2 = 2, one = 1, one2 = 1], f32>) -> !dnn.tensor<[b = 2, g = 8, h = 5, w = 5], f32>
  %q = dnn.param : !dnn.tensor<[g = 8, c = 4, one = 1, one2 = 1], f32>
  %pw = dnn.conv2d %x, %q stride 1 padding 0 groups 1 : (!dnn.tensor<[b = 2, c = 4, h = 5, w = 5], f32>, !dnn.tensor<[g = 8, c = 4, one = 1, one2 = 1], f32>) -> !dnn.tensor<[b = 2, g = 8, h = 5, w = 5], f32>
  dnn.return %gr, %pw : !dnn.tensor<[b = 2, g = 8, h = 5, w = 5], f32>, !dnn.tensor<[b = 2, g = 8, h = 5, w = 5], f32>
}

// CHECK-LABEL: dnn.graph @grouped(b = 2, c = 4, h = 5, w = 5, one = 1, r = 3, s = 3, g = 8, c2 = 2, one2 = 1) {
// CHECK:         %dw = dnn.conv2d %x, %f stride 1 padding 1 groups 4 : (!dnn.tensor<[b = 2, c = 4, h = 5, w = 5], f32>, !dnn.tensor<[c = 4, one = 1, r = 3, s = 3], f32>) -> !dnn.tensor<[b = 2, c = 4, h = 5, w = 5], f32>
// CHECK:         %gr = dnn.conv2d %dw, %p stride 1 padding 0 groups 2 : (!dnn.tensor<[b = 2, c = 4, h = 5, w = 5], f32>, !dnn.tensor<[g = 8, c2 = 2, one = 1, one2 = 1], f32>) -> !dnn.tensor<[b = 2, g = 8, h = 5, w = 5], f32>
// CHECK:         %pw = dnn.conv2d %x, %q stride 1 padding 0 : (!dnn.tensor<[b = 2, c = 4, h = 5, w = 5], f32>, !dnn.tensor<[g = 8, c = 4, one = 1, one2 = 1], f32>) -> !dnn.tensor<[b = 2, g = 8, h = 5, w = 5], f32>
// GENERIC:     %dw = "dnn.conv2d"(%x, %f) <{stride = #builtin.int<1>, padding = [#builtin.int<1>, #builtin.int<1>], groups = #builtin.int<4>}>
// GENERIC:     %pw = "dnn.conv2d"(%x, %q) <{stride = #builtin.int<1>, padding = [#builtin.int<0>, #builtin.int<0>]}>
