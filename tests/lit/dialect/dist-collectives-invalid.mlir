// RUN: pase-opt %s --split-input-file --verify-diagnostics | filecheck %s

/// dist.all_gather: runs on the grid of its input

dist.program @p(devices = 4) {
  shard.grid @grid2x2(shape = 2x2)
  shard.grid @grid4(shape = 4)
  %x = dist.input "x" : !dist.tensor<[b = 8, h = 16] local [4, 8], f32 on @grid2x2 split [[0], [1]]>
  %g = dist.all_gather %x on @grid4 grid_axes = [1] gather_axis = 1 tag "g" : !dist.tensor<[b = 8, h = 16] local [4, 8], f32 on @grid2x2 split [[0], [1]]> -> !dist.tensor<[b = 8, h = 16] local [4, 16], f32 on @grid2x2 split [[0], []]>
  dist.return %g : !dist.tensor<[b = 8, h = 16] local [4, 16], f32 on @grid2x2 split [[0], []]>
}

// CHECK: {{.*}}dist-collectives-invalid.mlir:9:3: error: 'dist.all_gather' op dist.all_gather runs on @grid4, so its input must be on @grid4, not @grid2x2

// -----

/// dist.all_gather: along at least one grid axis

dist.program @p(devices = 4) {
  shard.grid @grid2x2(shape = 2x2)
  %x = dist.input "x" : !dist.tensor<[b = 8, h = 16] local [4, 8], f32 on @grid2x2 split [[0], [1]]>
  %g = dist.all_gather %x on @grid2x2 grid_axes = [] gather_axis = 1 tag "g" : !dist.tensor<[b = 8, h = 16] local [4, 8], f32 on @grid2x2 split [[0], [1]]> -> !dist.tensor<[b = 8, h = 16] local [4, 8], f32 on @grid2x2 split [[0], [1]]>
  dist.return %g : !dist.tensor<[b = 8, h = 16] local [4, 8], f32 on @grid2x2 split [[0], [1]]>
}

// CHECK: {{.*}}dist-collectives-invalid.mlir:22:3: error: 'dist.all_gather' op dist.all_gather needs at least one grid axis to run along

// -----

/// dist.all_gather: a grid axis once

dist.program @p(devices = 4) {
  shard.grid @grid2x2(shape = 2x2)
  %x = dist.input "x" : !dist.tensor<[b = 8, h = 16] local [4, 8], f32 on @grid2x2 split [[0], [1]]>
  %g = dist.all_gather %x on @grid2x2 grid_axes = [1, 1] gather_axis = 1 tag "g" : !dist.tensor<[b = 8, h = 16] local [4, 8], f32 on @grid2x2 split [[0], [1]]> -> !dist.tensor<[b = 8, h = 16] local [4, 16], f32 on @grid2x2 split [[0], []]>
  dist.return %g : !dist.tensor<[b = 8, h = 16] local [4, 16], f32 on @grid2x2 split [[0], []]>
}

// CHECK: {{.*}}dist-collectives-invalid.mlir:35:3: error: 'dist.all_gather' op grid axis 1 appears twice in grid_axes

// -----

/// dist.all_gather: grid axes of the grid

dist.program @p(devices = 4) {
  shard.grid @grid2x2(shape = 2x2)
  %x = dist.input "x" : !dist.tensor<[b = 8, h = 16] local [4, 8], f32 on @grid2x2 split [[0], [1]]>
  %g = dist.all_gather %x on @grid2x2 grid_axes = [2] gather_axis = 1 tag "g" : !dist.tensor<[b = 8, h = 16] local [4, 8], f32 on @grid2x2 split [[0], [1]]> -> !dist.tensor<[b = 8, h = 16] local [4, 16], f32 on @grid2x2 split [[0], []]>
  dist.return %g : !dist.tensor<[b = 8, h = 16] local [4, 16], f32 on @grid2x2 split [[0], []]>
}

// CHECK: {{.*}}dist-collectives-invalid.mlir:48:3: error: 'dist.all_gather' op grid axis 2 is not an axis of @grid2x2, which has 2 axes

// -----

