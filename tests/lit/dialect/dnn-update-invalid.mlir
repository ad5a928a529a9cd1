// RUN: pase-opt %s --split-input-file --verify-diagnostics | filecheck %s

/// dnn.update: runs momentum or adam

dnn.graph @g(d = 8) {
  %w = dnn.param : !dnn.tensor<[d = 8], f32>
  %dw = dnn.input : !dnn.tensor<[d = 8], f32>
  %w_m = dnn.param : !dnn.tensor<[d = 8], f32>
  %w_next, %w_m_next = dnn.update "lamb" %w, %dw state(%w_m) lr 1.000000e-02 : f64 beta1 9.000000e-01 : f64 : (!dnn.tensor<[d = 8], f32>, !dnn.tensor<[d = 8], f32>, !dnn.tensor<[d = 8], f32>) -> (!dnn.tensor<[d = 8], f32>, !dnn.tensor<[d = 8], f32>)
  dnn.return %w_next : !dnn.tensor<[d = 8], f32>
}

// CHECK: {{.*}}dnn-update-invalid.mlir:9:3: error: 'dnn.update' op dnn.update runs momentum or adam, not 'lamb'

// -----

/// dnn.update: adam takes three state tensors and returns four values

dnn.graph @g(d = 8) {
  %w = dnn.param : !dnn.tensor<[d = 8], f32>
  %dw = dnn.input : !dnn.tensor<[d = 8], f32>
  %w_m = dnn.param : !dnn.tensor<[d = 8], f32>
  %w_next, %w_m_next = dnn.update "adam" %w, %dw state(%w_m) lr 1.000000e-02 : f64 beta1 9.000000e-01 : f64 beta2 9.990000e-01 : f64 eps 1.000000e-08 : f64 : (!dnn.tensor<[d = 8], f32>, !dnn.tensor<[d = 8], f32>, !dnn.tensor<[d = 8], f32>) -> (!dnn.tensor<[d = 8], f32>, !dnn.tensor<[d = 8], f32>)
  dnn.return %w_next : !dnn.tensor<[d = 8], f32>
}

// CHECK: {{.*}}dnn-update-invalid.mlir:23:3: error: 'dnn.update' op dnn.update adam takes 3 state tensors (m, v, t) and returns the parameter and each state

// -----

/// dnn.update: the parameter, its gradient and the first result have one type

dnn.graph @g(d = 8) {
  %w = dnn.param : !dnn.tensor<[d = 8], f32>
  %dw = dnn.input : !dnn.tensor<[d = 8], f64>
  %w_m = dnn.param : !dnn.tensor<[d = 8], f32>
  %w_next, %w_m_next = dnn.update "momentum" %w, %dw state(%w_m) lr 1.000000e-02 : f64 beta1 9.000000e-01 : f64 : (!dnn.tensor<[d = 8], f32>, !dnn.tensor<[d = 8], f64>, !dnn.tensor<[d = 8], f32>) -> (!dnn.tensor<[d = 8], f32>, !dnn.tensor<[d = 8], f32>)
  dnn.return %w_next : !dnn.tensor<[d = 8], f32>
}

// CHECK: {{.*}}dnn-update-invalid.mlir:37:3: error: 'dnn.update' op dnn.update needs the parameter, its gradient and the first result to have one type

// -----

/// dnn.update: adam's step count t is a scalar

dnn.graph @g(d = 8) {
  %w = dnn.param : !dnn.tensor<[d = 8], f32>
  %dw = dnn.input : !dnn.tensor<[d = 8], f32>
  %w_m = dnn.param : !dnn.tensor<[d = 8], f32>
  %w_v = dnn.param : !dnn.tensor<[d = 8], f32>
  %w_t = dnn.param : !dnn.tensor<[d = 8], f32>
  %w_next, %w_m_next, %w_v_next, %w_t_next = dnn.update "adam" %w, %dw state(%w_m, %w_v, %w_t) lr 1.000000e-03 : f64 beta1 9.000000e-01 : f64 beta2 9.990000e-01 : f64 eps 1.000000e-08 : f64 : (!dnn.tensor<[d = 8], f32>, !dnn.tensor<[d = 8], f32>, !dnn.tensor<[d = 8], f32>, !dnn.tensor<[d = 8], f32>, !dnn.tensor<[d = 8], f32>) -> (!dnn.tensor<[d = 8], f32>, !dnn.tensor<[d = 8], f32>, !dnn.tensor<[d = 8], f32>, !dnn.tensor<[d = 8], f32>)
  dnn.return %w_next : !dnn.tensor<[d = 8], f32>
}

// CHECK: {{.*}}dnn-update-invalid.mlir:53:3: error: 'dnn.update' op dnn.update's state t and its result must have the type !dnn.tensor<[], f32>

// -----

/// dnn.update: momentum's velocity has the parameter's type

dnn.graph @g(d = 8, e = 8) {
  %w = dnn.param : !dnn.tensor<[d = 8], f32>
  %dw = dnn.input : !dnn.tensor<[d = 8], f32>
  %w_m = dnn.param : !dnn.tensor<[e = 8], f32>
  %w_next, %w_m_next = dnn.update "momentum" %w, %dw state(%w_m) lr 1.000000e-02 : f64 beta1 9.000000e-01 : f64 : (!dnn.tensor<[d = 8], f32>, !dnn.tensor<[d = 8], f32>, !dnn.tensor<[e = 8], f32>) -> (!dnn.tensor<[d = 8], f32>, !dnn.tensor<[e = 8], f32>)
  dnn.return %w_next : !dnn.tensor<[d = 8], f32>
}

