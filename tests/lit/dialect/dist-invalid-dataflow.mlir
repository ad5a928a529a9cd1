// RUN: pase-opt %s --split-input-file --verify-diagnostics | filecheck %s

// A dist.program body is an ordered dataflow region, as a dnn.graph body is.

/// a value used before its definition

dist.program @p(devices = 1) {
  shard.grid @grid1(shape = 1)
  %y = dist.layer "dnn.relu"(%x) stats [] props {} tag "y" : (!dist.tensor<[b = 4] local [4], f32 on @grid1 split [[]]>) -> !dist.tensor<[b = 4] local [4], f32 on @grid1 split [[]]>
  %x = dist.input "x" : !dist.tensor<[b = 4] local [4], f32 on @grid1 split [[]]>
  dist.return %y : !dist.tensor<[b = 4] local [4], f32 on @grid1 split [[]]>
}

// CHECK: {{.*}}dist-invalid-dataflow.mlir:9:3: error: 'dist.layer' op operand 0 (%x) is used before its definition at line {{[0-9]+}}; in a dist.program every value is defined above its uses

// -----

/// an op that reads its own result

dist.program @p(devices = 1) {
  shard.grid @grid1(shape = 1)
  %y = dist.redistribute %y tag "y" : !dist.tensor<[b = 4] local [4], f32 on @grid1 split [[]]> -> !dist.tensor<[b = 4] local [4], f32 on @grid1 split [[]]>
  dist.return %y : !dist.tensor<[b = 4] local [4], f32 on @grid1 split [[]]>
}

// CHECK: {{.*}}dist-invalid-dataflow.mlir:22:3: error: 'dist.redistribute' op operand 0 (%y) is its own result; an op cannot read the value it defines

// -----

/// programs do not nest

dist.program @p(devices = 1) {
  shard.grid @grid1(shape = 1)
  dist.program @q(devices = 1) {
    shard.grid @grid1(shape = 1)
    %x = dist.input "x" : !dist.tensor<[b = 4] local [4], f32 on @grid1 split [[]]>
    dist.return %x : !dist.tensor<[b = 4] local [4], f32 on @grid1 split [[]]>
  }
  %x = dist.input "x" : !dist.tensor<[b = 4] local [4], f32 on @grid1 split [[]]>
  dist.return %x : !dist.tensor<[b = 4] local [4], f32 on @grid1 split [[]]>
}

// CHECK: {{.*}}dist-invalid-dataflow.mlir:34:3: error: 'dist.program' op 'dist.program' expects parent op 'builtin.module'

// -----

/// a program holds dist ops and its shard.grid declarations only

dist.program @p(devices = 1) {
  shard.grid @grid1(shape = 1)
  %x = dist.input "x" : !dist.tensor<[b = 4] local [4], f32 on @grid1 split [[]]>
  %c = arith.constant 1 : i32
  dist.return %x : !dist.tensor<[b = 4] local [4], f32 on @grid1 split [[]]>
}

// CHECK: {{.*}}dist-invalid-dataflow.mlir:52:3: error: 'arith.constant' op a dist.program holds only dist and shard.grid ops, not 'arith.constant'

// -----

/// at most 8,192 devices

dist.program @p(devices = 9223372036854775807) {
  shard.grid @grid1(shape = 1)
  %x = dist.input "x" : !dist.tensor<[b = 4] local [4], f32 on @grid1 split [[]]>
  dist.return %x : !dist.tensor<[b = 4] local [4], f32 on @grid1 split [[]]>
}

// CHECK: {{.*}}dist-invalid-dataflow.mlir:62:1: error: 'dist.program' op dist.program @p: devices must be between 1 and 8,192, got 9,223,372,036,854,775,807
