// RUN: PASE_ROUNDTRIP
// RUN: PASE_GENERIC_ROUNDTRIP
// RUN: pase-opt %s --split-input-file -p pase-autodiff | filecheck %s --check-prefix=VJP

/// a norm's epsilon is printed only where it is not the default 1e-5; the vjp keeps it

dnn.graph @eps(b = 2, s = 3, d = 8) {
  %x = dnn.input : !dnn.tensor<[b = 2, s = 3, d = 8], f32>
  %g = dnn.param : !dnn.tensor<[d = 8], f32>
  %beta = dnn.param : !dnn.tensor<[d = 8], f32>
  %y = dnn.layernorm %x, %g, %beta over [d] epsilon 1.0e-12 : (!dnn.tensor<[b = 2, s = 3, d = 8], f32>, !dnn.tensor<[d = 8], f32>, !dnn.tensor<[d = 8], f32>) -> !dnn.tensor<[b = 2, s = 3, d = 8], f32>
  %z = dnn.rmsnorm %y, %g over [d] epsilon 1.0e-06 : (!dnn.tensor<[b = 2, s = 3, d = 8], f32>, !dnn.tensor<[d = 8], f32>) -> !dnn.tensor<[b = 2, s = 3, d = 8], f32>
  %w = dnn.layernorm %z over [d] epsilon 1.0e-05 : (!dnn.tensor<[b = 2, s = 3, d = 8], f32>) -> !dnn.tensor<[b = 2, s = 3, d = 8], f32>
  %v = dnn.batchnorm %w over [b, s] epsilon 1.2345678e-07 : (!dnn.tensor<[b = 2, s = 3, d = 8], f32>) -> !dnn.tensor<[b = 2, s = 3, d = 8], f32>
  %l = dnn.reduce mean %v over [b, s, d] : (!dnn.tensor<[b = 2, s = 3, d = 8], f32>) -> !dnn.tensor<[], f32>
  dnn.return %l : !dnn.tensor<[], f32>
}

// CHECK-LABEL: dnn.graph @eps(b = 2, s = 3, d = 8) {
// CHECK:         %y = dnn.layernorm %x, %g, %beta over [d] epsilon 1.0e-12 : (
// CHECK-NEXT:    %z = dnn.rmsnorm %y, %g over [d] epsilon 1.0e-06 : (
// CHECK-NEXT:    %w = dnn.layernorm %z over [d] : (
// CHECK-NEXT:    %v = dnn.batchnorm %w over [b, s] epsilon 1.2345678e-07 : (
// GENERIC:     %y = "dnn.layernorm"(%x, %g, %beta) <{over = ["d"], epsilon = 1.000000e-12 : f64}>
// GENERIC:     %w = "dnn.layernorm"(%z) <{over = ["d"]}>
// VJP-DAG:     dnn.vjp "dnn.batchnorm" [0] (%w) -> %v grad %{{.*}} over [b, s] epsilon 1.2345678e-07 {
// VJP-DAG:     dnn.vjp "dnn.layernorm" [0] (%z) -> %w grad %{{.*}} over [d] {
// VJP-DAG:     dnn.vjp "dnn.rmsnorm" [0, 1] (%y, %g) -> %z grad %{{.*}} over [d] epsilon 1.0e-06 {
// VJP-DAG:     dnn.vjp "dnn.layernorm" [1, 2] (%x, %g, %beta) -> %y grad %{{.*}} over [d] epsilon 1.0e-12 {
