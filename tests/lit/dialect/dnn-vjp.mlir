// RUN: PASE_ROUNDTRIP
// RUN: PASE_GENERIC_ROUNDTRIP

/// the loss's vjp leaves out its incoming gradient (the gradient of a scalar loss is 1);
/// the relu's takes one with `grad`; dnn.sgd steps a parameter

dnn.graph @mlp(b = 8, h = 16, c = 4) {
  %t = dnn.input : !dnn.tensor<[b = 8], i32>
  %h = dnn.input : !dnn.tensor<[b = 8, h = 16], f32>
  %a = dnn.relu %h : (!dnn.tensor<[b = 8, h = 16], f32>) -> !dnn.tensor<[b = 8, h = 16], f32>
  %w = dnn.param : !dnn.tensor<[h = 16, c = 4], f32>
  %z = dnn.einsum %a, %w : (!dnn.tensor<[b = 8, h = 16], f32>, !dnn.tensor<[h = 16, c = 4], f32>) -> !dnn.tensor<[b = 8, c = 4], f32>
  %l = dnn.softmax_cross_entropy %z, %t over [c] : (!dnn.tensor<[b = 8, c = 4], f32>, !dnn.tensor<[b = 8], i32>) -> !dnn.tensor<[], f32>
  %dz = dnn.vjp "dnn.softmax_cross_entropy" [0] (%z, %t) -> %l over [c] {pase.layer = "l"} : (!dnn.tensor<[b = 8, c = 4], f32>, !dnn.tensor<[b = 8], i32>), !dnn.tensor<[], f32> -> (!dnn.tensor<[b = 8, c = 4], f32>)
  %da = dnn.einsum %dz, %w {pase.layer = "z", pase.grid_order = ["b", "c", "h"]} : (!dnn.tensor<[b = 8, c = 4], f32>, !dnn.tensor<[h = 16, c = 4], f32>) -> !dnn.tensor<[b = 8, h = 16], f32>
  %dw = dnn.einsum %dz, %a {pase.layer = "z", pase.grid_order = ["b", "c", "h"]} : (!dnn.tensor<[b = 8, c = 4], f32>, !dnn.tensor<[b = 8, h = 16], f32>) -> !dnn.tensor<[h = 16, c = 4], f32>
  %dh = dnn.vjp "dnn.relu" [0] (%h) -> %a grad %da {pase.layer = "a"} : (!dnn.tensor<[b = 8, h = 16], f32>), !dnn.tensor<[b = 8, h = 16], f32> -> (!dnn.tensor<[b = 8, h = 16], f32>)
  %w_next = dnn.sgd %w, %dw lr 5.000000e-01 : f64 {pase.layout_of = #pase.layout<"z", operand 1>} : (!dnn.tensor<[h = 16, c = 4], f32>, !dnn.tensor<[h = 16, c = 4], f32>) -> !dnn.tensor<[h = 16, c = 4], f32>
  dnn.return %l, %w_next : !dnn.tensor<[], f32>, !dnn.tensor<[h = 16, c = 4], f32>
}

// CHECK-LABEL: dnn.graph @mlp(b = 8, h = 16, c = 4) {
// CHECK-NEXT:    %t = dnn.input : !dnn.tensor<[b = 8], i32>
// CHECK-NEXT:    %h = dnn.input : !dnn.tensor<[b = 8, h = 16], f32>
// CHECK-NEXT:    %a = dnn.relu %h : (!dnn.tensor<[b = 8, h = 16], f32>) -> !dnn.tensor<[b = 8, h = 16], f32>
// CHECK-NEXT:    %w = dnn.param : !dnn.tensor<[h = 16, c = 4], f32>
// CHECK-NEXT:    %z = dnn.einsum %a, %w : (!dnn.tensor<[b = 8, h = 16], f32>, !dnn.tensor<[h = 16, c = 4], f32>) -> !dnn.tensor<[b = 8, c = 4], f32>
// CHECK-NEXT:    %l = dnn.softmax_cross_entropy %z, %t over [c] : (!dnn.tensor<[b = 8, c = 4], f32>, !dnn.tensor<[b = 8], i32>) -> !dnn.tensor<[], f32>
// CHECK-NEXT:    %dz = dnn.vjp "dnn.softmax_cross_entropy" [0] (%z, %t) -> %l over [c] {pase.layer = "l"} : (!dnn.tensor<[b = 8, c = 4], f32>, !dnn.tensor<[b = 8], i32>), !dnn.tensor<[], f32> -> (!dnn.tensor<[b = 8, c = 4], f32>)
// CHECK-NEXT:    %da = dnn.einsum %dz, %w {pase.layer = "z", pase.grid_order = ["b", "c", "h"]} : (!dnn.tensor<[b = 8, c = 4], f32>, !dnn.tensor<[h = 16, c = 4], f32>) -> !dnn.tensor<[b = 8, h = 16], f32>
// CHECK-NEXT:    %dw = dnn.einsum %dz, %a {pase.layer = "z", pase.grid_order = ["b", "c", "h"]} : (!dnn.tensor<[b = 8, c = 4], f32>, !dnn.tensor<[b = 8, h = 16], f32>) -> !dnn.tensor<[h = 16, c = 4], f32>
// CHECK-NEXT:    %dh = dnn.vjp "dnn.relu" [0] (%h) -> %a grad %da {pase.layer = "a"} : (!dnn.tensor<[b = 8, h = 16], f32>), !dnn.tensor<[b = 8, h = 16], f32> -> (!dnn.tensor<[b = 8, h = 16], f32>)
// CHECK-NEXT:    %w_next = dnn.sgd %w, %dw lr 5.000000e-01 : f64 {pase.layout_of = #pase.layout<"z", operand 1>} : (!dnn.tensor<[h = 16, c = 4], f32>, !dnn.tensor<[h = 16, c = 4], f32>) -> !dnn.tensor<[h = 16, c = 4], f32>
// CHECK-NEXT:    dnn.return %l, %w_next : !dnn.tensor<[], f32>, !dnn.tensor<[h = 16, c = 4], f32>
// CHECK-NEXT:  }
// GENERIC:      %dz = "dnn.vjp"(%z, %t, %l) <{over = ["c"], forward = "dnn.softmax_cross_entropy", wrt = [#builtin.int<0>], operandSegmentSizes = array<i32: 2, 1, 0>}> {pase.layer = "l"} : (!dnn.tensor<[b = 8, c = 4], f32>, !dnn.tensor<[b = 8], i32>, !dnn.tensor<[], f32>) -> !dnn.tensor<[b = 8, c = 4], f32>
// GENERIC:      %dh = "dnn.vjp"(%h, %a, %da) <{forward = "dnn.relu", wrt = [#builtin.int<0>], operandSegmentSizes = array<i32: 1, 1, 1>}> {pase.layer = "a"} : (!dnn.tensor<[b = 8, h = 16], f32>, !dnn.tensor<[b = 8, h = 16], f32>, !dnn.tensor<[b = 8, h = 16], f32>) -> !dnn.tensor<[b = 8, h = 16], f32>
// GENERIC-NEXT: %w_next = "dnn.sgd"(%w, %dw) <{lr = 5.000000e-01 : f64}> {pase.layout_of = #pase.layout<"z", operand 1>} : (!dnn.tensor<[h = 16, c = 4], f32>, !dnn.tensor<[h = 16, c = 4], f32>) -> !dnn.tensor<[h = 16, c = 4], f32>

// -----

/// conv2d: the clauses follow the operands in the forward op's syntax; a padding pair
/// that differs per spatial dim stays a pair; gradients of one or both operands

dnn.graph @conv(b = 2, ci = 3, co = 4, h = 8, w = 8, r = 3, s = 3, ho = 4, wo = 4, r1 = 1) {
  %x = dnn.input : !dnn.tensor<[b = 2, ci = 3, h = 8, w = 8], f32>
  %f = dnn.param : !dnn.tensor<[co = 4, ci = 3, r = 3, s = 3], f32>
  %y = dnn.conv2d %x, %f stride 2 padding 1 : (!dnn.tensor<[b = 2, ci = 3, h = 8, w = 8], f32>, !dnn.tensor<[co = 4, ci = 3, r = 3, s = 3], f32>) -> !dnn.tensor<[b = 2, co = 4, ho = 4, wo = 4], f32>
  %dy = dnn.input : !dnn.tensor<[b = 2, co = 4, ho = 4, wo = 4], f32>
  %dx, %df = dnn.vjp "dnn.conv2d" [0, 1] (%x, %f) -> %y grad %dy stride 2 padding 1 {pase.config = #pase.config<b = 2>, pase.layer = "y"} : (!dnn.tensor<[b = 2, ci = 3, h = 8, w = 8], f32>, !dnn.tensor<[co = 4, ci = 3, r = 3, s = 3], f32>), !dnn.tensor<[b = 2, co = 4, ho = 4, wo = 4], f32> -> (!dnn.tensor<[b = 2, ci = 3, h = 8, w = 8], f32>, !dnn.tensor<[co = 4, ci = 3, r = 3, s = 3], f32>)
  %g = dnn.param : !dnn.tensor<[co = 4, ci = 3, r1 = 1, s = 3], f32>
  %u = dnn.conv2d %x, %g stride 1 padding [0, 1] : (!dnn.tensor<[b = 2, ci = 3, h = 8, w = 8], f32>, !dnn.tensor<[co = 4, ci = 3, r1 = 1, s = 3], f32>) -> !dnn.tensor<[b = 2, co = 4, h = 8, w = 8], f32>
  %du = dnn.input : !dnn.tensor<[b = 2, co = 4, h = 8, w = 8], f32>
  %dg = dnn.vjp "dnn.conv2d" [1] (%x, %g) -> %u grad %du stride 1 padding [0, 1] : (!dnn.tensor<[b = 2, ci = 3, h = 8, w = 8], f32>, !dnn.tensor<[co = 4, ci = 3, r1 = 1, s = 3], f32>), !dnn.tensor<[b = 2, co = 4, h = 8, w = 8], f32> -> (!dnn.tensor<[co = 4, ci = 3, r1 = 1, s = 3], f32>)
  dnn.return %dx, %df, %dg : !dnn.tensor<[b = 2, ci = 3, h = 8, w = 8], f32>, !dnn.tensor<[co = 4, ci = 3, r = 3, s = 3], f32>, !dnn.tensor<[co = 4, ci = 3, r1 = 1, s = 3], f32>
}

// CHECK-LABEL: dnn.graph @conv(b = 2, ci = 3, co = 4, h = 8, w = 8, r = 3, s = 3, ho = 4, wo = 4, r1 = 1) {
// CHECK-NEXT:    %x = dnn.input : !dnn.tensor<[b = 2, ci = 3, h = 8, w = 8], f32>
// CHECK-NEXT:    %f = dnn.param : !dnn.tensor<[co = 4, ci = 3, r = 3, s = 3], f32>
// CHECK-NEXT:    %y = dnn.conv2d %x, %f stride 2 padding 1 : (!dnn.tensor<[b = 2, ci = 3, h = 8, w = 8], f32>, !dnn.tensor<[co = 4, ci = 3, r = 3, s = 3], f32>) -> !dnn.tensor<[b = 2, co = 4, ho = 4, wo = 4], f32>
// CHECK-NEXT:    %dy = dnn.input : !dnn.tensor<[b = 2, co = 4, ho = 4, wo = 4], f32>
// CHECK-NEXT:    %dx, %df = dnn.vjp "dnn.conv2d" [0, 1] (%x, %f) -> %y grad %dy stride 2 padding 1 {pase.config = #pase.config<b = 2>, pase.layer = "y"} : (!dnn.tensor<[b = 2, ci = 3, h = 8, w = 8], f32>, !dnn.tensor<[co = 4, ci = 3, r = 3, s = 3], f32>), !dnn.tensor<[b = 2, co = 4, ho = 4, wo = 4], f32> -> (!dnn.tensor<[b = 2, ci = 3, h = 8, w = 8], f32>, !dnn.tensor<[co = 4, ci = 3, r = 3, s = 3], f32>)
// CHECK-NEXT:    %g = dnn.param : !dnn.tensor<[co = 4, ci = 3, r1 = 1, s = 3], f32>
// CHECK-NEXT:    %u = dnn.conv2d %x, %g stride 1 padding [0, 1] : (!dnn.tensor<[b = 2, ci = 3, h = 8, w = 8], f32>, !dnn.tensor<[co = 4, ci = 3, r1 = 1, s = 3], f32>) -> !dnn.tensor<[b = 2, co = 4, h = 8, w = 8], f32>
// CHECK-NEXT:    %du = dnn.input : !dnn.tensor<[b = 2, co = 4, h = 8, w = 8], f32>
// CHECK-NEXT:    %dg = dnn.vjp "dnn.conv2d" [1] (%x, %g) -> %u grad %du stride 1 padding [0, 1] : (!dnn.tensor<[b = 2, ci = 3, h = 8, w = 8], f32>, !dnn.tensor<[co = 4, ci = 3, r1 = 1, s = 3], f32>), !dnn.tensor<[b = 2, co = 4, h = 8, w = 8], f32> -> (!dnn.tensor<[co = 4, ci = 3, r1 = 1, s = 3], f32>)
// CHECK-NEXT:    dnn.return %dx, %df, %dg : !dnn.tensor<[b = 2, ci = 3, h = 8, w = 8], f32>, !dnn.tensor<[co = 4, ci = 3, r = 3, s = 3], f32>, !dnn.tensor<[co = 4, ci = 3, r1 = 1, s = 3], f32>
// CHECK-NEXT:  }
// GENERIC:      %dx, %df = "dnn.vjp"(%x, %f, %y, %dy) <{stride = #builtin.int<2>, padding = [#builtin.int<1>, #builtin.int<1>], forward = "dnn.conv2d", wrt = [#builtin.int<0>, #builtin.int<1>], operandSegmentSizes = array<i32: 2, 1, 1>}> {pase.config = #pase.config<b = 2>, pase.layer = "y"}
// GENERIC:      %dg = "dnn.vjp"(%x, %g, %u, %du) <{stride = #builtin.int<1>, padding = [#builtin.int<0>, #builtin.int<1>], forward = "dnn.conv2d", wrt = [#builtin.int<1>], operandSegmentSizes = array<i32: 2, 1, 1>}>

// -----

/// softmax over several dims and layernorm with scale and bias, wrt all three operands

dnn.graph @norm(b = 2, s = 3, t = 3, d = 8) {
  %x = dnn.input : !dnn.tensor<[b = 2, s = 3, t = 3], f32>
  %p = dnn.softmax %x over [s, t] : (!dnn.tensor<[b = 2, s = 3, t = 3], f32>) -> !dnn.tensor<[b = 2, s = 3, t = 3], f32>
  %dp = dnn.input : !dnn.tensor<[b = 2, s = 3, t = 3], f32>
  %dx = dnn.vjp "dnn.softmax" [0] (%x) -> %p grad %dp over [s, t] {pase.layer = "p"} : (!dnn.tensor<[b = 2, s = 3, t = 3], f32>), !dnn.tensor<[b = 2, s = 3, t = 3], f32> -> (!dnn.tensor<[b = 2, s = 3, t = 3], f32>)
  %m = dnn.input : !dnn.tensor<[b = 2, d = 8], f32>
  %g = dnn.param : !dnn.tensor<[d = 8], f32>
  %beta = dnn.param : !dnn.tensor<[d = 8], f32>
  %n = dnn.layernorm %m, %g, %beta over [d] : (!dnn.tensor<[b = 2, d = 8], f32>, !dnn.tensor<[d = 8], f32>, !dnn.tensor<[d = 8], f32>) -> !dnn.tensor<[b = 2, d = 8], f32>
  %dn = dnn.input : !dnn.tensor<[b = 2, d = 8], f32>
  %dm, %dg, %dbeta = dnn.vjp "dnn.layernorm" [0, 1, 2] (%m, %g, %beta) -> %n grad %dn over [d] {pase.config = #pase.config<b = 2>, pase.layer = "n"} : (!dnn.tensor<[b = 2, d = 8], f32>, !dnn.tensor<[d = 8], f32>, !dnn.tensor<[d = 8], f32>), !dnn.tensor<[b = 2, d = 8], f32> -> (!dnn.tensor<[b = 2, d = 8], f32>, !dnn.tensor<[d = 8], f32>, !dnn.tensor<[d = 8], f32>)
  %g_next = dnn.sgd %g, %dg lr 1.000000e-02 : f64 {pase.layout_of = #pase.layout<"n", operand 1>} : (!dnn.tensor<[d = 8], f32>, !dnn.tensor<[d = 8], f32>) -> !dnn.tensor<[d = 8], f32>
  dnn.return %dx, %dm, %g_next, %dbeta : !dnn.tensor<[b = 2, s = 3, t = 3], f32>, !dnn.tensor<[b = 2, d = 8], f32>, !dnn.tensor<[d = 8], f32>, !dnn.tensor<[d = 8], f32>
}

// CHECK-LABEL: dnn.graph @norm(b = 2, s = 3, t = 3, d = 8) {
// CHECK-NEXT:    %x = dnn.input : !dnn.tensor<[b = 2, s = 3, t = 3], f32>
// CHECK-NEXT:    %p = dnn.softmax %x over [s, t] : (!dnn.tensor<[b = 2, s = 3, t = 3], f32>) -> !dnn.tensor<[b = 2, s = 3, t = 3], f32>
// CHECK-NEXT:    %dp = dnn.input : !dnn.tensor<[b = 2, s = 3, t = 3], f32>
// CHECK-NEXT:    %dx = dnn.vjp "dnn.softmax" [0] (%x) -> %p grad %dp over [s, t] {pase.layer = "p"} : (!dnn.tensor<[b = 2, s = 3, t = 3], f32>), !dnn.tensor<[b = 2, s = 3, t = 3], f32> -> (!dnn.tensor<[b = 2, s = 3, t = 3], f32>)
// CHECK-NEXT:    %m = dnn.input : !dnn.tensor<[b = 2, d = 8], f32>
// CHECK-NEXT:    %g = dnn.param : !dnn.tensor<[d = 8], f32>
// CHECK-NEXT:    %beta = dnn.param : !dnn.tensor<[d = 8], f32>
// CHECK-NEXT:    %n = dnn.layernorm %m, %g, %beta over [d] : (!dnn.tensor<[b = 2, d = 8], f32>, !dnn.tensor<[d = 8], f32>, !dnn.tensor<[d = 8], f32>) -> !dnn.tensor<[b = 2, d = 8], f32>
// CHECK-NEXT:    %dn = dnn.input : !dnn.tensor<[b = 2, d = 8], f32>
// CHECK-NEXT:    %dm, %dg, %dbeta = dnn.vjp "dnn.layernorm" [0, 1, 2] (%m, %g, %beta) -> %n grad %dn over [d] {pase.config = #pase.config<b = 2>, pase.layer = "n"} : (!dnn.tensor<[b = 2, d = 8], f32>, !dnn.tensor<[d = 8], f32>, !dnn.tensor<[d = 8], f32>), !dnn.tensor<[b = 2, d = 8], f32> -> (!dnn.tensor<[b = 2, d = 8], f32>, !dnn.tensor<[d = 8], f32>, !dnn.tensor<[d = 8], f32>)
// CHECK-NEXT:    %g_next = dnn.sgd %g, %dg lr 1.000000e-02 : f64 {pase.layout_of = #pase.layout<"n", operand 1>} : (!dnn.tensor<[d = 8], f32>, !dnn.tensor<[d = 8], f32>) -> !dnn.tensor<[d = 8], f32>
// CHECK-NEXT:    dnn.return %dx, %dm, %g_next, %dbeta : !dnn.tensor<[b = 2, s = 3, t = 3], f32>, !dnn.tensor<[b = 2, d = 8], f32>, !dnn.tensor<[d = 8], f32>, !dnn.tensor<[d = 8], f32>
// CHECK-NEXT:  }
// GENERIC:      %dx = "dnn.vjp"(%x, %p, %dp) <{over = ["s", "t"], forward = "dnn.softmax", wrt = [#builtin.int<0>], operandSegmentSizes = array<i32: 1, 1, 1>}> {pase.layer = "p"}
// GENERIC:      %dm, %dg, %dbeta = "dnn.vjp"(%m, %g, %beta, %n, %dn) <{over = ["d"], forward = "dnn.layernorm", wrt = [#builtin.int<0>, #builtin.int<1>, #builtin.int<2>], operandSegmentSizes = array<i32: 3, 1, 1>}> {pase.config = #pase.config<b = 2>, pase.layer = "n"}
// GENERIC-NEXT: %g_next = "dnn.sgd"(%g, %dg) <{lr = 1.000000e-02 : f64}> {pase.layout_of = #pase.layout<"n", operand 1>}