/// dist.all_gather: keeps the element type

dist.program @p(devices = 4) {
  shard.grid @grid2x2(shape = 2x2)
  %x = dist.input "x" : !dist.tensor<[b = 8, h = 16] local [4, 8], f32 on @grid2x2 split [[0], [1]]>
  %g = dist.all_gather %x on @grid2x2 grid_axes = [1] gather_axis = 1 tag "g" : !dist.tensor<[b = 8, h = 16] local [4, 8], f32 on @grid2x2 split [[0], [1]]> -> !dist.tensor<[b = 8, h = 16] local [4, 16], f64 on @grid2x2 split [[0], []]>
  dist.return %g : !dist.tensor<[b = 8, h = 16] local [4, 16], f64 on @grid2x2 split [[0], []]>
}

// CHECK: {{.*}}dist-collectives-invalid.mlir:61:3: error: 'dist.all_gather' op dist.all_gather keeps the element type, got f32 -> f64

// -----

/// dist.all_gather: gather_axis is a dim of the input

dist.program @p(devices = 4) {
  shard.grid @grid2x2(shape = 2x2)
  %x = dist.input "x" : !dist.tensor<[b = 8, h = 16] local [4, 8], f32 on @grid2x2 split [[0], [1]]>
  %g = dist.all_gather %x on @grid2x2 grid_axes = [1] gather_axis = 2 tag "g" : !dist.tensor<[b = 8, h = 16] local [4, 8], f32 on @grid2x2 split [[0], [1]]> -> !dist.tensor<[b = 8, h = 16] local [4, 16], f32 on @grid2x2 split [[0], []]>
  dist.return %g : !dist.tensor<[b = 8, h = 16] local [4, 16], f32 on @grid2x2 split [[0], []]>
}

// CHECK: {{.*}}dist-collectives-invalid.mlir:74:3: error: 'dist.all_gather' op gather_axis 2 is not a dim of the input, which has 2 dims

// -----

/// dist.all_gather: the gathered dim is split along the grid axes

dist.program @p(devices = 4) {
  shard.grid @grid2x2(shape = 2x2)
  %x = dist.input "x" : !dist.tensor<[b = 8, h = 16] local [4, 8], f32 on @grid2x2 split [[0], [1]]>
  %g = dist.all_gather %x on @grid2x2 grid_axes = [1] gather_axis = 0 tag "g" : !dist.tensor<[b = 8, h = 16] local [4, 8], f32 on @grid2x2 split [[0], [1]]> -> !dist.tensor<[b = 8, h = 16] local [4, 16], f32 on @grid2x2 split [[0], []]>
  dist.return %g : !dist.tensor<[b = 8, h = 16] local [4, 16], f32 on @grid2x2 split [[0], []]>
}

// CHECK: {{.*}}dist-collectives-invalid.mlir:87:3: error: 'dist.all_gather' op dist.all_gather gathers the blocks of dim 0 ('b') over grid axis 1, so that dim's split axes must end with {{\[}}1] (innermost last); it is split along grid axis 0

// -----

/// dist.all_gather: ... last (innermost), so the blocks a group holds are consecutive

dist.program @p(devices = 4) {
  shard.grid @grid2x2(shape = 2x2)
  %x = dist.input "x" : !dist.tensor<[b = 8, h = 16] local [2, 16], f32 on @grid2x2 split [[0, 1], []]>
  %g = dist.all_gather %x on @grid2x2 grid_axes = [0] gather_axis = 0 tag "g" : !dist.tensor<[b = 8, h = 16] local [2, 16], f32 on @grid2x2 split [[0, 1], []]> -> !dist.tensor<[b = 8, h = 16] local [4, 16], f32 on @grid2x2 split [[1], []]>
  dist.return %g : !dist.tensor<[b = 8, h = 16] local [4, 16], f32 on @grid2x2 split [[1], []]>
}

// CHECK: {{.*}}dist-collectives-invalid.mlir:100:3: error: 'dist.all_gather' op dist.all_gather gathers the blocks of dim 0 ('b') over grid axis 0, so that dim's split axes must end with {{\[}}0] (innermost last); it is split along grid axes 0, 1

