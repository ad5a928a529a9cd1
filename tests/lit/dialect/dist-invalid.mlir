// RUN: pase-opt %s --split-input-file --verify-diagnostics | filecheck %s

/// dist.program: runs on at least one device

dist.program @p(devices = 0) {
  shard.grid @grid1(shape = 1)
  %x = dist.input "x" : !dist.tensor<[b = 8] local [8], f32 on @grid1 split [[]]>
  dist.return %x : !dist.tensor<[b = 8] local [8], f32 on @grid1 split [[]]>
}

// CHECK: {{.*}}dist-invalid.mlir:5:1: error: 'dist.program' op dist.program @p: devices must be between 1 and 8,192, got 0

// -----

/// dist.program: every grid axis has at least one device

dist.program @p(devices = 4) {
  shard.grid @grid4(shape = 0)
  %x = dist.input "x" : !dist.tensor<[b = 8] local [8], f32 on @grid4 split [[]]>
  dist.return %x : !dist.tensor<[b = 8] local [8], f32 on @grid4 split [[]]>
}

// CHECK: {{.*}}dist-invalid.mlir:17:1: error: 'dist.program' op shard.grid @grid4 has shape 0; every grid axis needs at least 1 device

// -----

/// dist.program: grids are static

dist.program @p(devices = 4) {
  shard.grid @grid2x2(shape = 2x?)
  %x = dist.input "x" : !dist.tensor<[b = 8] local [8], f32 on @grid2x2 split [[]]>
  dist.return %x : !dist.tensor<[b = 8] local [8], f32 on @grid2x2 split [[]]>
}

// CHECK: {{.*}}dist-invalid.mlir:29:1: error: 'dist.program' op shard.grid @grid2x2 has shape 2x?; every grid axis needs at least 1 device

// -----

/// dist.program: a grid has at most the program's devices

dist.program @p(devices = 2) {
  shard.grid @grid4(shape = 4)
  %x = dist.input "x" : !dist.tensor<[b = 8] local [2], f32 on @grid4 split [[0]]>
  dist.return %x : !dist.tensor<[b = 8] local [2], f32 on @grid4 split [[0]]>
}

// CHECK: {{.*}}dist-invalid.mlir:41:1: error: 'dist.program' op shard.grid @grid4 has 4 devices but dist.program @p runs on 2

// -----

/// dist.program: the body takes no arguments

dist.program @p(devices = 1) {
^bb0(%a : !dist.tensor<[b = 8] local [8], f32 on @grid1 split [[]]>):
  shard.grid @grid1(shape = 1)
  dist.return %a : !dist.tensor<[b = 8] local [8], f32 on @grid1 split [[]]>
}

// CHECK: {{.*}}dist-invalid.mlir:53:1: error: 'dist.program' op the body of a dist.program takes no arguments; inputs and parameters enter through dist.input and dist.param

// -----

/// dist ops live in a dist.program

shard.grid @grid1(shape = 1)
%x = dist.input "x" : !dist.tensor<[b = 8] local [8], f32 on @grid1 split [[]]>

// CHECK: {{.*}}dist-invalid.mlir:66:1: error: 'dist.input' op 'dist.input' expects parent op 'dist.program'

// -----

/// !dist.tensor: its grid is a shard.grid of the program

dist.program @p(devices = 4) {
  shard.grid @grid4(shape = 4)
  %x = dist.input "x" : !dist.tensor<[b = 8] local [2], f32 on @gridX split [[0]]>
  dist.return %x : !dist.tensor<[b = 8] local [2], f32 on @gridX split [[0]]>
}

// CHECK: {{.*}}dist-invalid.mlir:76:3: error: 'dist.input' op the result: @gridX is not a shard.grid of dist.program @p; declare it there with `shard.grid @gridX(shape = ...)`

// -----

/// !dist.tensor: split axes are axes of the grid

dist.program @p(devices = 4) {
  shard.grid @grid4(shape = 4)
  %x = dist.input "x" : !dist.tensor<[b = 8] local [2], f32 on @grid4 split [[1]]>
  dist.return %x : !dist.tensor<[b = 8] local [2], f32 on @grid4 split [[1]]>
}

// CHECK: {{.*}}dist-invalid.mlir:88:3: error: 'dist.input' op the result: dimension 'b' is split along grid axis 1, but @grid4 has 1 axis

// -----

/// !dist.tensor: a split dim divides evenly

