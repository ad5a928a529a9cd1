// RUN: pase-opt %s --split-input-file --verify-diagnostics | filecheck %s

// A dist.layer's props are checked against its kernel's dnn op, so no worker meets a
// wrongly typed one.

/// a kernel's property has the type its dnn op declares

dist.program @p(devices = 1) {
  shard.grid @grid1(shape = 1)
  %x = dist.input "x" : !dist.tensor<[b = 4] local [4], f32 on @grid1 split [[]]>
  %l = dist.layer "dnn.reduce"(%x) stats [] props {kind = 3, over = ["b"]} tag "l" : (!dist.tensor<[b = 4] local [4], f32 on @grid1 split [[]]>) -> !dist.tensor<[] local [], f32 on @grid1 split []>
  dist.return %l : !dist.tensor<[] local [], f32 on @grid1 split []>
}

// CHECK: {{.*}}dist-invalid-kernels.mlir:11:3: error: 'dist.layer' op property 'kind' of the dnn.reduce kernel: 3 : i64 should be of base attribute string

// -----

/// an integer where a dimension name belongs

dist.program @p(devices = 1) {
  shard.grid @grid1(shape = 1)
  %x = dist.input "x" : !dist.tensor<[b = 4] local [4], f32 on @grid1 split [[]]>
  %l = dist.layer "dnn.reduce"(%x) stats [] props {kind = "sum", over = [0]} tag "l" : (!dist.tensor<[b = 4] local [4], f32 on @grid1 split [[]]>) -> !dist.tensor<[] local [], f32 on @grid1 split []>
  dist.return %l : !dist.tensor<[] local [], f32 on @grid1 split []>
}

// CHECK: {{.*}}dist-invalid-kernels.mlir:24:3: error: 'dist.layer' op property 'over' of the dnn.reduce kernel: 0 : i64 should be of base attribute string

// -----

/// a required property is there

dist.program @p(devices = 1) {
  shard.grid @grid1(shape = 1)
  %x = dist.input "x" : !dist.tensor<[b = 4] local [4], f32 on @grid1 split [[]]>
  %l = dist.layer "dnn.reduce"(%x) stats [] props {over = ["b"]} tag "l" : (!dist.tensor<[b = 4] local [4], f32 on @grid1 split [[]]>) -> !dist.tensor<[] local [], f32 on @grid1 split []>
  dist.return %l : !dist.tensor<[] local [], f32 on @grid1 split []>
}

// CHECK: {{.*}}dist-invalid-kernels.mlir:37:3: error: 'dist.layer' op a dnn.reduce kernel needs the property 'kind' in its props

// -----

/// no property the op does not declare

dist.program @p(devices = 1) {
  shard.grid @grid1(shape = 1)
  %x = dist.input "x" : !dist.tensor<[b = 4] local [4], f32 on @grid1 split [[]]>
  %y = dist.layer "dnn.relu"(%x) stats [] props {stride = 2} tag "y" : (!dist.tensor<[b = 4] local [4], f32 on @grid1 split [[]]>) -> !dist.tensor<[b = 4] local [4], f32 on @grid1 split [[]]>
  dist.return %y : !dist.tensor<[b = 4] local [4], f32 on @grid1 split [[]]>
}

// CHECK: {{.*}}dist-invalid-kernels.mlir:50:3: error: 'dist.layer' op a dnn.relu kernel takes no property 'stride' (its properties: none)

// -----

/// a vjp kernel names its forward op with a string

dist.program @p(devices = 1) {
  shard.grid @grid1(shape = 1)
  %x = dist.input "x" : !dist.tensor<[b = 4] local [4], f32 on @grid1 split [[]]>
  %y = dist.layer "dnn.relu"(%x) stats [] props {} tag "y" : (!dist.tensor<[b = 4] local [4], f32 on @grid1 split [[]]>) -> !dist.tensor<[b = 4] local [4], f32 on @grid1 split [[]]>
  %dx = dist.layer "dnn.vjp"(%x, %y, %y) stats [] props {forward = 3, wrt = [#builtin.int<0>]} tag "y" : (!dist.tensor<[b = 4] local [4], f32 on @grid1 split [[]]>, !dist.tensor<[b = 4] local [4], f32 on @grid1 split [[]]>, !dist.tensor<[b = 4] local [4], f32 on @grid1 split [[]]>) -> !dist.tensor<[b = 4] local [4], f32 on @grid1 split [[]]>
  dist.return %dx : !dist.tensor<[b = 4] local [4], f32 on @grid1 split [[]]>
}

// CHECK: {{.*}}dist-invalid-kernels.mlir:64:3: error: 'dist.layer' op property 'forward' of the dnn.vjp kernel: 3 : i64 should be of base attribute string

// -----

/// a vjp kernel differentiates a layer op

dist.program @p(devices = 1) {
  shard.grid @grid1(shape = 1)
  %x = dist.input "x" : !dist.tensor<[b = 4] local [4], f32 on @grid1 split [[]]>
  %y = dist.layer "dnn.relu"(%x) stats [] props {} tag "y" : (!dist.tensor<[b = 4] local [4], f32 on @grid1 split [[]]>) -> !dist.tensor<[b = 4] local [4], f32 on @grid1 split [[]]>
  %dx = dist.layer "dnn.vjp"(%x, %y, %y) stats [] props {forward = "dnn.sgd", wrt = [#builtin.int<0>]} tag "y" : (!dist.tensor<[b = 4] local [4], f32 on @grid1 split [[]]>, !dist.tensor<[b = 4] local [4], f32 on @grid1 split [[]]>, !dist.tensor<[b = 4] local [4], f32 on @grid1 split [[]]>) -> !dist.tensor<[b = 4] local [4], f32 on @grid1 split [[]]>
  dist.return %dx : !dist.tensor<[b = 4] local [4], f32 on @grid1 split [[]]>
}

// CHECK: {{.*}}dist-invalid-kernels.mlir:78:3: error: 'dist.layer' op a dnn.vjp kernel differentiates a dnn layer op, not 'dnn.sgd'

// -----

/// a wrt index past the forward operands

dist.program @p(devices = 1) {
  shard.grid @grid1(shape = 1)
  %x = dist.input "x" : !dist.tensor<[b = 4] local [4], f32 on @grid1 split [[]]>
  %y = dist.layer "dnn.relu"(%x) stats [] props {} tag "y" : (!dist.tensor<[b = 4] local [4], f32 on @grid1 split [[]]>) -> !dist.tensor<[b = 4] local [4], f32 on @grid1 split [[]]>
  %dx = dist.layer "dnn.vjp"(%x, %y, %y) stats [] props {forward = "dnn.relu", wrt = [#builtin.int<9223372036854775807>]} tag "y" : (!dist.tensor<[b = 4] local [4], f32 on @grid1 split [[]]>, !dist.tensor<[b = 4] local [4], f32 on @grid1 split [[]]>, !dist.tensor<[b = 4] local [4], f32 on @grid1 split [[]]>) -> !dist.tensor<[b = 4] local [4], f32 on @grid1 split [[]]>
  dist.return %dx : !dist.tensor<[b = 4] local [4], f32 on @grid1 split [[]]>
}

// CHECK: {{.*}}dist-invalid-kernels.mlir:92:3: error: 'dist.layer' op dnn.vjp wrt index 9223372036854775807 is not one of the 1 forward operands
