// RUN: PASE_ROUNDTRIP
// RUN: PASE_GENERIC_ROUNDTRIP

/// dnn.update with momentum: one state tensor (the velocity m) of the parameter's type;
/// results: the parameter, then the state

dnn.graph @momentum(d = 8, c = 2) {
  %w = dnn.param : !dnn.tensor<[d = 8, c = 2], f32>
  %dw = dnn.input : !dnn.tensor<[d = 8, c = 2], f32>
  %w_m = dnn.param : !dnn.tensor<[d = 8, c = 2], f32>
  %w_next, %w_m_next = dnn.update "momentum" %w, %dw state(%w_m) lr 1.000000e-02 : f64 beta1 9.000000e-01 : f64 : (!dnn.tensor<[d = 8, c = 2], f32>, !dnn.tensor<[d = 8, c = 2], f32>, !dnn.tensor<[d = 8, c = 2], f32>) -> (!dnn.tensor<[d = 8, c = 2], f32>, !dnn.tensor<[d = 8, c = 2], f32>)
  dnn.return %w_next, %w_m_next : !dnn.tensor<[d = 8, c = 2], f32>, !dnn.tensor<[d = 8, c = 2], f32>
}

// CHECK-LABEL: dnn.graph @momentum(d = 8, c = 2) {
// CHECK-NEXT:    %w = dnn.param : !dnn.tensor<[d = 8, c = 2], f32>
// CHECK-NEXT:    %dw = dnn.input : !dnn.tensor<[d = 8, c = 2], f32>
// CHECK-NEXT:    %w_m = dnn.param : !dnn.tensor<[d = 8, c = 2], f32>
// CHECK-NEXT:    %w_next, %w_m_next = dnn.update "momentum" %w, %dw state(%w_m) lr 1.000000e-02 : f64 beta1 9.000000e-01 : f64 : (!dnn.tensor<[d = 8, c = 2], f32>, !dnn.tensor<[d = 8, c = 2], f32>, !dnn.tensor<[d = 8, c = 2], f32>) -> (!dnn.tensor<[d = 8, c = 2], f32>, !dnn.tensor<[d = 8, c = 2], f32>)
// CHECK-NEXT:    dnn.return %w_next, %w_m_next : !dnn.tensor<[d = 8, c = 2], f32>, !dnn.tensor<[d = 8, c = 2], f32>
// CHECK-NEXT:  }
// GENERIC:      %w_next, %w_m_next = "dnn.update"(%w, %dw, %w_m) <{optimizer = "momentum", lr = 1.000000e-02 : f64, beta1 = 9.000000e-01 : f64}> : (!dnn.tensor<[d = 8, c = 2], f32>, !dnn.tensor<[d = 8, c = 2], f32>, !dnn.tensor<[d = 8, c = 2], f32>) -> (!dnn.tensor<[d = 8, c = 2], f32>, !dnn.tensor<[d = 8, c = 2], f32>)

// -----

/// dnn.update with Adam: the moments m and v of the parameter's type and the step count t,
/// a scalar; beta2 and eps; pase-autodiff's attributes; f64