dist.program @p(devices = 4) {
  shard.grid @grid4(shape = 4)
  %x = dist.param "x" : !dist.tensor<[b = 6] local [1], f32 on @grid4 split [[0]]>
  dist.return %x : !dist.tensor<[b = 6] local [1], f32 on @grid4 split [[0]]>
}

// CHECK: {{.*}}dist-invalid.mlir:100:3: error: 'dist.param' op the result: dimension 'b' of size 6 does not split evenly 4 ways along grid axis 0 of @grid4

// -----

/// !dist.tensor: the local size is the size over the split (64 split 4 ways is 16)

dist.program @p(devices = 4) {
  shard.grid @grid4(shape = 4)
  %x = dist.input "x" : !dist.tensor<[b = 64, c = 10] local [15, 10], f32 on @grid4 split [[0], []]>
  dist.return %x : !dist.tensor<[b = 64, c = 10] local [15, 10], f32 on @grid4 split [[0], []]>
}

// CHECK: {{.*}}dist-invalid.mlir:112:3: error: 'dist.input' op the result: dimension 'b' of size 64 is split 4 ways along grid axis 0 of @grid4, so its local size is 16, not 15

// -----

/// !dist.tensor: the local size over two grid axes

dist.program @p(devices = 4) {
  shard.grid @grid2x2(shape = 2x2)
  %x = dist.input "x" : !dist.tensor<[b = 8] local [4], f32 on @grid2x2 split [[0, 1]]>
  dist.return %x : !dist.tensor<[b = 8] local [4], f32 on @grid2x2 split [[0, 1]]>
}

// CHECK: {{.*}}dist-invalid.mlir:124:3: error: 'dist.input' op the result: dimension 'b' of size 8 is split 4 ways along grid axes 0, 1 of @grid2x2, so its local size is 2, not 4

// -----

/// !dist.tensor: partial axes are axes of the grid

dist.program @p(devices = 2) {
  shard.grid @grid2(shape = 2)
  %x = dist.input "x" : !dist.tensor<[b = 8, h = 4] local [4, 4], f32 on @grid2 split [[0], []]>
  %s = dist.layer "dnn.reduce"(%x) stats [] props {kind = "sum", over = ["b"]} tag "s" : (!dist.tensor<[b = 8, h = 4] local [4, 4], f32 on @grid2 split [[0], []]>) -> !dist.tensor<[h = 4] local [4], f32 on @grid2 split [[]] partial [1]>
  dist.return %x : !dist.tensor<[b = 8, h = 4] local [4, 4], f32 on @grid2 split [[0], []]>
}

// CHECK: {{.*}}dist-invalid.mlir:137:3: error: 'dist.layer' op the result: partial sums over grid axis 1, but @grid2 has 1 axis

// -----

/// dist.input: arrives complete

dist.program @p(devices = 2) {
  shard.grid @grid2(shape = 2)
  %x = dist.input "x" : !dist.tensor<[b = 8] local [8], f32 on @grid2 split [[]] partial [0]>
  dist.return %x : !dist.tensor<[b = 8] local [8], f32 on @grid2 split [[]] partial [0]>
}

// CHECK: {{.*}}dist-invalid.mlir:149:3: error: 'dist.input' op a dist.input arrives complete, not as partial sums; only a dist.layer leaves partial sums

// -----

/// dist.param: arrives complete

dist.program @p(devices = 2) {
  shard.grid @grid2(shape = 2)
  %w = dist.param "w" : !dist.tensor<[b = 8] local [8], f32 on @grid2 split [[]] partial [0]>
  dist.return %w : !dist.tensor<[b = 8] local [8], f32 on @grid2 split [[]] partial [0]>
}

// CHECK: {{.*}}dist-invalid.mlir:161:3: error: 'dist.param' op a dist.param arrives complete, not as partial sums; only a dist.layer leaves partial sums

// -----

/// dist.layer: runs a dnn layer op, dnn.vjp or dnn.sgd

dist.program @p(devices = 2) {
  shard.grid @grid2(shape = 2)
  %x = dist.input "x" : !dist.tensor<[b = 8, h = 4] local [8, 4], f32 on @grid2 split [[], []]>
  %y = dist.layer "dnn.bogus"(%x) stats [] props {} tag "y" : (!dist.tensor<[b = 8, h = 4] local [8, 4], f32 on @grid2 split [[], []]>) -> !dist.tensor<[b = 8, h = 4] local [8, 4], f32 on @grid2 split [[], []]>
  dist.return %y : !dist.tensor<[b = 8, h = 4] local [8, 4], f32 on @grid2 split [[], []]>
}

