// RUN: pase-opt %s --split-input-file --verify-diagnostics | filecheck %s
// A pass never sees what the verifier rejects: the same messages before pase-search.
// RUN: pase-opt %s --split-input-file --verify-diagnostics -p 'pase-search{devices=4}' | filecheck %s

// A dnn.graph body is an ordered dataflow region (MLIR's "does not dominate this use").

/// a value used one line before its definition

dnn.graph @g(b = 4, d = 8) {
  %x = dnn.input : !dnn.tensor<[b = 4, d = 8], f32>
  %y = dnn.relu %w : (!dnn.tensor<[b = 4, d = 8], f32>) -> !dnn.tensor<[b = 4, d = 8], f32>
  %w = dnn.param : !dnn.tensor<[b = 4, d = 8], f32>
  %l = dnn.reduce mean %y over [b, d] : (!dnn.tensor<[b = 4, d = 8], f32>) -> !dnn.tensor<[], f32>
  dnn.return %l : !dnn.tensor<[], f32>
}

// CHECK: {{.*}}dnn-invalid-dataflow.mlir:11:3: error: 'dnn.relu' op operand 0 (%w) is used before its definition at line {{[0-9]+}}; in a dnn.graph every value is defined above its uses

// -----

/// a cycle: %a reads %c, which reads %a

dnn.graph @g(b = 4, d = 8) {
  %x = dnn.input : !dnn.tensor<[b = 4, d = 8], f32>
  %a = dnn.add %x, %c : (!dnn.tensor<[b = 4, d = 8], f32>, !dnn.tensor<[b = 4, d = 8], f32>) -> !dnn.tensor<[b = 4, d = 8], f32>
  %c = dnn.relu %a : (!dnn.tensor<[b = 4, d = 8], f32>) -> !dnn.tensor<[b = 4, d = 8], f32>
  %l = dnn.reduce mean %c over [b, d] : (!dnn.tensor<[b = 4, d = 8], f32>) -> !dnn.tensor<[], f32>
  dnn.return %l : !dnn.tensor<[], f32>
}

// CHECK: {{.*}}dnn-invalid-dataflow.mlir:25:3: error: 'dnn.add' op operand 1 (%c) is used before its definition at line {{[0-9]+}}; in a dnn.graph every value is defined above its uses

// -----

/// an op that reads its own result

dnn.graph @g(b = 4, d = 8) {
  %a = dnn.relu %a : (!dnn.tensor<[b = 4, d = 8], f32>) -> !dnn.tensor<[b = 4, d = 8], f32>
  %l = dnn.reduce mean %a over [b, d] : (!dnn.tensor<[b = 4, d = 8], f32>) -> !dnn.tensor<[], f32>
  dnn.return %l : !dnn.tensor<[], f32>
}

// CHECK: {{.*}}dnn-invalid-dataflow.mlir:38:3: error: 'dnn.relu' op operand 0 (%a) is its own result; an op cannot read the value it defines

// -----

/// the return reads a value defined after it (the terminator is last, so only in generic form)

"dnn.graph"() <{sym_name = "g", dim_names = ["b", "d"], dim_sizes = [#builtin.int<4>, #builtin.int<8>]}> ({
  "dnn.return"(%x) : (!dnn.tensor<[b = 4, d = 8], f32>) -> ()
  %x = "dnn.input"() : () -> !dnn.tensor<[b = 4, d = 8], f32>
}) : () -> ()

// CHECK: {{.*}}dnn-invalid-dataflow.mlir:50:3: error: 'dnn.return' op operand 0 (%x) is used before its definition at line {{[0-9]+}}; in a dnn.graph every value is defined above its uses

// -----

/// graphs do not nest

dnn.graph @g(b = 4, d = 8) {
  dnn.graph @h(b = 4) {
    %x = dnn.input : !dnn.tensor<[b = 4], f32>
    dnn.return %x : !dnn.tensor<[b = 4], f32>
  }
  %x = dnn.input : !dnn.tensor<[b = 4, d = 8], f32>
  dnn.return %x : !dnn.tensor<[b = 4, d = 8], f32>
}

// CHECK: {{.*}}dnn-invalid-dataflow.mlir:61:3: error: 'dnn.graph' op 'dnn.graph' expects parent op 'builtin.module'

// -----

/// a graph is a module's child, not a function's

func.func @f() {
  dnn.graph @h(b = 4) {
    %x = dnn.input : !dnn.tensor<[b = 4], f32>
    dnn.return %x : !dnn.tensor<[b = 4], f32>
  }
  func.return
}

// CHECK: {{.*}}dnn-invalid-dataflow.mlir:76:3: error: 'dnn.graph' op 'dnn.graph' expects parent op 'builtin.module'

// -----

/// a graph holds dnn ops only

dnn.graph @g(b = 4, d = 8) {
  %x = dnn.input : !dnn.tensor<[b = 4, d = 8], f32>
  %c = arith.constant 1 : i32
  dnn.return %x : !dnn.tensor<[b = 4, d = 8], f32>
}

// CHECK: {{.*}}dnn-invalid-dataflow.mlir:91:3: error: 'arith.constant' op a dnn.graph holds only dnn ops, not 'arith.constant'