// CHECK: {{.*}}dnn-update-invalid.mlir:67:3: error: 'dnn.update' op dnn.update's state m and its result must have the type !dnn.tensor<[d = 8], f32>

// -----

/// dnn.update: beta1 is in [0, 1)

dnn.graph @g(d = 8) {
  %w = dnn.param : !dnn.tensor<[d = 8], f32>
  %dw = dnn.input : !dnn.tensor<[d = 8], f32>
  %w_m = dnn.param : !dnn.tensor<[d = 8], f32>
  %w_next, %w_m_next = dnn.update "momentum" %w, %dw state(%w_m) lr 1.000000e-02 : f64 beta1 1.000000e+00 : f64 : (!dnn.tensor<[d = 8], f32>, !dnn.tensor<[d = 8], f32>, !dnn.tensor<[d = 8], f32>) -> (!dnn.tensor<[d = 8], f32>, !dnn.tensor<[d = 8], f32>)
  dnn.return %w_next : !dnn.tensor<[d = 8], f32>
}

// CHECK: {{.*}}dnn-update-invalid.mlir:81:3: error: 'dnn.update' op dnn.update beta1 must be a finite number in [0, 1), got 1.0

// -----

/// dnn.update: eps is above 0

dnn.graph @g(d = 8) {
  %w = dnn.param : !dnn.tensor<[d = 8], f32>
  %dw = dnn.input : !dnn.tensor<[d = 8], f32>
  %w_m = dnn.param : !dnn.tensor<[d = 8], f32>
  %w_v = dnn.param : !dnn.tensor<[d = 8], f32>
  %w_t = dnn.param : !dnn.tensor<[], f32>
  %w_next, %w_m_next, %w_v_next, %w_t_next = dnn.update "adam" %w, %dw state(%w_m, %w_v, %w_t) lr 1.000000e-03 : f64 beta1 9.000000e-01 : f64 beta2 9.990000e-01 : f64 eps 0.000000e+00 : f64 : (!dnn.tensor<[d = 8], f32>, !dnn.tensor<[d = 8], f32>, !dnn.tensor<[d = 8], f32>, !dnn.tensor<[d = 8], f32>, !dnn.tensor<[], f32>) -> (!dnn.tensor<[d = 8], f32>, !dnn.tensor<[d = 8], f32>, !dnn.tensor<[d = 8], f32>, !dnn.tensor<[], f32>)
  dnn.return %w_next : !dnn.tensor<[d = 8], f32>
}

// CHECK: {{.*}}dnn-update-invalid.mlir:97:3: error: 'dnn.update' op dnn.update eps must be a finite number above 0, got 0.0

// -----

/// dnn.update: lr is at least 0

dnn.graph @g(d = 8) {
  %w = dnn.param : !dnn.tensor<[d = 8], f32>
  %dw = dnn.input : !dnn.tensor<[d = 8], f32>
  %w_m = dnn.param : !dnn.tensor<[d = 8], f32>
  %w_next, %w_m_next = dnn.update "momentum" %w, %dw state(%w_m) lr -1.000000e-02 : f64 beta1 9.000000e-01 : f64 : (!dnn.tensor<[d = 8], f32>, !dnn.tensor<[d = 8], f32>, !dnn.tensor<[d = 8], f32>) -> (!dnn.tensor<[d = 8], f32>, !dnn.tensor<[d = 8], f32>)
  dnn.return %w_next : !dnn.tensor<[d = 8], f32>
}

// CHECK: {{.*}}dnn-update-invalid.mlir:111:3: error: 'dnn.update' op dnn.update lr must be a finite number at least 0, got -0.01

// -----

/// dnn.update: pase-autodiff's attributes have their types

dnn.graph @g(d = 8) {
  %w = dnn.param : !dnn.tensor<[d = 8], f32>
  %dw = dnn.input : !dnn.tensor<[d = 8], f32>
  %w_m = dnn.param : !dnn.tensor<[d = 8], f32>
  %w_next, %w_m_next = dnn.update "momentum" %w, %dw state(%w_m) lr 1.000000e-02 : f64 beta1 9.000000e-01 : f64 {pase.layer = 3} : (!dnn.tensor<[d = 8], f32>, !dnn.tensor<[d = 8], f32>, !dnn.tensor<[d = 8], f32>) -> (!dnn.tensor<[d = 8], f32>, !dnn.tensor<[d = 8], f32>)
  dnn.return %w_next : !dnn.tensor<[d = 8], f32>
}

// CHECK: {{.*}}dnn-update-invalid.mlir:125:3: error: 'dnn.update' op pase.layer must be the name of a forward layer (a string), got 3 : i64

// -----

/// dnn.update: inside a dnn.graph

%w = "test.op"() : () -> !dnn.tensor<[d = 8], f32>
%w_next, %w_m_next = dnn.update "momentum" %w, %w state(%w) lr 1.000000e-02 : f64 beta1 9.000000e-01 : f64 : (!dnn.tensor<[d = 8], f32>, !dnn.tensor<[d = 8], f32>, !dnn.tensor<[d = 8], f32>) -> (!dnn.tensor<[d = 8], f32>, !dnn.tensor<[d = 8], f32>)

// CHECK: {{.*}}dnn-update-invalid.mlir:136:1: error: 'dnn.update' op 'dnn.update' expects parent op 'dnn.graph'