// CHECK: {{.*}}dist-invalid.mlir:174:3: error: 'dist.layer' op unknown kernel 'dnn.bogus'; a dist.layer runs a dnn layer op, dnn.vjp or dnn.sgd

// -----

/// dist.layer: produces a value

dist.program @p(devices = 2) {
  shard.grid @grid2(shape = 2)
  %x = dist.input "x" : !dist.tensor<[b = 8, h = 4] local [8, 4], f32 on @grid2 split [[], []]>
  dist.layer "dnn.relu"(%x) stats [] props {} tag "y" : (!dist.tensor<[b = 8, h = 4] local [8, 4], f32 on @grid2 split [[], []]>) -> ()
  dist.return %x : !dist.tensor<[b = 8, h = 4] local [8, 4], f32 on @grid2 split [[], []]>
}

// CHECK: {{.*}}dist-invalid.mlir:187:3: error: 'dist.layer' op a dist.layer produces at least one value

// -----

/// dist.layer: reads no partial sums

dist.program @p(devices = 2) {
  shard.grid @grid2(shape = 2)
  %x = dist.input "x" : !dist.tensor<[a = 2, b = 8, h = 4] local [1, 8, 4], f32 on @grid2 split [[0], [], []]>
  %s = dist.layer "dnn.reduce"(%x) stats [] props {kind = "sum", over = ["a"]} tag "s" : (!dist.tensor<[a = 2, b = 8, h = 4] local [1, 8, 4], f32 on @grid2 split [[0], [], []]>) -> !dist.tensor<[b = 8, h = 4] local [8, 4], f32 on @grid2 split [[], []] partial [0]>
  %y = dist.layer "dnn.relu"(%s) stats [] props {} tag "y" : (!dist.tensor<[b = 8, h = 4] local [8, 4], f32 on @grid2 split [[], []] partial [0]>) -> !dist.tensor<[b = 8, h = 4] local [8, 4], f32 on @grid2 split [[], []]>
  dist.return %y : !dist.tensor<[b = 8, h = 4] local [8, 4], f32 on @grid2 split [[], []]>
}

// CHECK: {{.*}}dist-invalid.mlir:201:3: error: 'dist.layer' op a dist.layer cannot read partial sums; all-reduce them first

// -----

/// dist.layer: runs on one grid (a value on another grid is redistributed first)

dist.program @p(devices = 4) {
  shard.grid @grid2(shape = 2)
  shard.grid @grid4(shape = 4)
  %x = dist.input "x" : !dist.tensor<[b = 8, h = 4] local [4, 4], f32 on @grid2 split [[0], []]>
  %y = dist.layer "dnn.relu"(%x) stats [] props {} tag "y" : (!dist.tensor<[b = 8, h = 4] local [4, 4], f32 on @grid2 split [[0], []]>) -> !dist.tensor<[b = 8, h = 4] local [2, 4], f32 on @grid4 split [[0], []]>
  dist.return %y : !dist.tensor<[b = 8, h = 4] local [2, 4], f32 on @grid4 split [[0], []]>
}

// CHECK: {{.*}}dist-invalid.mlir:215:3: error: 'dist.layer' op a dist.layer runs on one grid, got @grid2, @grid4

// -----

/// dist.layer: stats axes are axes of its grid

dist.program @p(devices = 2) {
  shard.grid @grid2(shape = 2)
  %x = dist.input "x" : !dist.tensor<[b = 8, h = 4] local [4, 4], f32 on @grid2 split [[0], []]>
  %y = dist.layer "dnn.softmax"(%x) stats [1] props {over = ["b"]} tag "y" : (!dist.tensor<[b = 8, h = 4] local [4, 4], f32 on @grid2 split [[0], []]>) -> !dist.tensor<[b = 8, h = 4] local [4, 4], f32 on @grid2 split [[0], []]>
  dist.return %y : !dist.tensor<[b = 8, h = 4] local [4, 4], f32 on @grid2 split [[0], []]>
}

// CHECK: {{.*}}dist-invalid.mlir:228:3: error: 'dist.layer' op stats axis 1 is not an axis of @grid2, which has 1 axis

// -----

/// dist.layer: a stats axis appears once

