// RUN: pase-opt %s --split-input-file --verify-diagnostics | filecheck %s

/// clip min above max

dnn.graph @g(b = 2, d = 3) {
  %x = dnn.input : !dnn.tensor<[b = 2, d = 3], f32>
  %y = dnn.clip %x min 6.0 max 0.0 : (!dnn.tensor<[b = 2, d = 3], f32>) -> !dnn.tensor<[b = 2, d = 3], f32>
  dnn.return %y : !dnn.tensor<[b = 2, d = 3], f32>
}

// CHECK: {{.*}}dnn-exported-invalid.mlir:7:3: error: 'dnn.clip' op clip min 6.0 must be at most its max 0.0

// -----

/// slice past the end of its dim

dnn.graph @g(b = 2, d = 6, e = 4) {
  %x = dnn.input : !dnn.tensor<[b = 2, d = 6], f32>
  %y = dnn.slice %x along d from 3 : (!dnn.tensor<[b = 2, d = 6], f32>) -> !dnn.tensor<[b = 2, e = 4], f32>
  dnn.return %y : !dnn.tensor<[b = 2, e = 4], f32>
}

// CHECK: {{.*}}dnn-exported-invalid.mlir:19:3: error: 'dnn.slice' op slice from 3 of 4 entries ('e') runs past 'd' (6)

// -----

/// slice along a dim its operand does not have

dnn.graph @g(b = 2, d = 6, e = 4) {
  %x = dnn.input : !dnn.tensor<[b = 2, d = 6], f32>
  %y = dnn.slice %x along e from 0 : (!dnn.tensor<[b = 2, d = 6], f32>) -> !dnn.tensor<[b = 2, e = 4], f32>
  dnn.return %y : !dnn.tensor<[b = 2, e = 4], f32>
}

// CHECK: {{.*}}dnn-exported-invalid.mlir:31:3: error: 'dnn.slice' op slice along 'e', which is not a dimension of [b, d]

// -----

/// mask causal over dims of different sizes

dnn.graph @g(b = 2, s = 4, t = 3) {
  %x = dnn.input : !dnn.tensor<[b = 2, s = 4, t = 3], f32>
  %y = dnn.mask causal %x over [s, t] fill 0.0 : (!dnn.tensor<[b = 2, s = 4, t = 3], f32>) -> !dnn.tensor<[b = 2, s = 4, t = 3], f32>
  dnn.return %y : !dnn.tensor<[b = 2, s = 4, t = 3], f32>
}

// CHECK: {{.*}}dnn-exported-invalid.mlir:43:3: error: 'dnn.mask' op mask causal needs 's' (4) and 't' (3) of one size

// -----

/// div broadcasts by name: one operand's dims must all be the other's

dnn.graph @g(b = 2, c = 3, e = 3) {
  %x = dnn.input : !dnn.tensor<[b = 2, c = 3], f32>
  %y = dnn.input : !dnn.tensor<[b = 2, e = 3], f32>
  %q = dnn.div %x, %y : (!dnn.tensor<[b = 2, c = 3], f32>, !dnn.tensor<[b = 2, e = 3], f32>) -> !dnn.tensor<[b = 2, c = 3], f32>
  dnn.return %q : !dnn.tensor<[b = 2, c = 3], f32>
}

// CHECK: {{.*}}dnn-exported-invalid.mlir:56:3: error: 'dnn.div' op div broadcasts by name, so the dims of one operand must all be dims of the other; [b, c] has [c] and [b, e] has [e]

// -----

/// sqrt takes floating-point tensors

dnn.graph @g(b = 2) {
  %x = dnn.input : !dnn.tensor<[b = 2], i32>
  %y = dnn.sqrt %x : (!dnn.tensor<[b = 2], i32>) -> !dnn.tensor<[b = 2], i32>
  dnn.return %y : !dnn.tensor<[b = 2], i32>
}

// CHECK: {{.*}}dnn-exported-invalid.mlir:68:3: error: 'dnn.sqrt' op sqrt takes floating-point tensors, got i32

// -----

