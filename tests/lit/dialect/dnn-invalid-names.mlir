// RUN: pase-opt %s --split-input-file --verify-diagnostics | filecheck %s
// RUN: not pase-opt %s --split-input-file -p 'pase-search{devices=2 export="%t.json"}' -o %t.mlir
// RUN: not test -e %t.json
// RUN: not test -e %t.mlir

/// Two graphs of one name in modules nested in one another: a module's symbol table sees
/// only its own graphs, so both were searched and the strategy file exported for them was
/// refused when read back ("[1] is a second strategy for graph @g"). The second is the error.

builtin.module {
  builtin.module {
    dnn.graph @g(b = 4) {
      %x = dnn.input : !dnn.tensor<[b = 4], f32>
      dnn.return %x : !dnn.tensor<[b = 4], f32>
    }
  }
  builtin.module {
    dnn.graph @g(b = 4) {
      %x = dnn.input : !dnn.tensor<[b = 4], f32>
      dnn.return %x : !dnn.tensor<[b = 4], f32>
    }
  }
}

// CHECK: {{.*}}dnn-invalid-names.mlir:18:5: error: 'dnn.graph' op graph @g is defined twice in one input (in nested modules); each graph needs its own name

// -----

/// A graph of the outer module and one of a nested module

builtin.module {
  dnn.graph @g(b = 4) {
    %x = dnn.input : !dnn.tensor<[b = 4], f32>
    dnn.return %x : !dnn.tensor<[b = 4], f32>
  }
  builtin.module {
    builtin.module {
      dnn.graph @g(b = 4) {
        %x = dnn.input : !dnn.tensor<[b = 4], f32>
        dnn.return %x : !dnn.tensor<[b = 4], f32>
      }
    }
  }
}

// CHECK: {{.*}}dnn-invalid-names.mlir:38:7: error: 'dnn.graph' op graph @g is defined twice in one input (in nested modules); each graph needs its own name