dist.program @p(devices = 4) {
  shard.grid @grid2x2(shape = 2x2)
  %x = dist.input "x" : !dist.tensor<[b = 8] local [2], f32 on @grid2x2 split [[0, 1]]>
  %y = dist.layer "dnn.softmax"(%x) stats [0, 0] props {over = ["b"]} tag "y" : (!dist.tensor<[b = 8] local [2], f32 on @grid2x2 split [[0, 1]]>) -> !dist.tensor<[b = 8] local [2], f32 on @grid2x2 split [[0, 1]]>
  dist.return %y : !dist.tensor<[b = 8] local [2], f32 on @grid2x2 split [[0, 1]]>
}

// CHECK: {{.*}}dist-invalid.mlir:241:3: error: 'dist.layer' op stats axis 0 appears twice

// -----

/// dist.all_reduce: runs on the grid of its input

dist.program @p(devices = 4) {
  shard.grid @grid4(shape = 4)
  shard.grid @grid2(shape = 2)
  %x = dist.input "x" : !dist.tensor<[a = 2, b = 8, h = 4] local [1, 8, 4], f32 on @grid2 split [[0], [], []]>
  %s = dist.layer "dnn.reduce"(%x) stats [] props {kind = "sum", over = ["a"]} tag "s" : (!dist.tensor<[a = 2, b = 8, h = 4] local [1, 8, 4], f32 on @grid2 split [[0], [], []]>) -> !dist.tensor<[b = 8, h = 4] local [8, 4], f32 on @grid2 split [[], []] partial [0]>
  %y = dist.all_reduce %s on @grid4 grid_axes = [0] tag "s" : !dist.tensor<[b = 8, h = 4] local [8, 4], f32 on @grid2 split [[], []] partial [0]> -> !dist.tensor<[b = 8, h = 4] local [8, 4], f32 on @grid2 split [[], []]>
  dist.return %y : !dist.tensor<[b = 8, h = 4] local [8, 4], f32 on @grid2 split [[], []]>
}

// CHECK: {{.*}}dist-invalid.mlir:256:3: error: 'dist.all_reduce' op dist.all_reduce runs on @grid2, the grid of its input, not @grid4

// -----

/// dist.all_reduce: grid_axes are exactly the input's partial axes (one too few)

dist.program @p(devices = 4) {
  shard.grid @grid2x2(shape = 2x2)
  %x = dist.input "x" : !dist.tensor<[a = 4, b = 8] local [1, 8], f32 on @grid2x2 split [[0, 1], []]>
  %s = dist.layer "dnn.reduce"(%x) stats [] props {kind = "sum", over = ["a"]} tag "s" : (!dist.tensor<[a = 4, b = 8] local [1, 8], f32 on @grid2x2 split [[0, 1], []]>) -> !dist.tensor<[b = 8] local [8], f32 on @grid2x2 split [[]] partial [0, 1]>
  %y = dist.all_reduce %s on @grid2x2 grid_axes = [1] tag "y" : !dist.tensor<[b = 8] local [8], f32 on @grid2x2 split [[]] partial [0, 1]> -> !dist.tensor<[b = 8] local [8], f32 on @grid2x2 split [[]]>
  dist.return %y : !dist.tensor<[b = 8] local [8], f32 on @grid2x2 split [[]]>
}

// CHECK: {{.*}}dist-invalid.mlir:270:3: error: 'dist.all_reduce' op dist.all_reduce must sum exactly the partial axes of its input

// -----

/// dist.all_reduce: grid_axes are exactly the input's partial axes (another axis)

dist.program @p(devices = 2) {
  shard.grid @grid2(shape = 2)
  %x = dist.input "x" : !dist.tensor<[a = 2, b = 8, h = 4] local [1, 8, 4], f32 on @grid2 split [[0], [], []]>
  %s = dist.layer "dnn.reduce"(%x) stats [] props {kind = "sum", over = ["a"]} tag "s" : (!dist.tensor<[a = 2, b = 8, h = 4] local [1, 8, 4], f32 on @grid2 split [[0], [], []]>) -> !dist.tensor<[b = 8, h = 4] local [8, 4], f32 on @grid2 split [[], []] partial [0]>
  %y = dist.all_reduce %s on @grid2 grid_axes = [1] tag "y" : !dist.tensor<[b = 8, h = 4] local [8, 4], f32 on @grid2 split [[], []] partial [0]> -> !dist.tensor<[b = 8, h = 4] local [8, 4], f32 on @grid2 split [[], []]>
  dist.return %y : !dist.tensor<[b = 8, h = 4] local [8, 4], f32 on @grid2 split [[], []]>
}

