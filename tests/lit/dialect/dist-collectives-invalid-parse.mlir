// RUN: pase-opt %s --split-input-file --parsing-diagnostics | filecheck %s

/// the collectives' syntax: the tensor axis keyword is required, the tag is a quoted
/// string, a dist.send has no result and a dist.recv no operand

dist.program @p(devices = 2) {
  shard.grid @grid2(shape = 2)
  %x = dist.input "x" : !dist.tensor<[b = 4] local [2], f32 on @grid2 split [[0]]>
  %g = dist.all_gather %x on @grid2 grid_axes = [0] tag "g" : !dist.tensor<[b = 4] local [2], f32 on @grid2 split [[0]]> -> !dist.tensor<[b = 4] local [4], f32 on @grid2 split [[]]>
  dist.return %g : !dist.tensor<[b = 4] local [4], f32 on @grid2 split [[]]>
}

// CHECK: {{.*}}dist-collectives-invalid-parse.mlir:9:53{{$}}
// CHECK: Expected 'gather_axis'

// -----

dist.program @p(devices = 2) {
  shard.grid @grid2(shape = 2)
  %x = dist.input "x" : !dist.tensor<[b = 4] local [2], f32 on @grid2 split [[0]]>
  %a = dist.all_to_all %x on @grid2 grid_axes = [0] split_axis = 0 concat_axis = 0 tag h : !dist.tensor<[b = 4] local [2], f32 on @grid2 split [[0]]> -> !dist.tensor<[b = 4] local [2], f32 on @grid2 split [[0]]>
  dist.return %a : !dist.tensor<[b = 4] local [2], f32 on @grid2 split [[0]]>
}

// CHECK: {{.*}}dist-collectives-invalid-parse.mlir:21:88{{$}}
// CHECK: expected the tag as a quoted string

// -----

dist.program @p(devices = 2) {
  shard.grid @grid2(shape = 2)
  %x = dist.input "x" : !dist.tensor<[b = 4] local [2], f32 on @grid2 split [[0]]>
  %s = dist.send %x to @grid2 tag "s" : !dist.tensor<[b = 4] local [2], f32 on @grid2 split [[0]]>
  dist.return %x : !dist.tensor<[b = 4] local [2], f32 on @grid2 split [[0]]>
}

// CHECK: {{.*}}dist-collectives-invalid-parse.mlir:33:3{{$}}
// CHECK: Operation has 0 results, but was given 1 to bind.

// -----

dist.program @p(devices = 2) {
  shard.grid @grid2(shape = 2)
  %x = dist.input "x" : !dist.tensor<[b = 4] local [2], f32 on @grid2 split [[0]]>
  %r = dist.recv %x from @grid2 tag "s" : !dist.tensor<[b = 4] local [2], f32 on @grid2 split [[0]]>
  dist.return %r : !dist.tensor<[b = 4] local [2], f32 on @grid2 split [[0]]>
}

// CHECK: {{.*}}dist-collectives-invalid-parse.mlir:45:18{{$}}
// CHECK: Expected 'from'
