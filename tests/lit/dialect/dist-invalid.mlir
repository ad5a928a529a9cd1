// RUN: pase-opt %s --split-input-file --verify-diagnostics | filecheck %s

/// dist.layer: reads no partial sums

dist.program @p(devices = 2) {
  shard.grid @grid2(shape = 2)
  %x = dist.input "x" : !dist.tensor<[b = 8, h = 4] local [8, 4], f32 on @grid2 split [[], []] partial [0]>
  %y = dist.layer "dnn.relu"(%x) stats [] props {} tag "y" : (!dist.tensor<[b = 8, h = 4] local [8, 4], f32 on @grid2 split [[], []] partial [0]>) -> !dist.tensor<[b = 8, h = 4] local [8, 4], f32 on @grid2 split [[], []]>
  dist.return %y : !dist.tensor<[b = 8, h = 4] local [8, 4], f32 on @grid2 split [[], []]>
}

// CHECK: {{.*}}dist-invalid.mlir:8:3: error: 'dist.layer' op a dist.layer cannot read partial sums; all-reduce them first

// -----

/// dist.layer: runs on one grid (a value on another grid is redistributed first)

dist.program @p(devices = 4) {
  shard.grid @grid2(shape = 2)
  shard.grid @grid4(shape = 4)
  %x = dist.input "x" : !dist.tensor<[b = 8, h = 4] local [4, 4], f32 on @grid2 split [[0], []]>
  %y = dist.layer "dnn.relu"(%x) stats [] props {} tag "y" : (!dist.tensor<[b = 8, h = 4] local [4, 4], f32 on @grid2 split [[0], []]>) -> !dist.tensor<[b = 8, h = 4] local [2, 4], f32 on @grid4 split [[0], []]>
  dist.return %y : !dist.tensor<[b = 8, h = 4] local [2, 4], f32 on @grid4 split [[0], []]>
}

// CHECK: {{.*}}dist-invalid.mlir:22:3: error: 'dist.layer' op a dist.layer runs on one grid, got @grid2, @grid4

// -----

/// dist.all_reduce: grid_axes are exactly the input's partial axes (one too few)

dist.program @p(devices = 4) {
  shard.grid @grid2x2(shape = 2x2)
  %x = dist.input "x" : !dist.tensor<[b = 8] local [8], f32 on @grid2x2 split [[]] partial [0, 1]>
  %y = dist.all_reduce %x on @grid2x2 grid_axes = [1] tag "y" : !dist.tensor<[b = 8] local [8], f32 on @grid2x2 split [[]] partial [0, 1]> -> !dist.tensor<[b = 8] local [8], f32 on @grid2x2 split [[]]>
  dist.return %y : !dist.tensor<[b = 8] local [8], f32 on @grid2x2 split [[]]>
}

// CHECK: {{.*}}dist-invalid.mlir:35:3: error: 'dist.all_reduce' op dist.all_reduce must sum exactly the partial axes of its input

// -----

/// dist.all_reduce: grid_axes are exactly the input's partial axes (another axis)

dist.program @p(devices = 4) {
  shard.grid @grid2x2(shape = 2x2)
  %x = dist.input "x" : !dist.tensor<[b = 8] local [8], f32 on @grid2x2 split [[]] partial [0]>
  %y = dist.all_reduce %x on @grid2x2 grid_axes = [1] tag "y" : !dist.tensor<[b = 8] local [8], f32 on @grid2x2 split [[]] partial [0]> -> !dist.tensor<[b = 8] local [8], f32 on @grid2x2 split [[]]>
  dist.return %y : !dist.tensor<[b = 8] local [8], f32 on @grid2x2 split [[]]>
}

// CHECK: {{.*}}dist-invalid.mlir:48:3: error: 'dist.all_reduce' op dist.all_reduce must sum exactly the partial axes of its input

// -----

/// dist.all_reduce: its result is complete

dist.program @p(devices = 4) {
  shard.grid @grid2x2(shape = 2x2)
  %x = dist.input "x" : !dist.tensor<[b = 8] local [8], f32 on @grid2x2 split [[]] partial [0, 1]>
  %y = dist.all_reduce %x on @grid2x2 grid_axes = [0] tag "y" : !dist.tensor<[b = 8] local [8], f32 on @grid2x2 split [[]] partial [0, 1]> -> !dist.tensor<[b = 8] local [8], f32 on @grid2x2 split [[]] partial [1]>
  dist.return %y : !dist.tensor<[b = 8] local [8], f32 on @grid2x2 split [[]] partial [1]>
}

