// RUN: PASE_ROUNDTRIP
// RUN: PASE_GENERIC_ROUNDTRIP

/// all_gather, reduce_scatter, all_to_all on a 2x2 grid: each says its grid axes and the
/// tensor dim it gathers, scatters or splits and concatenates, as MLIR's shard dialect;
/// the result type is the layout after it

dist.program @collectives(devices = 4) {
  shard.grid @grid2x2(shape = 2x2)
  %x = dist.input "x" : !dist.tensor<[b = 8, h = 16] local [4, 8], f32 on @grid2x2 split [[0], [1]]>
  %g = dist.all_gather %x on @grid2x2 grid_axes = [1] gather_axis = 1 tag "g" : !dist.tensor<[b = 8, h = 16] local [4, 8], f32 on @grid2x2 split [[0], [1]]> -> !dist.tensor<[b = 8, h = 16] local [4, 16], f32 on @grid2x2 split [[0], []]>
  %a = dist.all_to_all %x on @grid2x2 grid_axes = [1] split_axis = 0 concat_axis = 1 tag "a" : !dist.tensor<[b = 8, h = 16] local [4, 8], f32 on @grid2x2 split [[0], [1]]> -> !dist.tensor<[b = 8, h = 16] local [2, 16], f32 on @grid2x2 split [[0, 1], []]>
  %w = dist.param "w" : !dist.tensor<[h = 16, c = 4] local [8, 4], f32 on @grid2x2 split [[1], []]>
  %z = dist.layer "dnn.einsum"(%g, %w) stats [] props {} tag "z" : (!dist.tensor<[b = 8, h = 16] local [4, 16], f32 on @grid2x2 split [[0], []]>, !dist.tensor<[h = 16, c = 4] local [8, 4], f32 on @grid2x2 split [[1], []]>) -> !dist.tensor<[b = 8, c = 4] local [4, 4], f32 on @grid2x2 split [[0], []] partial [1]>
  %s = dist.reduce_scatter %z on @grid2x2 grid_axes = [1] scatter_axis = 1 tag "z" : !dist.tensor<[b = 8, c = 4] local [4, 4], f32 on @grid2x2 split [[0], []] partial [1]> -> !dist.tensor<[b = 8, c = 4] local [4, 2], f32 on @grid2x2 split [[0], [1]]>
  dist.return %s, %a : !dist.tensor<[b = 8, c = 4] local [4, 2], f32 on @grid2x2 split [[0], [1]]>, !dist.tensor<[b = 8, h = 16] local [2, 16], f32 on @grid2x2 split [[0, 1], []]>
}

// CHECK-LABEL: dist.program @collectives(devices = 4) {
// CHECK-NEXT:    shard.grid @grid2x2(shape = 2x2)
// CHECK-NEXT:    %x = dist.input "x" : !dist.tensor<[b = 8, h = 16] local [4, 8], f32 on @grid2x2 split [[0], [1]]>
// CHECK-NEXT:    %g = dist.all_gather %x on @grid2x2 grid_axes = [1] gather_axis = 1 tag "g" : !dist.tensor<[b = 8, h = 16] local [4, 8], f32 on @grid2x2 split [[0], [1]]> -> !dist.tensor<[b = 8, h = 16] local [4, 16], f32 on @grid2x2 split [[0], []]>
// CHECK-NEXT:    %a = dist.all_to_all %x on @grid2x2 grid_axes = [1] split_axis = 0 concat_axis = 1 tag "a" : !dist.tensor<[b = 8, h = 16] local [4, 8], f32 on @grid2x2 split [[0], [1]]> -> !dist.tensor<[b = 8, h = 16] local [2, 16], f32 on @grid2x2 split [[0, 1], []]>
// CHECK-NEXT:    %w = dist.param "w"
// CHECK-NEXT:    %z = dist.layer "dnn.einsum"(%g, %w)
// CHECK-NEXT:    %s = dist.reduce_scatter %z on @grid2x2 grid_axes = [1] scatter_axis = 1 tag "z" : !dist.tensor<[b = 8, c = 4] local [4, 4], f32 on @grid2x2 split [[0], []] partial [1]> -> !dist.tensor<[b = 8, c = 4] local [4, 2], f32 on @grid2x2 split [[0], [1]]>
// CHECK-NEXT:    dist.return %s, %a
// CHECK-NEXT:  }
// GENERIC:      %g = "dist.all_gather"(%x) <{grid = @grid2x2, grid_axes = array<i16: 1>, gather_axis = 1 : i64, tag = "g"}>
// GENERIC:      %a = "dist.all_to_all"(%x) <{grid = @grid2x2, grid_axes = array<i16: 1>, split_axis = 0 : i64, concat_axis = 1 : i64, tag = "a"}>
// GENERIC:      %s = "dist.reduce_scatter"(%z) <{grid = @grid2x2, grid_axes = array<i16: 1>, scatter_axis = 1 : i64, tag = "z"}>