// -----

/// dist.all_gather: the result is the gathered layout

dist.program @p(devices = 4) {
  shard.grid @grid2x2(shape = 2x2)
  %x = dist.input "x" : !dist.tensor<[b = 8, h = 16] local [4, 8], f32 on @grid2x2 split [[0], [1]]>
  %g = dist.all_gather %x on @grid2x2 grid_axes = [1] gather_axis = 1 tag "g" : !dist.tensor<[b = 8, h = 16] local [4, 8], f32 on @grid2x2 split [[0], [1]]> -> !dist.tensor<[b = 8, h = 16] local [4, 8], f32 on @grid2x2 split [[0], [1]]>
  dist.return %g : !dist.tensor<[b = 8, h = 16] local [4, 8], f32 on @grid2x2 split [[0], [1]]>
}

// CHECK: {{.*}}dist-collectives-invalid.mlir:113:3: error: 'dist.all_gather' op dist.all_gather of dim 1 ('h') over grid axis 1 gives !dist.tensor<{{\[}}b = 8, h = 16] local {{\[}}4, 16], f32 on @grid2x2 split {{\[}}{{\[}}0], {{\[}}]]>, not the result's !dist.tensor<{{\[}}b = 8, h = 16] local {{\[}}4, 8], f32 on @grid2x2 split {{\[}}{{\[}}0], {{\[}}1]]>

// -----

/// dist.reduce_scatter: sums partial sums the input holds

dist.program @p(devices = 4) {
  shard.grid @grid2x2(shape = 2x2)
  %x = dist.input "x" : !dist.tensor<[b = 8, h = 16] local [4, 16], f32 on @grid2x2 split [[0], []]>
  %s = dist.reduce_scatter %x on @grid2x2 grid_axes = [1] scatter_axis = 1 tag "z" : !dist.tensor<[b = 8, h = 16] local [4, 16], f32 on @grid2x2 split [[0], []]> -> !dist.tensor<[b = 8, h = 16] local [4, 16], f32 on @grid2x2 split [[0], []]>
  dist.return %s : !dist.tensor<[b = 8, h = 16] local [4, 16], f32 on @grid2x2 split [[0], []]>
}

// CHECK: {{.*}}dist-collectives-invalid.mlir:126:3: error: 'dist.reduce_scatter' op dist.reduce_scatter sums partial sums over grid axis 1, but its input holds partial sums over no grid axis

// -----

/// dist.reduce_scatter: the group size divides the scattered local dim

dist.program @p(devices = 4) {
  shard.grid @grid2x2(shape = 2x2)
  %x = dist.input "x" : !dist.tensor<[b = 8, h = 16] local [4, 16], f32 on @grid2x2 split [[0], []]>
  %w = dist.param "w" : !dist.tensor<[h = 16, c = 3] local [8, 3], f32 on @grid2x2 split [[1], []]>
  %z = dist.layer "dnn.einsum"(%x, %w) stats [] props {} tag "z" : (!dist.tensor<[b = 8, h = 16] local [4, 16], f32 on @grid2x2 split [[0], []]>, !dist.tensor<[h = 16, c = 3] local [8, 3], f32 on @grid2x2 split [[1], []]>) -> !dist.tensor<[b = 8, c = 3] local [4, 3], f32 on @grid2x2 split [[0], []] partial [1]>
  %s = dist.reduce_scatter %z on @grid2x2 grid_axes = [1] scatter_axis = 1 tag "z" : !dist.tensor<[b = 8, c = 3] local [4, 3], f32 on @grid2x2 split [[0], []] partial [1]> -> !dist.tensor<[b = 8, c = 3] local [4, 3], f32 on @grid2x2 split [[0], []]>
  dist.return %s : !dist.tensor<[b = 8, c = 3] local [4, 3], f32 on @grid2x2 split [[0], []]>
}

// CHECK: {{.*}}dist-collectives-invalid.mlir:141:3: error: 'dist.reduce_scatter' op dist.reduce_scatter splits dim 1 ('c'), of local size 3, 2 ways over grid axis 1, which do not divide it