// CHECK: {{.*}}dist-invalid.mlir:61:3: error: 'dist.all_reduce' op dist.all_reduce must sum exactly the partial axes of its input

// -----

/// dist.all_reduce: keeps the layout of its input

dist.program @p(devices = 2) {
  shard.grid @grid2(shape = 2)
  %x = dist.input "x" : !dist.tensor<[b = 8, h = 4] local [8, 4], f32 on @grid2 split [[], []] partial [0]>
  %y = dist.all_reduce %x on @grid2 grid_axes = [0] tag "y" : !dist.tensor<[b = 8, h = 4] local [8, 4], f32 on @grid2 split [[], []] partial [0]> -> !dist.tensor<[b = 8, h = 4] local [4, 4], f32 on @grid2 split [[0], []]>
  dist.return %y : !dist.tensor<[b = 8, h = 4] local [4, 4], f32 on @grid2 split [[0], []]>
}

// CHECK: {{.*}}dist-invalid.mlir:74:3: error: 'dist.all_reduce' op dist.all_reduce keeps the layout of its input

// -----

/// dist.redistribute: moves complete blocks (the input is partial)

dist.program @p(devices = 2) {
  shard.grid @grid2(shape = 2)
  %x = dist.input "x" : !dist.tensor<[b = 8, h = 4] local [8, 4], f32 on @grid2 split [[], []] partial [0]>
  %y = dist.redistribute %x tag "x->y" : !dist.tensor<[b = 8, h = 4] local [8, 4], f32 on @grid2 split [[], []] partial [0]> -> !dist.tensor<[b = 8, h = 4] local [4, 4], f32 on @grid2 split [[0], []]>
  dist.return %y : !dist.tensor<[b = 8, h = 4] local [4, 4], f32 on @grid2 split [[0], []]>
}

// CHECK: {{.*}}dist-invalid.mlir:87:3: error: 'dist.redistribute' op dist.redistribute moves complete blocks, not partial sums

// -----

/// dist.redistribute: moves complete blocks (the result is partial)

dist.program @p(devices = 2) {
  shard.grid @grid2(shape = 2)
  %x = dist.input "x" : !dist.tensor<[b = 8, h = 4] local [4, 4], f32 on @grid2 split [[0], []]>
  %y = dist.redistribute %x tag "x->y" : !dist.tensor<[b = 8, h = 4] local [4, 4], f32 on @grid2 split [[0], []]> -> !dist.tensor<[b = 8, h = 4] local [8, 4], f32 on @grid2 split [[], []] partial [0]>
  dist.return %y : !dist.tensor<[b = 8, h = 4] local [8, 4], f32 on @grid2 split [[], []] partial [0]>
}

// CHECK: {{.*}}dist-invalid.mlir:100:3: error: 'dist.redistribute' op dist.redistribute moves complete blocks, not partial sums

// -----

/// dist.redistribute: keeps the global shape (sizes)

dist.program @p(devices = 2) {
  shard.grid @grid2(shape = 2)
  %x = dist.input "x" : !dist.tensor<[b = 8, h = 4] local [4, 4], f32 on @grid2 split [[0], []]>
  %y = dist.redistribute %x tag "x->y" : !dist.tensor<[b = 8, h = 4] local [4, 4], f32 on @grid2 split [[0], []]> -> !dist.tensor<[b = 8, h = 8] local [8, 4], f32 on @grid2 split [[], [0]]>
  dist.return %y : !dist.tensor<[b = 8, h = 8] local [8, 4], f32 on @grid2 split [[], [0]]>
}

// CHECK: {{.*}}dist-invalid.mlir:113:3: error: 'dist.redistribute' op dist.redistribute keeps the global shape

// -----

/// dist.redistribute: keeps the global shape (dimension names: a transpose is a layer)

dist.program @p(devices = 2) {
  shard.grid @grid2(shape = 2)
  %x = dist.input "x" : !dist.tensor<[b = 8, h = 4] local [4, 4], f32 on @grid2 split [[0], []]>
  %y = dist.redistribute %x tag "x->y" : !dist.tensor<[b = 8, h = 4] local [4, 4], f32 on @grid2 split [[0], []]> -> !dist.tensor<[h = 4, b = 8] local [4, 4], f32 on @grid2 split [[], [0]]>
  dist.return %y : !dist.tensor<[h = 4, b = 8] local [4, 4], f32 on @grid2 split [[], [0]]>
}

// CHECK: {{.*}}dist-invalid.mlir:126:3: error: 'dist.redistribute' op dist.redistribute keeps the global shape