// CHECK: {{.*}}dist-invalid.mlir:284:3: error: 'dist.all_reduce' op dist.all_reduce must sum exactly the partial axes of its input

// -----

/// dist.all_reduce: its result is complete

dist.program @p(devices = 4) {
  shard.grid @grid2x2(shape = 2x2)
  %x = dist.input "x" : !dist.tensor<[a = 4, b = 8] local [1, 8], f32 on @grid2x2 split [[0, 1], []]>
  %s = dist.layer "dnn.reduce"(%x) stats [] props {kind = "sum", over = ["a"]} tag "s" : (!dist.tensor<[a = 4, b = 8] local [1, 8], f32 on @grid2x2 split [[0, 1], []]>) -> !dist.tensor<[b = 8] local [8], f32 on @grid2x2 split [[]] partial [0, 1]>
  %y = dist.all_reduce %s on @grid2x2 grid_axes = [0] tag "y" : !dist.tensor<[b = 8] local [8], f32 on @grid2x2 split [[]] partial [0, 1]> -> !dist.tensor<[b = 8] local [8], f32 on @grid2x2 split [[]] partial [1]>
  dist.return %s : !dist.tensor<[b = 8] local [8], f32 on @grid2x2 split [[]] partial [0, 1]>
}

// CHECK: {{.*}}dist-invalid.mlir:298:3: error: 'dist.all_reduce' op dist.all_reduce must sum exactly the partial axes of its input

// -----

/// dist.all_reduce: keeps the layout of its input

dist.program @p(devices = 2) {
  shard.grid @grid2(shape = 2)
  %x = dist.input "x" : !dist.tensor<[a = 2, b = 8, h = 4] local [1, 8, 4], f32 on @grid2 split [[0], [], []]>
  %s = dist.layer "dnn.reduce"(%x) stats [] props {kind = "sum", over = ["a"]} tag "s" : (!dist.tensor<[a = 2, b = 8, h = 4] local [1, 8, 4], f32 on @grid2 split [[0], [], []]>) -> !dist.tensor<[b = 8, h = 4] local [8, 4], f32 on @grid2 split [[], []] partial [0]>
  %y = dist.all_reduce %s on @grid2 grid_axes = [0] tag "y" : !dist.tensor<[b = 8, h = 4] local [8, 4], f32 on @grid2 split [[], []] partial [0]> -> !dist.tensor<[b = 8, h = 4] local [4, 4], f32 on @grid2 split [[0], []]>
  dist.return %y : !dist.tensor<[b = 8, h = 4] local [4, 4], f32 on @grid2 split [[0], []]>
}

// CHECK: {{.*}}dist-invalid.mlir:312:3: error: 'dist.all_reduce' op dist.all_reduce keeps the layout of its input

// -----

/// dist.redistribute: moves complete blocks (the input is partial)

dist.program @p(devices = 2) {
  shard.grid @grid2(shape = 2)
  %x = dist.input "x" : !dist.tensor<[a = 2, b = 8, h = 4] local [1, 8, 4], f32 on @grid2 split [[0], [], []]>
  %s = dist.layer "dnn.reduce"(%x) stats [] props {kind = "sum", over = ["a"]} tag "s" : (!dist.tensor<[a = 2, b = 8, h = 4] local [1, 8, 4], f32 on @grid2 split [[0], [], []]>) -> !dist.tensor<[b = 8, h = 4] local [8, 4], f32 on @grid2 split [[], []] partial [0]>
  %y = dist.redistribute %s tag "s->y" : !dist.tensor<[b = 8, h = 4] local [8, 4], f32 on @grid2 split [[], []] partial [0]> -> !dist.tensor<[b = 8, h = 4] local [4, 4], f32 on @grid2 split [[0], []]>
  dist.return %y : !dist.tensor<[b = 8, h = 4] local [4, 4], f32 on @grid2 split [[0], []]>
}

// CHECK: {{.*}}dist-invalid.mlir:326:3: error: 'dist.redistribute' op dist.redistribute moves complete blocks, not partial sums

// -----

/// dist.redistribute: moves complete blocks (the result is partial)

