// RUN: pase-opt %s --split-input-file --parsing-diagnostics | filecheck %s

/// !dist.tensor: a size, a local size and split axes per dimension

dist.program @p(devices = 4) {
  shard.grid @grid2x2(shape = 2x2)
  %x = dist.input "x" : !dist.tensor<[b = 8, h = 4] local [8], f32 on @grid2x2 split [[], []]>
  dist.return %x : !dist.tensor<[b = 8, h = 4] local [8], f32 on @grid2x2 split [[], []]>
}

// CHECK: {{.*}}dist-invalid-parse.mlir:7:37{{$}}
// CHECK: !dist.tensor needs a size, a local size and split axes per dimension

// -----

/// !dist.tensor: element types

dist.program @p(devices = 4) {
  shard.grid @grid2x2(shape = 2x2)
  %x = dist.input "x" : !dist.tensor<[b = 8] local [8], i8 on @grid2x2 split [[]]>
  dist.return %x : !dist.tensor<[b = 8] local [8], i8 on @grid2x2 split [[]]>
}

// CHECK: {{.*}}dist-invalid-parse.mlir:20:37{{$}}
// CHECK: unsupported element type i8; expected f32, f64, i32 or i64

// -----

/// !dist.tensor: a dimension twice

dist.program @p(devices = 4) {
  shard.grid @grid2x2(shape = 2x2)
  %x = dist.input "x" : !dist.tensor<[b = 8, b = 8] local [8, 8], f32 on @grid2x2 split [[], []]>
  dist.return %x : !dist.tensor<[b = 8, b = 8] local [8, 8], f32 on @grid2x2 split [[], []]>
}

// CHECK: {{.*}}dist-invalid-parse.mlir:33:37{{$}}
// CHECK: dimension 'b' appears twice in a !dist.tensor

// -----

/// !dist.tensor: sizes are positive

dist.program @p(devices = 4) {
  shard.grid @grid2x2(shape = 2x2)
  %x = dist.input "x" : !dist.tensor<[b = 0] local [0], f32 on @grid2x2 split [[]]>
  dist.return %x : !dist.tensor<[b = 0] local [0], f32 on @grid2x2 split [[]]>
}

// CHECK: {{.*}}dist-invalid-parse.mlir:46:37{{$}}
// CHECK: dimension 'b' has size 0 and local size 0; both must be positive

// -----

/// !dist.tensor: an unsplit dimension is whole on every device

dist.program @p(devices = 4) {
  shard.grid @grid2x2(shape = 2x2)
  %x = dist.input "x" : !dist.tensor<[b = 8, h = 4] local [4, 4], f32 on @grid2x2 split [[], []]>
  dist.return %x : !dist.tensor<[b = 8, h = 4] local [4, 4], f32 on @grid2x2 split [[], []]>
}

// CHECK: {{.*}}dist-invalid-parse.mlir:59:37{{$}}
// CHECK: dimension 'b' is not split, so its local size is its size 8, not 4

// -----

/// !dist.tensor: grid axes are not negative (split)

dist.program @p(devices = 4) {
  shard.grid @grid2x2(shape = 2x2)
  %x = dist.input "x" : !dist.tensor<[b = 8] local [4], f32 on @grid2x2 split [[-1]]>
  dist.return %x : !dist.tensor<[b = 8] local [4], f32 on @grid2x2 split [[-1]]>
}

// CHECK: {{.*}}dist-invalid-parse.mlir:72:37{{$}}
// CHECK: dimension 'b' is split along grid axis -1; grid axes are 0 or more

// -----

/// !dist.tensor: a grid axis splits one dimension

dist.program @p(devices = 4) {
  shard.grid @grid2x2(shape = 2x2)
  %x = dist.input "x" : !dist.tensor<[b = 8, h = 4] local [4, 2], f32 on @grid2x2 split [[0], [0]]>
  dist.return %x : !dist.tensor<[b = 8, h = 4] local [4, 2], f32 on @grid2x2 split [[0], [0]]>
}

// CHECK: {{.*}}dist-invalid-parse.mlir:85:37{{$}}
// CHECK: grid axis 0 splits both 'b' and 'h'

// -----

/// !dist.tensor: a grid axis splits a dimension once

dist.program @p(devices = 4) {
  shard.grid @grid2x2(shape = 2x2)
  %x = dist.input "x" : !dist.tensor<[b = 8] local [2], f32 on @grid2x2 split [[1, 1]]>
  dist.return %x : !dist.tensor<[b = 8] local [2], f32 on @grid2x2 split [[1, 1]]>
}