// -----

/// dist.reduce_scatter: the result is summed and scattered

dist.program @p(devices = 4) {
  shard.grid @grid2x2(shape = 2x2)
  %x = dist.input "x" : !dist.tensor<[b = 8, h = 16] local [4, 16], f32 on @grid2x2 split [[0], []]>
  %w = dist.param "w" : !dist.tensor<[h = 16, c = 4] local [8, 4], f32 on @grid2x2 split [[1], []]>
  %z = dist.layer "dnn.einsum"(%x, %w) stats [] props {} tag "z" : (!dist.tensor<[b = 8, h = 16] local [4, 16], f32 on @grid2x2 split [[0], []]>, !dist.tensor<[h = 16, c = 4] local [8, 4], f32 on @grid2x2 split [[1], []]>) -> !dist.tensor<[b = 8, c = 4] local [4, 4], f32 on @grid2x2 split [[0], []] partial [1]>
  %s = dist.reduce_scatter %z on @grid2x2 grid_axes = [1] scatter_axis = 1 tag "z" : !dist.tensor<[b = 8, c = 4] local [4, 4], f32 on @grid2x2 split [[0], []] partial [1]> -> !dist.tensor<[b = 8, c = 4] local [4, 4], f32 on @grid2x2 split [[0], []]>
  dist.return %z : !dist.tensor<[b = 8, c = 4] local [4, 4], f32 on @grid2x2 split [[0], []] partial [1]>
}

// CHECK: {{.*}}dist-collectives-invalid.mlir:156:3: error: 'dist.reduce_scatter' op dist.reduce_scatter over grid axis 1 scattering dim 1 ('c') gives !dist.tensor<{{\[}}b = 8, c = 4] local {{\[}}4, 2], f32 on @grid2x2 split {{\[}}{{\[}}0], {{\[}}1]]>, not the result's !dist.tensor<{{\[}}b = 8, c = 4] local {{\[}}4, 4], f32 on @grid2x2 split {{\[}}{{\[}}0], {{\[}}]]>

// -----

/// dist.all_to_all: split_axis and concat_axis differ

dist.program @p(devices = 4) {
  shard.grid @grid2x2(shape = 2x2)
  %x = dist.input "x" : !dist.tensor<[b = 8, h = 16] local [4, 8], f32 on @grid2x2 split [[0], [1]]>
  %a = dist.all_to_all %x on @grid2x2 grid_axes = [1] split_axis = 1 concat_axis = 1 tag "a" : !dist.tensor<[b = 8, h = 16] local [4, 8], f32 on @grid2x2 split [[0], [1]]> -> !dist.tensor<[b = 8, h = 16] local [4, 8], f32 on @grid2x2 split [[0], [1]]>
  dist.return %a : !dist.tensor<[b = 8, h = 16] local [4, 8], f32 on @grid2x2 split [[0], [1]]>
}

// CHECK: {{.*}}dist-collectives-invalid.mlir:169:3: error: 'dist.all_to_all' op dist.all_to_all splits and concatenates dim 1 ('h'), which moves nothing; split_axis and concat_axis must differ

// -----

/// dist.all_to_all: the concatenated dim is split along the grid axes

dist.program @p(devices = 4) {
  shard.grid @grid2x2(shape = 2x2)
  %x = dist.input "x" : !dist.tensor<[b = 8, h = 16] local [4, 8], f32 on @grid2x2 split [[0], [1]]>
  %a = dist.all_to_all %x on @grid2x2 grid_axes = [1] split_axis = 1 concat_axis = 0 tag "a" : !dist.tensor<[b = 8, h = 16] local [4, 8], f32 on @grid2x2 split [[0], [1]]> -> !dist.tensor<[b = 8, h = 16] local [2, 16], f32 on @grid2x2 split [[0, 1], []]>
  dist.return %a : !dist.tensor<[b = 8, h = 16] local [2, 16], f32 on @grid2x2 split [[0, 1], []]>
}