// -----

/// several grid axes at once: a dim split over both axes of a 2x4 grid gathered whole,
/// partial sums over both axes scattered over both (axis 0 outermost), partial sums over
/// another axis carried through; f64

dist.program @two_axes(devices = 16) {
  shard.grid @grid2x4x2(shape = 2x4x2)
  %x = dist.input "x" : !dist.tensor<[b = 16, d = 8] local [2, 8], f64 on @grid2x4x2 split [[0, 1], []]>
  %g = dist.all_gather %x on @grid2x4x2 grid_axes = [0, 1] gather_axis = 0 tag "g" : !dist.tensor<[b = 16, d = 8] local [2, 8], f64 on @grid2x4x2 split [[0, 1], []]> -> !dist.tensor<[b = 16, d = 8] local [16, 8], f64 on @grid2x4x2 split [[], []]>
  %y = dist.layer "dnn.reduce"(%g) stats [] props {kind = "sum", over = ["b"]} tag "y" : (!dist.tensor<[b = 16, d = 8] local [16, 8], f64 on @grid2x4x2 split [[], []]>) -> !dist.tensor<[d = 8] local [8], f64 on @grid2x4x2 split [[]]>
  %v = dist.input "v" : !dist.tensor<[b = 16, d = 8] local [1, 8], f64 on @grid2x4x2 split [[2, 0, 1], []]>
  %p = dist.layer "dnn.reduce"(%v) stats [] props {kind = "sum", over = ["b"]} tag "p" : (!dist.tensor<[b = 16, d = 8] local [1, 8], f64 on @grid2x4x2 split [[2, 0, 1], []]>) -> !dist.tensor<[d = 8] local [8], f64 on @grid2x4x2 split [[]] partial [2, 0, 1]>
  %s = dist.reduce_scatter %p on @grid2x4x2 grid_axes = [0, 1] scatter_axis = 0 tag "p" : !dist.tensor<[d = 8] local [8], f64 on @grid2x4x2 split [[]] partial [2, 0, 1]> -> !dist.tensor<[d = 8] local [1], f64 on @grid2x4x2 split [[0, 1]] partial [2]>
  dist.return %y : !dist.tensor<[d = 8] local [8], f64 on @grid2x4x2 split [[]]>
}

// CHECK-LABEL: dist.program @two_axes(devices = 16) {
// CHECK:         %g = dist.all_gather %x on @grid2x4x2 grid_axes = [0, 1] gather_axis = 0 tag "g" : !dist.tensor<[b = 16, d = 8] local [2, 8], f64 on @grid2x4x2 split [[0, 1], []]> -> !dist.tensor<[b = 16, d = 8] local [16, 8], f64 on @grid2x4x2 split [[], []]>
// CHECK:         %s = dist.reduce_scatter %p on @grid2x4x2 grid_axes = [0, 1] scatter_axis = 0 tag "p" : !dist.tensor<[d = 8] local [8], f64 on @grid2x4x2 split [[]] partial [2, 0, 1]> -> !dist.tensor<[d = 8] local [1], f64 on @grid2x4x2 split [[0, 1]] partial [2]>
// GENERIC:      "dist.all_gather"(%x) <{grid = @grid2x4x2, grid_axes = array<i16: 0, 1>, gather_axis = 0 : i64, tag = "g"}>

// -----

/// send and recv: a pipeline stage boundary between two grids of one shape; the sends and
/// receives of one tag pair first in first out (two micro-batches); partial sums move as
/// they are