// CHECK: {{.*}}dist-invalid-parse.mlir:98:37{{$}}
// CHECK: grid axis 1 appears twice in the split of 'b'

// -----

/// !dist.tensor: grid axes are not negative (partial)

dist.program @p(devices = 4) {
  shard.grid @grid2x2(shape = 2x2)
  %x = dist.input "x" : !dist.tensor<[b = 8] local [8], f32 on @grid2x2 split [[]] partial [-1]>
  dist.return %x : !dist.tensor<[b = 8] local [8], f32 on @grid2x2 split [[]] partial [-1]>
}

// CHECK: {{.*}}dist-invalid-parse.mlir:111:37{{$}}
// CHECK: partial sums over grid axis -1; grid axes are 0 or more

// -----

/// !dist.tensor: a partial axis appears once

dist.program @p(devices = 4) {
  shard.grid @grid2x2(shape = 2x2)
  %x = dist.input "x" : !dist.tensor<[b = 8] local [8], f32 on @grid2x2 split [[]] partial [1, 1]>
  dist.return %x : !dist.tensor<[b = 8] local [8], f32 on @grid2x2 split [[]] partial [1, 1]>
}

// CHECK: {{.*}}dist-invalid-parse.mlir:124:37{{$}}
// CHECK: grid axis 1 appears twice in the partial axes

// -----

/// !dist.tensor: a grid axis splits a dimension or holds partial sums, not both

dist.program @p(devices = 4) {
  shard.grid @grid2x2(shape = 2x2)
  %x = dist.input "x" : !dist.tensor<[b = 8] local [4], f32 on @grid2x2 split [[0]] partial [0]>
  dist.return %x : !dist.tensor<[b = 8] local [4], f32 on @grid2x2 split [[0]] partial [0]>
}

// CHECK: {{.*}}dist-invalid-parse.mlir:137:37{{$}}
// CHECK: grid axis 0 both splits 'b' and holds partial sums; a grid axis does one or the other

// -----

/// tags, kernels and value names are quoted strings; anything else is an error at its own
/// token (issue 35: `tag 7 :` was read as an integer typed by the op's type and reported
/// on the next line)

dist.program @p(devices = 4) {
  shard.grid @grid4(shape = 4)
  %x = dist.input x : !dist.tensor<[b = 8] local [2], f32 on @grid4 split [[0]]>
  dist.return %x : !dist.tensor<[b = 8] local [2], f32 on @grid4 split [[0]]>
}

// CHECK: {{.*}}dist-invalid-parse.mlir:152:19{{$}}
// CHECK: expected the value name as a quoted string

// -----

dist.program @p(devices = 4) {
  shard.grid @grid4(shape = 4)
  %x = dist.input "x" : !dist.tensor<[b = 8] local [2], f32 on @grid4 split [[0]]>
  %y = dist.layer dnn.relu(%x) stats [] props {} tag "y" : (!dist.tensor<[b = 8] local [2], f32 on @grid4 split [[0]]>) -> !dist.tensor<[b = 8] local [2], f32 on @grid4 split [[0]]>
  dist.return %y : !dist.tensor<[b = 8] local [2], f32 on @grid4 split [[0]]>
}

// CHECK: {{.*}}dist-invalid-parse.mlir:164:19{{$}}
// CHECK: expected the kernel as a quoted string

// RUN: sed -n 's|^// TAG-INPUT: ||p' %s | not pase-opt 2>&1 | filecheck %s --check-prefix=TAG --strict-whitespace
// TAG-INPUT: // a dist program whose line 6 has a tag that is not a string
// TAG-INPUT: dist.program @p(devices = 4) {
// TAG-INPUT:   shard.grid @grid4(shape = 4)
// TAG-INPUT:   %x = dist.input "x" : !dist.tensor<[b = 8] local [2], f32 on @grid4 split [[0]]>
// TAG-INPUT:   %s = dist.accumulate %x, %x tag "s" : !dist.tensor<[b = 8] local [2], f32 on @grid4 split [[0]]>
// TAG-INPUT:   %y = dist.accumulate %s, %x tag 7 : !dist.tensor<[b = 8] local [2], f32 on @grid4 split [[0]]>
// TAG-INPUT:   dist.return %y : !dist.tensor<[b = 8] local [2], f32 on @grid4 split [[0]]>
// TAG-INPUT: }
// TAG:      {{^}}stdin:6:35: error: expected the tag as a quoted string{{$}}
// TAG-NEXT: {{^}}  %y = dist.accumulate %s, %x tag 7 : !dist.tensor<[b = 8] local [2], f32 on @grid4 split [[0]]>{{$}}
// TAG-NEXT: {{^}}                                  ^{{$}}