// CHECK: {{.*}}dist-collectives-invalid.mlir:182:3: error: 'dist.all_to_all' op dist.all_to_all concatenates the blocks of dim 0 ('b') over grid axis 1, so that dim's split axes must end with {{\[}}1] (innermost last); it is split along grid axis 0

// -----

/// dist.all_to_all: split_axis is a dim of the input

dist.program @p(devices = 4) {
  shard.grid @grid2x2(shape = 2x2)
  %x = dist.input "x" : !dist.tensor<[b = 8, h = 16] local [4, 8], f32 on @grid2x2 split [[0], [1]]>
  %a = dist.all_to_all %x on @grid2x2 grid_axes = [1] split_axis = 3 concat_axis = 1 tag "a" : !dist.tensor<[b = 8, h = 16] local [4, 8], f32 on @grid2x2 split [[0], [1]]> -> !dist.tensor<[b = 8, h = 16] local [2, 16], f32 on @grid2x2 split [[0, 1], []]>
  dist.return %a : !dist.tensor<[b = 8, h = 16] local [2, 16], f32 on @grid2x2 split [[0, 1], []]>
}

// CHECK: {{.*}}dist-collectives-invalid.mlir:195:3: error: 'dist.all_to_all' op split_axis 3 is not a dim of the input, which has 2 dims

// -----

/// dist.all_to_all: the result is the moved layout

dist.program @p(devices = 4) {
  shard.grid @grid2x2(shape = 2x2)
  %x = dist.input "x" : !dist.tensor<[b = 8, h = 16] local [4, 8], f32 on @grid2x2 split [[0], [1]]>
  %a = dist.all_to_all %x on @grid2x2 grid_axes = [1] split_axis = 0 concat_axis = 1 tag "a" : !dist.tensor<[b = 8, h = 16] local [4, 8], f32 on @grid2x2 split [[0], [1]]> -> !dist.tensor<[b = 8, h = 16] local [4, 16], f32 on @grid2x2 split [[0], []]>
  dist.return %a : !dist.tensor<[b = 8, h = 16] local [4, 16], f32 on @grid2x2 split [[0], []]>
}

// CHECK: {{.*}}dist-collectives-invalid.mlir:208:3: error: 'dist.all_to_all' op dist.all_to_all over grid axis 1 from dim 1 ('h') to dim 0 ('b') gives !dist.tensor<{{\[}}b = 8, h = 16] local {{\[}}2, 16], f32 on @grid2x2 split {{\[}}{{\[}}0, 1], {{\[}}]]>, not the result's !dist.tensor<{{\[}}b = 8, h = 16] local {{\[}}4, 16], f32 on @grid2x2 split {{\[}}{{\[}}0], {{\[}}]]>

// -----

/// dist.send: between grids of one shape

dist.program @p(devices = 4) {
  shard.grid @grid2(shape = 2)
  shard.grid @grid2_at2(shape = 2) {dist.first_device = 2 : i64}
  shard.grid @grid4(shape = 4)
  %x = dist.input "x" : !dist.tensor<[b = 4, d = 8] local [2, 8], f32 on @grid2 split [[0], []]>
  dist.send %x to @grid4 tag "x->h" : !dist.tensor<[b = 4, d = 8] local [2, 8], f32 on @grid2 split [[0], []]>
  %r = dist.recv from @grid2 tag "x->h" : !dist.tensor<[b = 4, d = 8] local [1, 8], f32 on @grid4 split [[0], []]>
  dist.return %x : !dist.tensor<[b = 4, d = 8] local [2, 8], f32 on @grid2 split [[0], []]>
}

// CHECK: {{.*}}dist-collectives-invalid.mlir:223:3: error: 'dist.send' op dist.send moves each block to the device at its coordinates, so @grid2 (shape 2) and @grid4 (shape 4) must have one shape

// -----

/// dist.send: to other devices