dist.program @stages(devices = 4) attributes {dist.stages = 2 : i64, dist.microbatches = 2 : i64} {
  shard.grid @grid2(shape = 2)
  shard.grid @grid2_at2(shape = 2) {dist.first_device = 2 : i64}
  %x = dist.input "x" at [0, 0] {dist.microbatch = 0 : i64} : !dist.tensor<[b = 4, d = 8] local [2, 8], f32 on @grid2 split [[0], []]>
  %x_1 = dist.input "x" at [4, 0] {dist.microbatch = 1 : i64} : !dist.tensor<[b = 4, d = 8] local [2, 8], f32 on @grid2 split [[0], []]>
  dist.send %x to @grid2_at2 tag "x->h" {dist.microbatch = 0 : i64} : !dist.tensor<[b = 4, d = 8] local [2, 8], f32 on @grid2 split [[0], []]>
  dist.send %x_1 to @grid2_at2 tag "x->h" {dist.microbatch = 1 : i64} : !dist.tensor<[b = 4, d = 8] local [2, 8], f32 on @grid2 split [[0], []]>
  %r = dist.recv from @grid2 tag "x->h" {dist.microbatch = 0 : i64} : !dist.tensor<[b = 4, d = 8] local [2, 8], f32 on @grid2_at2 split [[0], []]>
  %r_1 = dist.recv from @grid2 tag "x->h" {dist.microbatch = 1 : i64} : !dist.tensor<[b = 4, d = 8] local [2, 8], f32 on @grid2_at2 split [[0], []]>
  %p = dist.layer "dnn.reduce"(%x) stats [] props {kind = "sum", over = ["b"]} tag "p" : (!dist.tensor<[b = 4, d = 8] local [2, 8], f32 on @grid2 split [[0], []]>) -> !dist.tensor<[d = 8] local [8], f32 on @grid2 split [[]] partial [0]>
  dist.send %p to @grid2_at2 tag "p" : !dist.tensor<[d = 8] local [8], f32 on @grid2 split [[]] partial [0]>
  %q = dist.recv from @grid2 tag "p" : !dist.tensor<[d = 8] local [8], f32 on @grid2_at2 split [[]] partial [0]>
  %s = dist.all_reduce %q on @grid2_at2 grid_axes = [0] tag "p" : !dist.tensor<[d = 8] local [8], f32 on @grid2_at2 split [[]] partial [0]> -> !dist.tensor<[d = 8] local [8], f32 on @grid2_at2 split [[]]>
  dist.return %r, %r_1, %s : !dist.tensor<[b = 4, d = 8] local [2, 8], f32 on @grid2_at2 split [[0], []]>, !dist.tensor<[b = 4, d = 8] local [2, 8], f32 on @grid2_at2 split [[0], []]>, !dist.tensor<[d = 8] local [8], f32 on @grid2_at2 split [[]]>
}

// CHECK-LABEL: dist.program @stages(devices = 4)
// CHECK:         dist.send %x to @grid2_at2 tag "x->h" {dist.microbatch = 0 : i64} : !dist.tensor<[b = 4, d = 8] local [2, 8], f32 on @grid2 split [[0], []]>
// CHECK-NEXT:    dist.send %x_1 to @grid2_at2 tag "x->h" {dist.microbatch = 1 : i64} : !dist.tensor<[b = 4, d = 8] local [2, 8], f32 on @grid2 split [[0], []]>
// CHECK-NEXT:    %r = dist.recv from @grid2 tag "x->h" {dist.microbatch = 0 : i64} : !dist.tensor<[b = 4, d = 8] local [2, 8], f32 on @grid2_at2 split [[0], []]>
// CHECK-NEXT:    %r_1 = dist.recv from @grid2 tag "x->h" {dist.microbatch = 1 : i64} : !dist.tensor<[b = 4, d = 8] local [2, 8], f32 on @grid2_at2 split [[0], []]>
// CHECK:         dist.send %p to @grid2_at2 tag "p" : !dist.tensor<[d = 8] local [8], f32 on @grid2 split [[]] partial [0]>
// CHECK-NEXT:    %q = dist.recv from @grid2 tag "p" : !dist.tensor<[d = 8] local [8], f32 on @grid2_at2 split [[]] partial [0]>
// GENERIC:      "dist.send"(%x) <{to = @grid2_at2, tag = "x->h"}> {dist.microbatch = 0 : i64} : (!dist.tensor<[b = 4, d = 8] local [2, 8], f32 on @grid2 split [[0], []]>) -> ()
// GENERIC:      %r = "dist.recv"() <{from = @grid2, tag = "x->h"}> {dist.microbatch = 0 : i64} : () -> !dist.tensor<[b = 4, d = 8] local [2, 8], f32 on @grid2_at2 split [[0], []]>
