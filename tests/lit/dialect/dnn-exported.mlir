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