/// rmsnorm's scale ranges over the normalized dims

dnn.graph @g(b = 2, d = 4) {
  %x = dnn.input : !dnn.tensor<[b = 2, d = 4], f32>
  %g = dnn.param : !dnn.tensor<[b = 2], f32>
  %y = dnn.rmsnorm %x, %g over [d] : (!dnn.tensor<[b = 2, d = 4], f32>, !dnn.tensor<[b = 2], f32>) -> !dnn.tensor<[b = 2, d = 4], f32>
  dnn.return %y : !dnn.tensor<[b = 2, d = 4], f32>
}

// CHECK: {{.*}}dnn-exported-invalid.mlir:81:3: error: 'dnn.rmsnorm' op rmsnorm scale must range over [d], got [b]

// -----

/// mask padding: keep must range over exactly the dims it names

dnn.graph @g(b = 2, s = 4, t = 4) {
  %x = dnn.input : !dnn.tensor<[b = 2, s = 4, t = 4], f32>
  %keep = dnn.input : !dnn.tensor<[b = 2, s = 4], i64>
  %y = dnn.mask padding %x, %keep over [b, t] fill 0.0 : (!dnn.tensor<[b = 2, s = 4, t = 4], f32>, !dnn.tensor<[b = 2, s = 4], i64>) -> !dnn.tensor<[b = 2, s = 4, t = 4], f32>
  dnn.return %y : !dnn.tensor<[b = 2, s = 4, t = 4], f32>
}

// CHECK: {{.*}}dnn-exported-invalid.mlir:94:3: error: 'dnn.mask' op mask padding's keep must have the dims over [b, t], got [b, s]

// -----

/// pad reflect by as many entries as the dim has

dnn.graph @g(b = 2, d = 3, e = 6) {
  %x = dnn.input : !dnn.tensor<[b = 2, d = 3], f32>
  %y = dnn.pad reflect %x along d before 3 after 0 : (!dnn.tensor<[b = 2, d = 3], f32>) -> !dnn.tensor<[b = 2, e = 6], f32>
  dnn.return %y : !dnn.tensor<[b = 2, e = 6], f32>
}

// CHECK: {{.*}}dnn-exported-invalid.mlir:106:3: error: 'dnn.pad' op pad reflect of 'd' (3) by 3 needs fewer entries than the dim has

// -----

/// pad to a size that is not the input's plus the pads

dnn.graph @g(b = 2, d = 3, e = 6) {
  %x = dnn.input : !dnn.tensor<[b = 2, d = 3], f32>
  %y = dnn.pad zeros %x along d before 1 after 1 : (!dnn.tensor<[b = 2, d = 3], f32>) -> !dnn.tensor<[b = 2, e = 6], f32>
  dnn.return %y : !dnn.tensor<[b = 2, e = 6], f32>
}

// CHECK: {{.*}}dnn-exported-invalid.mlir:118:3: error: 'dnn.pad' op pad of 'd' (3) by 1 before and 1 after gives 5 entries, not 'e' (6)

// -----

/// gru with one bias (it takes both or none)

dnn.graph @g(b = 2, s = 3, e = 4, l = 1, k = 8, n = 12) {
  %x = dnn.input : !dnn.tensor<[b = 2, s = 3, e = 4], f32>
  %w = dnn.param : !dnn.tensor<[l = 1, k = 8, n = 12], f32>
  %bi = dnn.param : !dnn.tensor<[l = 1, n = 12], f32>
  %y = dnn.gru %x, %w, %bi : (!dnn.tensor<[b = 2, s = 3, e = 4], f32>, !dnn.tensor<[l = 1, k = 8, n = 12], f32>, !dnn.tensor<[l = 1, n = 12], f32>) -> !dnn.tensor<[b = 2, s = 3, e = 4], f32>
  dnn.return %y : !dnn.tensor<[b = 2, s = 3, e = 4], f32>
}

// CHECK: {{.*}}dnn-exported-invalid.mlir:132:3: error: 'dnn.gru' op gru takes 2 operands, or 4 with the input and recurrent biases, got 3