dist.program @p(devices = 2) {
  shard.grid @grid2(shape = 2)
  %x = dist.input "x" : !dist.tensor<[b = 8, h = 4] local [4, 4], f32 on @grid2 split [[0], []]>
  %y = dist.redistribute %x tag "x->y" : !dist.tensor<[b = 8, h = 4] local [4, 4], f32 on @grid2 split [[0], []]> -> !dist.tensor<[b = 8, h = 4] local [8, 4], f32 on @grid2 split [[], []] partial [0]>
  dist.return %x : !dist.tensor<[b = 8, h = 4] local [4, 4], f32 on @grid2 split [[0], []]>
}

// CHECK: {{.*}}dist-invalid.mlir:339:3: error: 'dist.redistribute' op dist.redistribute moves complete blocks, not partial sums

// -----

/// dist.redistribute: keeps the global shape (sizes)

dist.program @p(devices = 2) {
  shard.grid @grid2(shape = 2)
  %x = dist.input "x" : !dist.tensor<[b = 8, h = 4] local [4, 4], f32 on @grid2 split [[0], []]>
  %y = dist.redistribute %x tag "x->y" : !dist.tensor<[b = 8, h = 4] local [4, 4], f32 on @grid2 split [[0], []]> -> !dist.tensor<[b = 8, h = 8] local [8, 4], f32 on @grid2 split [[], [0]]>
  dist.return %y : !dist.tensor<[b = 8, h = 8] local [8, 4], f32 on @grid2 split [[], [0]]>
}

// CHECK: {{.*}}dist-invalid.mlir:352:3: error: 'dist.redistribute' op dist.redistribute keeps the global shape

// -----

/// dist.redistribute: keeps the global shape (dimension names: a transpose is a layer)

dist.program @p(devices = 2) {
  shard.grid @grid2(shape = 2)
  %x = dist.input "x" : !dist.tensor<[b = 8, h = 4] local [4, 4], f32 on @grid2 split [[0], []]>
  %y = dist.redistribute %x tag "x->y" : !dist.tensor<[b = 8, h = 4] local [4, 4], f32 on @grid2 split [[0], []]> -> !dist.tensor<[h = 4, b = 8] local [4, 4], f32 on @grid2 split [[], [0]]>
  dist.return %y : !dist.tensor<[h = 4, b = 8] local [4, 4], f32 on @grid2 split [[], [0]]>
}

// CHECK: {{.*}}dist-invalid.mlir:365:3: error: 'dist.redistribute' op dist.redistribute keeps the global shape

// -----

/// dist.redistribute: keeps the element type

dist.program @p(devices = 2) {
  shard.grid @grid2(shape = 2)
  %x = dist.input "x" : !dist.tensor<[b = 8, h = 4] local [4, 4], f32 on @grid2 split [[0], []]>
  %y = dist.redistribute %x tag "x->y" : !dist.tensor<[b = 8, h = 4] local [4, 4], f32 on @grid2 split [[0], []]> -> !dist.tensor<[b = 8, h = 4] local [8, 4], f64 on @grid2 split [[], []]>
  dist.return %y : !dist.tensor<[b = 8, h = 4] local [8, 4], f64 on @grid2 split [[], []]>
}

// CHECK: {{.*}}dist-invalid.mlir:378:3: error: 'dist.redistribute' op dist.redistribute keeps the element type, got f32 -> f64

// -----

/// dist.return: returns complete values

dist.program @p(devices = 2) {
  shard.grid @grid2(shape = 2)
  %x = dist.input "x" : !dist.tensor<[a = 2, b = 8, h = 4] local [1, 8, 4], f32 on @grid2 split [[0], [], []]>
  %s = dist.layer "dnn.reduce"(%x) stats [] props {kind = "sum", over = ["a"]} tag "s" : (!dist.tensor<[a = 2, b = 8, h = 4] local [1, 8, 4], f32 on @grid2 split [[0], [], []]>) -> !dist.tensor<[b = 8, h = 4] local [8, 4], f32 on @grid2 split [[], []] partial [0]>
  dist.return %x, %s : !dist.tensor<[a = 2, b = 8, h = 4] local [1, 8, 4], f32 on @grid2 split [[0], [], []]>, !dist.tensor<[b = 8, h = 4] local [8, 4], f32 on @grid2 split [[], []] partial [0]>
}

// CHECK: {{.*}}dist-invalid.mlir:392:3: error: 'dist.return' op operand 1 is a partial sum; all-reduce it before dist.return