dist.program @p(devices = 4) {
  shard.grid @grid2(shape = 2)
  shard.grid @grid2_at2(shape = 2) {dist.first_device = 2 : i64}
  shard.grid @grid2_again(shape = 2)
  %x = dist.input "x" : !dist.tensor<[b = 4, d = 8] local [2, 8], f32 on @grid2 split [[0], []]>
  dist.send %x to @grid2_again tag "x->h" : !dist.tensor<[b = 4, d = 8] local [2, 8], f32 on @grid2 split [[0], []]>
  %r = dist.recv from @grid2 tag "x->h" : !dist.tensor<[b = 4, d = 8] local [2, 8], f32 on @grid2_again split [[0], []]>
  dist.return %x : !dist.tensor<[b = 4, d = 8] local [2, 8], f32 on @grid2 split [[0], []]>
}

// CHECK: {{.*}}dist-collectives-invalid.mlir:239:3: error: 'dist.send' op dist.send between @grid2 and @grid2_again, which are the same devices (from device 0), moves nothing

// -----

/// dist.send: to a grid of the program

dist.program @p(devices = 4) {
  shard.grid @grid2(shape = 2)
  shard.grid @grid2_at2(shape = 2) {dist.first_device = 2 : i64}
  %x = dist.input "x" : !dist.tensor<[b = 4, d = 8] local [2, 8], f32 on @grid2 split [[0], []]>
  dist.send %x to @nowhere tag "x->h" : !dist.tensor<[b = 4, d = 8] local [2, 8], f32 on @grid2 split [[0], []]>
  dist.return %x : !dist.tensor<[b = 4, d = 8] local [2, 8], f32 on @grid2 split [[0], []]>
}

// CHECK: {{.*}}dist-collectives-invalid.mlir:254:3: error: 'dist.send' op @nowhere is not a shard.grid of dist.program @p; declare it there with `shard.grid @nowhere(shape = ...)`

// -----

/// dist.send: received by a dist.recv of its tag

dist.program @p(devices = 4) {
  shard.grid @grid2(shape = 2)
  shard.grid @grid2_at2(shape = 2) {dist.first_device = 2 : i64}
  %x = dist.input "x" : !dist.tensor<[b = 4, d = 8] local [2, 8], f32 on @grid2 split [[0], []]>
  dist.send %x to @grid2_at2 tag "x->h" : !dist.tensor<[b = 4, d = 8] local [2, 8], f32 on @grid2 split [[0], []]>
  dist.return %x : !dist.tensor<[b = 4, d = 8] local [2, 8], f32 on @grid2 split [[0], []]>
}

// CHECK: {{.*}}dist-collectives-invalid.mlir:268:3: error: 'dist.send' op the 1st dist.send tagged "x->h" has no dist.recv tagged "x->h" after it to receive it

// -----

/// dist.send: first in first out: the 2nd send of a tag needs a 2nd recv

dist.program @p(devices = 4) {
  shard.grid @grid2(shape = 2)
  shard.grid @grid2_at2(shape = 2) {dist.first_device = 2 : i64}
  %x = dist.input "x" : !dist.tensor<[b = 4, d = 8] local [2, 8], f32 on @grid2 split [[0], []]>
  dist.send %x to @grid2_at2 tag "x->h" : !dist.tensor<[b = 4, d = 8] local [2, 8], f32 on @grid2 split [[0], []]>
  dist.send %x to @grid2_at2 tag "x->h" : !dist.tensor<[b = 4, d = 8] local [2, 8], f32 on @grid2 split [[0], []]>
  %r = dist.recv from @grid2 tag "x->h" : !dist.tensor<[b = 4, d = 8] local [2, 8], f32 on @grid2_at2 split [[0], []]>
  dist.return %r : !dist.tensor<[b = 4, d = 8] local [2, 8], f32 on @grid2_at2 split [[0], []]>
}

// CHECK: {{.*}}dist-collectives-invalid.mlir:283:3: error: 'dist.send' op the 2nd dist.send tagged "x->h" has no dist.recv tagged "x->h" after it to receive it

// -----

/// dist.recv: receives a dist.send of its tag

dist.program @p(devices = 4) {
  shard.grid @grid2(shape = 2)
  shard.grid @grid2_at2(shape = 2) {dist.first_device = 2 : i64}
  %r = dist.recv from @grid2 tag "x->h" : !dist.tensor<[b = 4, d = 8] local [2, 8], f32 on @grid2_at2 split [[0], []]>
  dist.return %r : !dist.tensor<[b = 4, d = 8] local [2, 8], f32 on @grid2_at2 split [[0], []]>
}