dnn.graph @adam(b = 4, d = 8, c = 2) {
  %x = dnn.input : !dnn.tensor<[b = 4, d = 8], f64>
  %w = dnn.param : !dnn.tensor<[d = 8, c = 2], f64>
  %z = dnn.einsum %x, %w : (!dnn.tensor<[b = 4, d = 8], f64>, !dnn.tensor<[d = 8, c = 2], f64>) -> !dnn.tensor<[b = 4, c = 2], f64>
  %dw = dnn.einsum %x, %z {pase.layer = "z", pase.grid_order = ["b", "c", "d"]} : (!dnn.tensor<[b = 4, d = 8], f64>, !dnn.tensor<[b = 4, c = 2], f64>) -> !dnn.tensor<[d = 8, c = 2], f64>
  %w_m = dnn.param : !dnn.tensor<[d = 8, c = 2], f64>
  %w_v = dnn.param : !dnn.tensor<[d = 8, c = 2], f64>
  %w_t = dnn.param : !dnn.tensor<[], f64>
  %w_next, %w_m_next, %w_v_next, %w_t_next = dnn.update "adam" %w, %dw state(%w_m, %w_v, %w_t) lr 1.000000e-03 : f64 beta1 9.000000e-01 : f64 beta2 9.990000e-01 : f64 eps 1.000000e-08 : f64 {pase.layout_of = #pase.layout<"z", operand 1>} : (!dnn.tensor<[d = 8, c = 2], f64>, !dnn.tensor<[d = 8, c = 2], f64>, !dnn.tensor<[d = 8, c = 2], f64>, !dnn.tensor<[d = 8, c = 2], f64>, !dnn.tensor<[], f64>) -> (!dnn.tensor<[d = 8, c = 2], f64>, !dnn.tensor<[d = 8, c = 2], f64>, !dnn.tensor<[d = 8, c = 2], f64>, !dnn.tensor<[], f64>)
  dnn.return %w_next, %w_m_next, %w_v_next, %w_t_next : !dnn.tensor<[d = 8, c = 2], f64>, !dnn.tensor<[d = 8, c = 2], f64>, !dnn.tensor<[d = 8, c = 2], f64>, !dnn.tensor<[], f64>
}

// CHECK-LABEL: dnn.graph @adam(b = 4, d = 8, c = 2) {
// CHECK:         %w_t = dnn.param : !dnn.tensor<[], f64>
// CHECK-NEXT:    %w_next, %w_m_next, %w_v_next, %w_t_next = dnn.update "adam" %w, %dw state(%w_m, %w_v, %w_t) lr 1.000000e-03 : f64 beta1 9.000000e-01 : f64 beta2 9.990000e-01 : f64 eps 1.000000e-08 : f64 {pase.layout_of = #pase.layout<"z", operand 1>} : (!dnn.tensor<[d = 8, c = 2], f64>, !dnn.tensor<[d = 8, c = 2], f64>, !dnn.tensor<[d = 8, c = 2], f64>, !dnn.tensor<[d = 8, c = 2], f64>, !dnn.tensor<[], f64>) -> (!dnn.tensor<[d = 8, c = 2], f64>, !dnn.tensor<[d = 8, c = 2], f64>, !dnn.tensor<[d = 8, c = 2], f64>, !dnn.tensor<[], f64>)
// CHECK-NEXT:    dnn.return %w_next, %w_m_next, %w_v_next, %w_t_next
// GENERIC:      "dnn.update"(%w, %dw, %w_m, %w_v, %w_t) <{optimizer = "adam", lr = 1.000000e-03 : f64, beta1 = 9.000000e-01 : f64, beta2 = 9.990000e-01 : f64, eps = 1.000000e-08 : f64}> {pase.layout_of = #pase.layout<"z", operand 1>}

// -----

/// dnn.broadcast repeats its operand along the result's new dims (ViT's class token);
/// the unary and binary elementwise ops over the broadcast value

dnn.graph @vit(b = 2, one = 1, e = 4) {
  %g = dnn.param : !dnn.tensor<[e = 4], f32>
  %tok = dnn.broadcast %g : (!dnn.tensor<[e = 4], f32>) -> !dnn.tensor<[b = 2, one = 1, e = 4], f32>
  %y = dnn.tanh %tok : (!dnn.tensor<[b = 2, one = 1, e = 4], f32>) -> !dnn.tensor<[b = 2, one = 1, e = 4], f32>
  %s = dnn.sigmoid %y : (!dnn.tensor<[b = 2, one = 1, e = 4], f32>) -> !dnn.tensor<[b = 2, one = 1, e = 4], f32>
  %x = dnn.exp %s : (!dnn.tensor<[b = 2, one = 1, e = 4], f32>) -> !dnn.tensor<[b = 2, one = 1, e = 4], f32>
  %m = dnn.mul %x, %g : (!dnn.tensor<[b = 2, one = 1, e = 4], f32>, !dnn.tensor<[e = 4], f32>) -> !dnn.tensor<[b = 2, one = 1, e = 4], f32>
  %n = dnn.neg %m : (!dnn.tensor<[b = 2, one = 1, e = 4], f32>) -> !dnn.tensor<[b = 2, one = 1, e = 4], f32>
  %p = dnn.pow %n exponent 2.0 : (!dnn.tensor<[b = 2, one = 1, e = 4], f32>) -> !dnn.tensor<[b = 2, one = 1, e = 4], f32>
  dnn.return %p : !dnn.tensor<[b = 2, one = 1, e = 4], f32>
}

// CHECK-LABEL: dnn.graph @vit(b = 2, one = 1, e = 4) {
// CHECK-NEXT:    %g = dnn.param : !dnn.tensor<[e = 4], f32>
// CHECK-NEXT:    %tok = dnn.broadcast %g : (!dnn.tensor<[e = 4], f32>) -> !dnn.tensor<[b = 2, one = 1, e = 4], f32>
// CHECK-NEXT:    %y = dnn.tanh %tok
// CHECK-NEXT:    %s = dnn.sigmoid %y
// CHECK-NEXT:    %x = dnn.exp %s
// CHECK-NEXT:    %m = dnn.mul %x, %g : (!dnn.tensor<[b = 2, one = 1, e = 4], f32>, !dnn.tensor<[e = 4], f32>) -> !dnn.tensor<[b = 2, one = 1, e = 4], f32>
// CHECK-NEXT:    %n = dnn.neg %m
// CHECK-NEXT:    %p = dnn.pow %n exponent 2.0 : (!dnn.tensor<[b = 2, one = 1, e = 4], f32>) -> !dnn.tensor<[b = 2, one = 1, e = 4], f32>
// CHECK-NEXT:    dnn.return %p
// GENERIC:      %tok = "dnn.broadcast"(%g) : (!dnn.tensor<[e = 4], f32>) -> !dnn.tensor<[b = 2, one = 1, e = 4], f32>
