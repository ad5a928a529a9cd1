// RUN: pase-opt %s --split-input-file --parsing-diagnostics 2>&1 | filecheck %s

// Integers past their type's range are parse errors at their op (xDSL would crash).

/// an i16 grid axis out of range

dist.program @p(devices = 1) {
  shard.grid @grid1(shape = 1)
  %x = dist.input "x" : !dist.tensor<[b = 4] local [4], f32 on @grid1 split [[]]>
  %l = dist.layer "dnn.reduce"(%x) stats [40000] props {kind = "sum", over = ["b"]} tag "l" : (!dist.tensor<[b = 4] local [4], f32 on @grid1 split [[]]>) -> !dist.tensor<[] local [], f32 on @grid1 split []>
  dist.return %l : !dist.tensor<[] local [], f32 on @grid1 split []>
}

// CHECK: {{.*}}dist-invalid-parse-ranges.mlir:10:3
// CHECK: an integer of this op does not fit its type (short format requires -32768 <= number <= 32767)

// -----

/// 2^63 in a grid axis

dist.program @p(devices = 1) {
  shard.grid @grid1(shape = 1)
  %x = dist.input "x" : !dist.tensor<[b = 4] local [4], f32 on @grid1 split [[]]>
  %s = dist.all_reduce %x on @grid1 grid_axes = [9223372036854775808] tag "s" : !dist.tensor<[b = 4] local [4], f32 on @grid1 split [[]]> -> !dist.tensor<[b = 4] local [4], f32 on @grid1 split [[]]>
  dist.return %s : !dist.tensor<[b = 4] local [4], f32 on @grid1 split [[]]>
}

// CHECK: {{.*}}dist-invalid-parse-ranges.mlir:24:3
// CHECK: an integer of this op does not fit its type (argument out of range)