// -----

/// dist.layer: a forward kernel's global shapes follow its dnn op's shape rule

dist.program @p(devices = 1) {
  shard.grid @grid1(shape = 1)
  %x = dist.input "x" : !dist.tensor<[b = 8, d = 4] local [8, 4], f32 on @grid1 split [[], []]>
  %w = dist.param "w" : !dist.tensor<[d = 4, h = 2] local [4, 2], f32 on @grid1 split [[], []]>
  %y = dist.layer "dnn.einsum"(%x, %w) stats [] props {} tag "y" : (!dist.tensor<[b = 8, d = 4] local [8, 4], f32 on @grid1 split [[], []]>, !dist.tensor<[d = 4, h = 2] local [4, 2], f32 on @grid1 split [[], []]>) -> !dist.tensor<[b = 8, h = 3] local [8, 3], f32 on @grid1 split [[], []]>
  dist.return %y : !dist.tensor<[b = 8, h = 3] local [8, 3], f32 on @grid1 split [[], []]>
}

// CHECK: {{.*}}dist-invalid.mlir:405:3: error: 'dist.layer' op dnn.einsum of these operands gives !dnn.tensor<[b = 8, h = 2], f32>, not the result's !dnn.tensor<[b = 8, h = 3], f32>

// -----

dist.program @p(devices = 1) {
  shard.grid @grid1(shape = 1)
  %x = dist.input "x" : !dist.tensor<[b = 8, d = 4] local [8, 4], f32 on @grid1 split [[], []]>
  %y = dist.layer "dnn.relu"(%x) stats [] props {} tag "y" : (!dist.tensor<[b = 8, d = 4] local [8, 4], f32 on @grid1 split [[], []]>) -> !dist.tensor<[d = 4, b = 8] local [4, 8], f32 on @grid1 split [[], []]>
  dist.return %y : !dist.tensor<[d = 4, b = 8] local [4, 8], f32 on @grid1 split [[], []]>
}

// CHECK: {{.*}}dist-invalid.mlir:416:3: error: 'dist.layer' op dnn.relu of these operands gives !dnn.tensor<[b = 8, d = 4], f32>, not the result's !dnn.tensor<[d = 4, b = 8], f32>

// -----

/// dist.layer: only a dnn.vjp kernel is seeded

dist.program @p(devices = 2) {
  shard.grid @grid2(shape = 2)
  %x = dist.param "x" : !dist.tensor<[b = 4] local [2], f32 on @grid2 split [[0]]>
  %r = dist.layer "dnn.relu"(%x) seeded stats [] props {} tag "r" : (!dist.tensor<[b = 4] local [2], f32 on @grid2 split [[0]]>) -> !dist.tensor<[b = 4] local [2], f32 on @grid2 split [[0]]>
  dist.return %r : !dist.tensor<[b = 4] local [2], f32 on @grid2 split [[0]]>
}

// CHECK: {{.*}}dist-invalid.mlir:429:3: error: 'dist.layer' op only a dnn.vjp kernel is seeded, not dnn.relu

// -----

/// dist.layer: a seeded dnn.vjp differentiates a scalar loss

dist.program @p(devices = 2) {
  shard.grid @grid2(shape = 2)
  %x = dist.param "x" : !dist.tensor<[b = 4] local [2], f32 on @grid2 split [[0]]>
  %r = dist.layer "dnn.relu"(%x) stats [] props {} tag "r" : (!dist.tensor<[b = 4] local [2], f32 on @grid2 split [[0]]>) -> !dist.tensor<[b = 4] local [2], f32 on @grid2 split [[0]]>
  %dx = dist.layer "dnn.vjp"(%x, %r) seeded stats [] props {wrt = [#builtin.int<0>], forward = "dnn.relu"} tag "r" : (!dist.tensor<[b = 4] local [2], f32 on @grid2 split [[0]]>, !dist.tensor<[b = 4] local [2], f32 on @grid2 split [[0]]>) -> !dist.tensor<[b = 4] local [2], f32 on @grid2 split [[0]]>
  dist.return %dx : !dist.tensor<[b = 4] local [2], f32 on @grid2 split [[0]]>
}

// CHECK: {{.*}}dist-invalid.mlir:443:3: error: 'dist.layer' op a seeded dnn.vjp differentiates the loss: its last operand (the forward result) must be a scalar