// CHECK: {{.*}}dist-collectives-invalid.mlir:297:3: error: 'dist.recv' op the 1st dist.recv tagged "x->h" has no dist.send tagged "x->h" before it to receive from

// -----

/// dist.recv: after its dist.send

dist.program @p(devices = 4) {
  shard.grid @grid2(shape = 2)
  shard.grid @grid2_at2(shape = 2) {dist.first_device = 2 : i64}
  %x = dist.input "x" : !dist.tensor<[b = 4, d = 8] local [2, 8], f32 on @grid2 split [[0], []]>
  %r = dist.recv from @grid2 tag "x->h" : !dist.tensor<[b = 4, d = 8] local [2, 8], f32 on @grid2_at2 split [[0], []]>
  dist.send %x to @grid2_at2 tag "x->h" : !dist.tensor<[b = 4, d = 8] local [2, 8], f32 on @grid2 split [[0], []]>
  dist.return %r : !dist.tensor<[b = 4, d = 8] local [2, 8], f32 on @grid2_at2 split [[0], []]>
}

// CHECK: {{.*}}dist-collectives-invalid.mlir:311:3: error: 'dist.recv' op the 1st dist.recv tagged "x->h" has no dist.send tagged "x->h" before it to receive from

// -----

/// dist.recv: from the grid its dist.send sends from, on the grid it sends to

dist.program @p(devices = 4) {
  shard.grid @grid2(shape = 2)
  shard.grid @grid2_at2(shape = 2) {dist.first_device = 2 : i64}
  shard.grid @grid2_at1(shape = 2) {dist.first_device = 1 : i64}
  %x = dist.input "x" : !dist.tensor<[b = 4, d = 8] local [2, 8], f32 on @grid2 split [[0], []]>
  dist.send %x to @grid2_at2 tag "x->h" : !dist.tensor<[b = 4, d = 8] local [2, 8], f32 on @grid2 split [[0], []]>
  %r = dist.recv from @grid2_at1 tag "x->h" : !dist.tensor<[b = 4, d = 8] local [2, 8], f32 on @grid2_at2 split [[0], []]>
  dist.return %r : !dist.tensor<[b = 4, d = 8] local [2, 8], f32 on @grid2_at2 split [[0], []]>
}

// CHECK: {{.*}}dist-collectives-invalid.mlir:328:3: error: 'dist.recv' op the 1st dist.recv tagged "x->h" receives from @grid2 on @grid2_at2, as its dist.send sends, not from @grid2_at1 on @grid2_at2

// -----

/// dist.recv: the type its dist.send sends

dist.program @p(devices = 4) {
  shard.grid @grid2(shape = 2)
  shard.grid @grid2_at2(shape = 2) {dist.first_device = 2 : i64}
  %x = dist.input "x" : !dist.tensor<[b = 4, d = 8] local [2, 8], f32 on @grid2 split [[0], []]>
  dist.send %x to @grid2_at2 tag "x->h" : !dist.tensor<[b = 4, d = 8] local [2, 8], f32 on @grid2 split [[0], []]>
  %r = dist.recv from @grid2 tag "x->h" : !dist.tensor<[b = 4, d = 8] local [4, 4], f32 on @grid2_at2 split [[], [0]]>
  dist.return %r : !dist.tensor<[b = 4, d = 8] local [4, 4], f32 on @grid2_at2 split [[], [0]]>
}

// CHECK: {{.*}}dist-collectives-invalid.mlir:343:3: error: 'dist.recv' op the 1st dist.recv tagged "x->h" receives !dist.tensor<{{\[}}b = 4, d = 8] local {{\[}}2, 8], f32 on @grid2_at2 split {{\[}}{{\[}}0], {{\[}}]]>, the value its dist.send sends, not !dist.tensor<{{\[}}b = 4, d = 8] local {{\[}}4, 4], f32 on @grid2_at2 split {{\[}}{{\[}}], {{\[}}0]]>

