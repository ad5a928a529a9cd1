// RUN: pase-opt %s --split-input-file --verify-diagnostics | filecheck %s

/// floating-point operands

dnn.graph @g(b = 4, d = 8) {
  %x = dnn.input : !dnn.tensor<[b = 4, d = 8], i32>
  %y = dnn.relu %x : (!dnn.tensor<[b = 4, d = 8], i32>) -> !dnn.tensor<[b = 4, d = 8], i32>
  dnn.return %y : !dnn.tensor<[b = 4, d = 8], i32>
}

// CHECK: {{.*}}dnn-invalid-shapes.mlir:7:3: error: 'dnn.relu' op relu takes floating-point tensors, got i32

// -----

/// one element type

dnn.graph @g(b = 4, d = 8) {
  %x = dnn.input : !dnn.tensor<[b = 4, d = 8], f32>
  %z = dnn.input : !dnn.tensor<[b = 4, d = 8], f64>
  %y = dnn.add %x, %z : (!dnn.tensor<[b = 4, d = 8], f32>, !dnn.tensor<[b = 4, d = 8], f64>) -> !dnn.tensor<[b = 4, d = 8], f32>
  dnn.return %y : !dnn.tensor<[b = 4, d = 8], f32>
}

// CHECK: {{.*}}dnn-invalid-shapes.mlir:20:3: error: 'dnn.add' op add mixes element types f32 and f64

// -----

/// einsum of no operands

dnn.graph @g(b = 4, d = 8) {
  %y = dnn.einsum : () -> !dnn.tensor<[b = 4, d = 8], f32>
  dnn.return %y : !dnn.tensor<[b = 4, d = 8], f32>
}

// CHECK: {{.*}}dnn-invalid-shapes.mlir:31:3: error: 'dnn.einsum' op einsum takes 1 to 3 operands, got 0

// -----

/// einsum of four operands

dnn.graph @g(b = 4, d = 8) {
  %x = dnn.input : !dnn.tensor<[b = 4, d = 8], f32>
  %y = dnn.einsum %x, %x, %x, %x : (!dnn.tensor<[b = 4, d = 8], f32>, !dnn.tensor<[b = 4, d = 8], f32>, !dnn.tensor<[b = 4, d = 8], f32>, !dnn.tensor<[b = 4, d = 8], f32>) -> !dnn.tensor<[b = 4, d = 8], f32>
  dnn.return %y : !dnn.tensor<[b = 4, d = 8], f32>
}

// CHECK: {{.*}}dnn-invalid-shapes.mlir:43:3: error: 'dnn.einsum' op einsum takes 1 to 3 operands, got 4

// -----

/// einsum result dims come from the inputs

dnn.graph @g(b = 4, d = 8, h = 2) {
  %x = dnn.input : !dnn.tensor<[b = 4, d = 8], f32>
  %y = dnn.einsum %x : (!dnn.tensor<[b = 4, d = 8], f32>) -> !dnn.tensor<[b = 4, h = 2], f32>
  dnn.return %y : !dnn.tensor<[b = 4, h = 2], f32>
}

// CHECK: {{.*}}dnn-invalid-shapes.mlir:55:3: error: 'dnn.einsum' op einsum result dimension 'h' does not appear in any input

// -----

/// conv2d input rank

dnn.graph @g(b = 2, ci = 3, co = 8, h = 4, w = 4, r = 3, s = 3, ho = 2, wo = 2) {
  %x = dnn.input : !dnn.tensor<[b = 2, ci = 3], f32>
  %f = dnn.param : !dnn.tensor<[co = 8, ci = 3, r = 3, s = 3], f32>
  %y = dnn.conv2d %x, %f stride 1 padding 0 : (!dnn.tensor<[b = 2, ci = 3], f32>, !dnn.tensor<[co = 8, ci = 3, r = 3, s = 3], f32>) -> !dnn.tensor<[b = 2, co = 8, ho = 2, wo = 2], f32>
  dnn.return %y : !dnn.tensor<[b = 2, co = 8, ho = 2, wo = 2], f32>
}

// CHECK: {{.*}}dnn-invalid-shapes.mlir:68:3: error: 'dnn.conv2d' op conv2d expects a rank-4 input [batch, channels, height, width], got [b, ci] (rank 2)

// -----

/// conv2d filter rank

dnn.graph @g(b = 2, ci = 3, co = 8, h = 4, w = 4, r = 3, s = 3, ho = 2, wo = 2) {
  %x = dnn.input : !dnn.tensor<[b = 2, ci = 3, h = 4, w = 4], f32>
  %f = dnn.param : !dnn.tensor<[co = 8, ci = 3], f32>
  %y = dnn.conv2d %x, %f stride 1 padding 0 : (!dnn.tensor<[b = 2, ci = 3, h = 4, w = 4], f32>, !dnn.tensor<[co = 8, ci = 3], f32>) -> !dnn.tensor<[b = 2, co = 8, ho = 2, wo = 2], f32>
  dnn.return %y : !dnn.tensor<[b = 2, co = 8, ho = 2, wo = 2], f32>
}

// CHECK: {{.*}}dnn-invalid-shapes.mlir:81:3: error: 'dnn.conv2d' op conv2d expects a rank-4 filter [out-channels, in-channels, height, width], got [co, ci] (rank 2)

// -----

/// conv2d result rank

dnn.graph @g(b = 2, ci = 3, co = 8, h = 4, w = 4, r = 3, s = 3, ho = 2, wo = 2) {
  %x = dnn.input : !dnn.tensor<[b = 2, ci = 3, h = 4, w = 4], f32>
  %f = dnn.param : !dnn.tensor<[co = 8, ci = 3, r = 3, s = 3], f32>
  %y = dnn.conv2d %x, %f stride 1 padding 0 : (!dnn.tensor<[b = 2, ci = 3, h = 4, w = 4], f32>, !dnn.tensor<[co = 8, ci = 3, r = 3, s = 3], f32>) -> !dnn.tensor<[b = 2, co = 8], f32>
  dnn.return %y : !dnn.tensor<[b = 2, co = 8], f32>
}

// CHECK: {{.*}}dnn-invalid-shapes.mlir:94:3: error: 'dnn.conv2d' op conv2d expects a rank-4 result [batch, out-channels, height, width], got [b, co] (rank 2)

// -----

/// conv2d stride

dnn.graph @g(b = 2, ci = 3, co = 8, h = 4, w = 4, r = 3, s = 3, ho = 2, wo = 2) {
  %x = dnn.input : !dnn.tensor<[b = 2, ci = 3, h = 4, w = 4], f32>
  %f = dnn.param : !dnn.tensor<[co = 8, ci = 3, r = 3, s = 3], f32>
  %y = dnn.conv2d %x, %f stride 0 padding 0 : (!dnn.tensor<[b = 2, ci = 3, h = 4, w = 4], f32>, !dnn.tensor<[co = 8, ci = 3, r = 3, s = 3], f32>) -> !dnn.tensor<[b = 2, co = 8, ho = 2, wo = 2], f32>
  dnn.return %y : !dnn.tensor<[b = 2, co = 8, ho = 2, wo = 2], f32>
}

// CHECK: {{.*}}dnn-invalid-shapes.mlir:107:3: error: 'dnn.conv2d' op conv2d stride must be at least 1, got 0

// -----

/// conv2d padding

dnn.graph @g(b = 2, ci = 3, co = 8, h = 4, w = 4, r = 3, s = 3, ho = 2, wo = 2) {
  %x = dnn.input : !dnn.tensor<[b = 2, ci = 3, h = 4, w = 4], f32>
  %f = dnn.param : !dnn.tensor<[co = 8, ci = 3, r = 3, s = 3], f32>
  %y = dnn.conv2d %x, %f stride 1 padding [0, -1] : (!dnn.tensor<[b = 2, ci = 3, h = 4, w = 4], f32>, !dnn.tensor<[co = 8, ci = 3, r = 3, s = 3], f32>) -> !dnn.tensor<[b = 2, co = 8, ho = 2, wo = 2], f32>
  dnn.return %y : !dnn.tensor<[b = 2, co = 8, ho = 2, wo = 2], f32>
}

// CHECK: {{.*}}dnn-invalid-shapes.mlir:120:3: error: 'dnn.conv2d' op conv2d padding must not be negative, got [0, -1]

// -----

/// conv2d filter channels

dnn.graph @g(b = 2, ci = 3, co = 8, h = 4, w = 4, r = 3, s = 3, ho = 2, wo = 2, cx = 3) {
  %x = dnn.input : !dnn.tensor<[b = 2, ci = 3, h = 4, w = 4], f32>
  %f = dnn.param : !dnn.tensor<[co = 8, cx = 3, r = 3, s = 3], f32>
  %y = dnn.conv2d %x, %f stride 1 padding 0 : (!dnn.tensor<[b = 2, ci = 3, h = 4, w = 4], f32>, !dnn.tensor<[co = 8, cx = 3, r = 3, s = 3], f32>) -> !dnn.tensor<[b = 2, co = 8, ho = 2, wo = 2], f32>
  dnn.return %y : !dnn.tensor<[b = 2, co = 8, ho = 2, wo = 2], f32>
}

// CHECK: {{.*}}dnn-invalid-shapes.mlir:133:3: error: 'dnn.conv2d' op conv2d filter [co, cx, r, s] must have the input channel dimension 'ci' second, got 'cx'

// -----

/// conv2d keeps the batch dimension

dnn.graph @g(b = 2, ci = 3, co = 8, h = 4, w = 4, r = 3, s = 3, ho = 2, wo = 2, bx = 2) {
  %x = dnn.input : !dnn.tensor<[b = 2, ci = 3, h = 4, w = 4], f32>
  %f = dnn.param : !dnn.tensor<[co = 8, ci = 3, r = 3, s = 3], f32>
  %y = dnn.conv2d %x, %f stride 1 padding 0 : (!dnn.tensor<[b = 2, ci = 3, h = 4, w = 4], f32>, !dnn.tensor<[co = 8, ci = 3, r = 3, s = 3], f32>) -> !dnn.tensor<[bx = 2, co = 8, ho = 2, wo = 2], f32>
  dnn.return %y : !dnn.tensor<[bx = 2, co = 8, ho = 2, wo = 2], f32>
}

// CHECK: {{.*}}dnn-invalid-shapes.mlir:146:3: error: 'dnn.conv2d' op conv2d result must keep the batch dimension 'b' first, got 'bx'

// -----

/// conv2d output channels

dnn.graph @g(b = 2, ci = 3, co = 8, h = 4, w = 4, r = 3, s = 3, ho = 2, wo = 2) {
  %x = dnn.input : !dnn.tensor<[b = 2, ci = 3, h = 4, w = 4], f32>
  %f = dnn.param : !dnn.tensor<[co = 8, ci = 3, r = 3, s = 3], f32>
  %y = dnn.conv2d %x, %f stride 1 padding 0 : (!dnn.tensor<[b = 2, ci = 3, h = 4, w = 4], f32>, !dnn.tensor<[co = 8, ci = 3, r = 3, s = 3], f32>) -> !dnn.tensor<[b = 2, ci = 3, ho = 2, wo = 2], f32>
  dnn.return %y : !dnn.tensor<[b = 2, ci = 3, ho = 2, wo = 2], f32>
}

// CHECK: {{.*}}dnn-invalid-shapes.mlir:159:3: error: 'dnn.conv2d' op conv2d result must have the filter's output channel dimension 'co' second, got 'ci'

// -----

/// conv2d filter and result dims are distinct

dnn.graph @g(b = 2, ci = 3, co = 8, h = 5, w = 5, ho = 3, wo = 3) {
  %x = dnn.input : !dnn.tensor<[b = 2, ci = 3, h = 5, w = 5], f32>
  %f = dnn.param : !dnn.tensor<[co = 8, ci = 3, ho = 3, wo = 3], f32>
  %y = dnn.conv2d %x, %f stride 1 padding 0 : (!dnn.tensor<[b = 2, ci = 3, h = 5, w = 5], f32>, !dnn.tensor<[co = 8, ci = 3, ho = 3, wo = 3], f32>) -> !dnn.tensor<[b = 2, co = 8, ho = 3, wo = 3], f32>
  dnn.return %y : !dnn.tensor<[b = 2, co = 8, ho = 3, wo = 3], f32>
}

// CHECK: {{.*}}dnn-invalid-shapes.mlir:172:3: error: 'dnn.conv2d' op dimension 'ho' appears twice in [b, co, ho, wo, ho, wo]

// -----

/// conv2d window larger than the input

dnn.graph @g(b = 2, ci = 3, co = 8, h = 4, w = 4, r = 5, s = 5, ho = 1, wo = 1) {
  %x = dnn.input : !dnn.tensor<[b = 2, ci = 3, h = 4, w = 4], f32>
  %f = dnn.param : !dnn.tensor<[co = 8, ci = 3, r = 5, s = 5], f32>
  %y = dnn.conv2d %x, %f stride 1 padding 0 : (!dnn.tensor<[b = 2, ci = 3, h = 4, w = 4], f32>, !dnn.tensor<[co = 8, ci = 3, r = 5, s = 5], f32>) -> !dnn.tensor<[b = 2, co = 8, ho = 1, wo = 1], f32>
  dnn.return %y : !dnn.tensor<[b = 2, co = 8, ho = 1, wo = 1], f32>
}

// CHECK: {{.*}}dnn-invalid-shapes.mlir:185:3: error: 'dnn.conv2d' op conv2d window 5 is larger than the padded input dimension 'h' (4)

// -----

/// conv2d output size

dnn.graph @g(b = 2, ci = 3, co = 8, h = 4, w = 4, r = 3, s = 3, ho = 3, wo = 2) {
  %x = dnn.input : !dnn.tensor<[b = 2, ci = 3, h = 4, w = 4], f32>
  %f = dnn.param : !dnn.tensor<[co = 8, ci = 3, r = 3, s = 3], f32>
  %y = dnn.conv2d %x, %f stride 1 padding 0 : (!dnn.tensor<[b = 2, ci = 3, h = 4, w = 4], f32>, !dnn.tensor<[co = 8, ci = 3, r = 3, s = 3], f32>) -> !dnn.tensor<[b = 2, co = 8, ho = 3, wo = 2], f32>
  dnn.return %y : !dnn.tensor<[b = 2, co = 8, ho = 3, wo = 2], f32>
}

// CHECK: {{.*}}dnn-invalid-shapes.mlir:198:3: error: 'dnn.conv2d' op conv2d output dimension 'ho' must be 2 (input 4, window 3, stride 1, padding 0), but it is 3

// -----

/// conv2d output size with padding per dim

dnn.graph @g(b = 2, ci = 3, co = 8, h = 4, w = 4, r = 3, s = 3, ho = 2, wo = 2) {
  %x = dnn.input : !dnn.tensor<[b = 2, ci = 3, h = 4, w = 4], f32>
  %f = dnn.param : !dnn.tensor<[co = 8, ci = 3, r = 3, s = 3], f32>
  %y = dnn.conv2d %x, %f stride 1 padding [0, 1] : (!dnn.tensor<[b = 2, ci = 3, h = 4, w = 4], f32>, !dnn.tensor<[co = 8, ci = 3, r = 3, s = 3], f32>) -> !dnn.tensor<[b = 2, co = 8, ho = 2, wo = 2], f32>
  dnn.return %y : !dnn.tensor<[b = 2, co = 8, ho = 2, wo = 2], f32>
}

// CHECK: {{.*}}dnn-invalid-shapes.mlir:211:3: error: 'dnn.conv2d' op conv2d output dimension 'wo' must be 4 (input 4, window 3, stride 1, padding 1), but it is 2

// -----

/// pool2d input rank

dnn.graph @g(b = 2, c = 3, h = 4, w = 4, ho = 2, wo = 2) {
  %x = dnn.input : !dnn.tensor<[b = 2, c = 3], f32>
  %y = dnn.pool2d max %x window [2, 2] stride 2 padding 0 : (!dnn.tensor<[b = 2, c = 3], f32>) -> !dnn.tensor<[b = 2, c = 3, ho = 2, wo = 2], f32>
  dnn.return %y : !dnn.tensor<[b = 2, c = 3, ho = 2, wo = 2], f32>
}

// CHECK: {{.*}}dnn-invalid-shapes.mlir:223:3: error: 'dnn.pool2d' op pool2d expects a rank-4 input [batch, channels, height, width], got [b, c] (rank 2)

// -----

/// pool2d result rank

dnn.graph @g(b = 2, c = 3, h = 4, w = 4, ho = 2, wo = 2) {
  %x = dnn.input : !dnn.tensor<[b = 2, c = 3, h = 4, w = 4], f32>
  %y = dnn.pool2d max %x window [2, 2] stride 2 padding 0 : (!dnn.tensor<[b = 2, c = 3, h = 4, w = 4], f32>) -> !dnn.tensor<[b = 2, c = 3], f32>
  dnn.return %y : !dnn.tensor<[b = 2, c = 3], f32>
}

// CHECK: {{.*}}dnn-invalid-shapes.mlir:235:3: error: 'dnn.pool2d' op pool2d expects a rank-4 result [batch, channels, height, width], got [b, c] (rank 2)

// -----

/// pool2d stride

dnn.graph @g(b = 2, c = 3, h = 4, w = 4, ho = 2, wo = 2) {
  %x = dnn.input : !dnn.tensor<[b = 2, c = 3, h = 4, w = 4], f32>
  %y = dnn.pool2d max %x window [2, 2] stride 0 padding 0 : (!dnn.tensor<[b = 2, c = 3, h = 4, w = 4], f32>) -> !dnn.tensor<[b = 2, c = 3, ho = 2, wo = 2], f32>
  dnn.return %y : !dnn.tensor<[b = 2, c = 3, ho = 2, wo = 2], f32>
}

// CHECK: {{.*}}dnn-invalid-shapes.mlir:247:3: error: 'dnn.pool2d' op pool2d stride must be at least 1, got 0

// -----

/// pool2d window

dnn.graph @g(b = 2, c = 3, h = 4, w = 4, ho = 2, wo = 2) {
  %x = dnn.input : !dnn.tensor<[b = 2, c = 3, h = 4, w = 4], f32>
  %y = dnn.pool2d max %x window [0, 2] stride 2 padding 0 : (!dnn.tensor<[b = 2, c = 3, h = 4, w = 4], f32>) -> !dnn.tensor<[b = 2, c = 3, ho = 2, wo = 2], f32>
  dnn.return %y : !dnn.tensor<[b = 2, c = 3, ho = 2, wo = 2], f32>
}

// CHECK: {{.*}}dnn-invalid-shapes.mlir:259:3: error: 'dnn.pool2d' op pool2d window must be positive, got [0, 2]

// -----

/// pool2d padding

dnn.graph @g(b = 2, c = 3, h = 4, w = 4, ho = 2, wo = 2) {
  %x = dnn.input : !dnn.tensor<[b = 2, c = 3, h = 4, w = 4], f32>
  %y = dnn.pool2d max %x window [2, 2] stride 2 padding [0, 2] : (!dnn.tensor<[b = 2, c = 3, h = 4, w = 4], f32>) -> !dnn.tensor<[b = 2, c = 3, ho = 2, wo = 2], f32>
  dnn.return %y : !dnn.tensor<[b = 2, c = 3, ho = 2, wo = 2], f32>
}

// CHECK: {{.*}}dnn-invalid-shapes.mlir:271:3: error: 'dnn.pool2d' op pool2d padding [0, 2] must be at most half the window [2, 2]

// -----

/// pool2d keeps batch and channels

dnn.graph @g(b = 2, c = 3, h = 4, w = 4, ho = 2, wo = 2, cx = 3) {
  %x = dnn.input : !dnn.tensor<[b = 2, c = 3, h = 4, w = 4], f32>
  %y = dnn.pool2d max %x window [2, 2] stride 2 padding 0 : (!dnn.tensor<[b = 2, c = 3, h = 4, w = 4], f32>) -> !dnn.tensor<[b = 2, cx = 3, ho = 2, wo = 2], f32>
  dnn.return %y : !dnn.tensor<[b = 2, cx = 3, ho = 2, wo = 2], f32>
}

// CHECK: {{.*}}dnn-invalid-shapes.mlir:283:3: error: 'dnn.pool2d' op pool2d result must keep the batch and channel dimensions [b, c], got [b, cx]

// -----

/// pool2d output size

dnn.graph @g(b = 2, c = 3, h = 4, w = 4, ho = 3, wo = 2) {
  %x = dnn.input : !dnn.tensor<[b = 2, c = 3, h = 4, w = 4], f32>
  %y = dnn.pool2d max %x window [2, 2] stride 2 padding 0 : (!dnn.tensor<[b = 2, c = 3, h = 4, w = 4], f32>) -> !dnn.tensor<[b = 2, c = 3, ho = 3, wo = 2], f32>
  dnn.return %y : !dnn.tensor<[b = 2, c = 3, ho = 3, wo = 2], f32>
}

// CHECK: {{.*}}dnn-invalid-shapes.mlir:295:3: error: 'dnn.pool2d' op pool2d output dimension 'ho' must be 2 (input 4, window 2, stride 2, padding 0), but it is 3

// -----

/// broadcasting by containment

dnn.graph @g(b = 4, c = 8, cx = 8) {
  %x = dnn.input : !dnn.tensor<[b = 4, c = 8], f32>
  %z = dnn.input : !dnn.tensor<[b = 4, cx = 8], f32>
  %y = dnn.add %x, %z : (!dnn.tensor<[b = 4, c = 8], f32>, !dnn.tensor<[b = 4, cx = 8], f32>) -> !dnn.tensor<[b = 4, c = 8], f32>
  dnn.return %y : !dnn.tensor<[b = 4, c = 8], f32>
}

// CHECK: {{.*}}dnn-invalid-shapes.mlir:308:3: error: 'dnn.add' op add broadcasts by name, so the dims of one operand must all be dims of the other; [b, c] has [c] and [b, cx] has [cx]

// -----

/// over needs a dimension

dnn.graph @g(b = 4, d = 8) {
  %x = dnn.input : !dnn.tensor<[b = 4, d = 8], f32>
  %y = dnn.softmax %x over [] : (!dnn.tensor<[b = 4, d = 8], f32>) -> !dnn.tensor<[b = 4, d = 8], f32>
  dnn.return %y : !dnn.tensor<[b = 4, d = 8], f32>
}

// CHECK: {{.*}}dnn-invalid-shapes.mlir:320:3: error: 'dnn.softmax' op softmax needs at least one dimension after 'over'

// -----

/// over a dimension twice

dnn.graph @g(b = 4, d = 8) {
  %x = dnn.input : !dnn.tensor<[b = 4, d = 8], f32>
  %y = dnn.softmax %x over [d, d] : (!dnn.tensor<[b = 4, d = 8], f32>) -> !dnn.tensor<[b = 4, d = 8], f32>
  dnn.return %y : !dnn.tensor<[b = 4, d = 8], f32>
}

// CHECK: {{.*}}dnn-invalid-shapes.mlir:332:3: error: 'dnn.softmax' op dimension 'd' appears twice in [d, d]

// -----

/// over a dimension of the operand

dnn.graph @g(b = 4, d = 8, q = 2) {
  %x = dnn.input : !dnn.tensor<[b = 4, d = 8], f32>
  %y = dnn.reduce sum %x over [q] : (!dnn.tensor<[b = 4, d = 8], f32>) -> !dnn.tensor<[b = 4, d = 8], f32>
  dnn.return %y : !dnn.tensor<[b = 4, d = 8], f32>
}

// CHECK: {{.*}}dnn-invalid-shapes.mlir:344:3: error: 'dnn.reduce' op reduce over 'q', which is not a dimension of [b, d]

// -----

/// layernorm scale ranges over the normalized dims

dnn.graph @g(b = 4, d = 8) {
  %x = dnn.input : !dnn.tensor<[b = 4, d = 8], f32>
  %g = dnn.param : !dnn.tensor<[b = 4], f32>
  %beta = dnn.param : !dnn.tensor<[d = 8], f32>
  %y = dnn.layernorm %x, %g, %beta over [d] : (!dnn.tensor<[b = 4, d = 8], f32>, !dnn.tensor<[b = 4], f32>, !dnn.tensor<[d = 8], f32>) -> !dnn.tensor<[b = 4, d = 8], f32>
  dnn.return %y : !dnn.tensor<[b = 4, d = 8], f32>
}

// CHECK: {{.*}}dnn-invalid-shapes.mlir:358:3: error: 'dnn.layernorm' op layernorm scale must range over [d], got [b]

// -----

/// batchnorm bias ranges over the channels

dnn.graph @g(b = 4, c = 3, h = 2) {
  %x = dnn.input : !dnn.tensor<[b = 4, c = 3, h = 2], f32>
  %g = dnn.param : !dnn.tensor<[c = 3], f32>
  %beta = dnn.param : !dnn.tensor<[h = 2], f32>
  %y = dnn.batchnorm %x, %g, %beta over [b, h] : (!dnn.tensor<[b = 4, c = 3, h = 2], f32>, !dnn.tensor<[c = 3], f32>, !dnn.tensor<[h = 2], f32>) -> !dnn.tensor<[b = 4, c = 3, h = 2], f32>
  dnn.return %y : !dnn.tensor<[b = 4, c = 3, h = 2], f32>
}

// CHECK: {{.*}}dnn-invalid-shapes.mlir:372:3: error: 'dnn.batchnorm' op batchnorm bias must range over [c], got [h]

// -----

/// embedding ids are integers

dnn.graph @g(b = 4, s = 3, v = 10, e = 8) {
  %ids = dnn.input : !dnn.tensor<[b = 4, s = 3], f32>
  %t = dnn.param : !dnn.tensor<[v = 10, e = 8], f32>
  %y = dnn.embedding %ids, %t : (!dnn.tensor<[b = 4, s = 3], f32>, !dnn.tensor<[v = 10, e = 8], f32>) -> !dnn.tensor<[b = 4, s = 3, e = 8], f32>
  dnn.return %y : !dnn.tensor<[b = 4, s = 3, e = 8], f32>
}

// CHECK: {{.*}}dnn-invalid-shapes.mlir:385:3: error: 'dnn.embedding' op embedding ids must be integers (i32 or i64), got f32

// -----

/// embedding table is floating-point

dnn.graph @g(b = 4, s = 3, v = 10, e = 8) {
  %ids = dnn.input : !dnn.tensor<[b = 4, s = 3], i32>
  %t = dnn.input : !dnn.tensor<[v = 10, e = 8], i32>
  %y = dnn.embedding %ids, %t : (!dnn.tensor<[b = 4, s = 3], i32>, !dnn.tensor<[v = 10, e = 8], i32>) -> !dnn.tensor<[b = 4, s = 3, e = 8], i32>
  dnn.return %y : !dnn.tensor<[b = 4, s = 3, e = 8], i32>
}

// CHECK: {{.*}}dnn-invalid-shapes.mlir:398:3: error: 'dnn.embedding' op embedding table must be floating-point, got i32

// -----

/// embedding table has features

dnn.graph @g(b = 4, s = 3, v = 10, e = 8) {
  %ids = dnn.input : !dnn.tensor<[b = 4, s = 3], i32>
  %t = dnn.param : !dnn.tensor<[v = 10], f32>
  %y = dnn.embedding %ids, %t : (!dnn.tensor<[b = 4, s = 3], i32>, !dnn.tensor<[v = 10], f32>) -> !dnn.tensor<[b = 4, s = 3], f32>
  dnn.return %y : !dnn.tensor<[b = 4, s = 3], f32>
}

// CHECK: {{.*}}dnn-invalid-shapes.mlir:411:3: error: 'dnn.embedding' op embedding table must be [vocab, features...], got [v]

// -----

/// embedding ids and table dims are distinct

dnn.graph @g(b = 4, s = 3, v = 10, e = 8) {
  %ids = dnn.input : !dnn.tensor<[b = 4, v = 10], i32>
  %t = dnn.param : !dnn.tensor<[v = 10, e = 8], f32>
  %y = dnn.embedding %ids, %t : (!dnn.tensor<[b = 4, v = 10], i32>, !dnn.tensor<[v = 10, e = 8], f32>) -> !dnn.tensor<[b = 4, v = 10, e = 8], f32>
  dnn.return %y : !dnn.tensor<[b = 4, v = 10, e = 8], f32>
}

// CHECK: {{.*}}dnn-invalid-shapes.mlir:424:3: error: 'dnn.embedding' op dimension 'v' appears twice in [b, v, e, v]

// -----

/// lstm input rank

dnn.graph @g(b = 4, s = 3, e = 8, l = 2, k = 16, n = 32) {
  %x = dnn.input : !dnn.tensor<[b = 4, e = 8], f32>
  %w = dnn.param : !dnn.tensor<[l = 2, k = 16, n = 32], f32>
  %y = dnn.lstm %x, %w : (!dnn.tensor<[b = 4, e = 8], f32>, !dnn.tensor<[l = 2, k = 16, n = 32], f32>) -> !dnn.tensor<[b = 4, e = 8], f32>
  dnn.return %y : !dnn.tensor<[b = 4, e = 8], f32>
}

// CHECK: {{.*}}dnn-invalid-shapes.mlir:437:3: error: 'dnn.lstm' op lstm expects a rank-3 input [batch, seq, hidden], got [b, e] (rank 2)

// -----

/// lstm weight rank

dnn.graph @g(b = 4, s = 3, e = 8, l = 2, k = 16, n = 32) {
  %x = dnn.input : !dnn.tensor<[b = 4, s = 3, e = 8], f32>
  %w = dnn.param : !dnn.tensor<[k = 16, n = 32], f32>
  %y = dnn.lstm %x, %w : (!dnn.tensor<[b = 4, s = 3, e = 8], f32>, !dnn.tensor<[k = 16, n = 32], f32>) -> !dnn.tensor<[b = 4, s = 3, e = 8], f32>
  dnn.return %y : !dnn.tensor<[b = 4, s = 3, e = 8], f32>
}

// CHECK: {{.*}}dnn-invalid-shapes.mlir:450:3: error: 'dnn.lstm' op lstm expects a rank-3 weight [layers, 2*hidden, 4*hidden], got [k, n] (rank 2)

// -----

/// lstm weight sizes

dnn.graph @g(b = 4, s = 3, e = 8, l = 2, k = 16, n = 16) {
  %x = dnn.input : !dnn.tensor<[b = 4, s = 3, e = 8], f32>
  %w = dnn.param : !dnn.tensor<[l = 2, k = 16, n = 16], f32>
  %y = dnn.lstm %x, %w : (!dnn.tensor<[b = 4, s = 3, e = 8], f32>, !dnn.tensor<[l = 2, k = 16, n = 16], f32>) -> !dnn.tensor<[b = 4, s = 3, e = 8], f32>
  dnn.return %y : !dnn.tensor<[b = 4, s = 3, e = 8], f32>
}

// CHECK: {{.*}}dnn-invalid-shapes.mlir:463:3: error: 'dnn.lstm' op lstm weight [l, k, n] must be [layers, 2*hidden, 4*hidden] = [2, 16, 32], got [2, 16, 16]

// -----

/// lstm input and weight dims are distinct

dnn.graph @g(b = 2, s = 3, e = 8, l = 2, k = 16, n = 32) {
  %x = dnn.input : !dnn.tensor<[b = 2, s = 3, e = 8], f32>
  %w = dnn.param : !dnn.tensor<[b = 2, k = 16, n = 32], f32>
  %y = dnn.lstm %x, %w : (!dnn.tensor<[b = 2, s = 3, e = 8], f32>, !dnn.tensor<[b = 2, k = 16, n = 32], f32>) -> !dnn.tensor<[b = 2, s = 3, e = 8], f32>
  dnn.return %y : !dnn.tensor<[b = 2, s = 3, e = 8], f32>
}

// CHECK: {{.*}}dnn-invalid-shapes.mlir:476:3: error: 'dnn.lstm' op dimension 'b' appears twice in [b, s, e, b, k, n]

// -----

/// concat of one operand

dnn.graph @g(b = 2, c1 = 3, c2 = 5, c = 8, h = 4) {
  %x0 = dnn.input : !dnn.tensor<[b = 2, c = 8], f32>
  %y = dnn.concat %x0 : (!dnn.tensor<[b = 2, c = 8], f32>) -> !dnn.tensor<[b = 2, c = 8], f32>
  dnn.return %y : !dnn.tensor<[b = 2, c = 8], f32>
}

// CHECK: {{.*}}dnn-invalid-shapes.mlir:488:3: error: 'dnn.concat' op concat takes 2 to 64 operands, got 1

// -----

/// concat of integers

dnn.graph @g(b = 2, c1 = 3, c2 = 5, c = 8, h = 4) {
  %x0 = dnn.input : !dnn.tensor<[b = 2, c1 = 3], i32>
  %x1 = dnn.input : !dnn.tensor<[b = 2, c2 = 5], i32>
  %y = dnn.concat %x0, %x1 : (!dnn.tensor<[b = 2, c1 = 3], i32>, !dnn.tensor<[b = 2, c2 = 5], i32>) -> !dnn.tensor<[b = 2, c = 8], i32>
  dnn.return %y : !dnn.tensor<[b = 2, c = 8], i32>
}

// CHECK: {{.*}}dnn-invalid-shapes.mlir:501:3: error: 'dnn.concat' op concat takes floating-point tensors, got i32

// -----

/// concat ranks

dnn.graph @g(b = 2, c1 = 3, c2 = 5, c = 8, h = 4) {
  %x0 = dnn.input : !dnn.tensor<[b = 2, c1 = 3], f32>
  %x1 = dnn.input : !dnn.tensor<[b = 2, c2 = 5, h = 4], f32>
  %y = dnn.concat %x0, %x1 : (!dnn.tensor<[b = 2, c1 = 3], f32>, !dnn.tensor<[b = 2, c2 = 5, h = 4], f32>) -> !dnn.tensor<[b = 2, c = 8, h = 4], f32>
  dnn.return %y : !dnn.tensor<[b = 2, c = 8, h = 4], f32>
}

// CHECK: {{.*}}dnn-invalid-shapes.mlir:514:3: error: 'dnn.concat' op concat operand [b, c1] has rank 2, the result [b, c, h] has rank 3

// -----

/// concat along exactly one dimension

dnn.graph @g(b = 2, c1 = 3, c2 = 5, c = 8, h = 4, bx = 2) {
  %x0 = dnn.input : !dnn.tensor<[bx = 2, c1 = 3], f32>
  %x1 = dnn.input : !dnn.tensor<[b = 2, c2 = 5], f32>
  %y = dnn.concat %x0, %x1 : (!dnn.tensor<[bx = 2, c1 = 3], f32>, !dnn.tensor<[b = 2, c2 = 5], f32>) -> !dnn.tensor<[b = 2, c = 8], f32>
  dnn.return %y : !dnn.tensor<[b = 2, c = 8], f32>
}

// CHECK: {{.*}}dnn-invalid-shapes.mlir:527:3: error: 'dnn.concat' op concat operands must differ from the result [b, c] in exactly one dimension (the concatenated one), got [bx, c1], [b, c2]

// -----

/// concat along no dimension

dnn.graph @g(b = 2, c1 = 3, c2 = 5, c = 8, h = 4) {
  %x0 = dnn.input : !dnn.tensor<[b = 2, c = 8], f32>
  %x1 = dnn.input : !dnn.tensor<[b = 2, c = 8], f32>
  %y = dnn.concat %x0, %x1 : (!dnn.tensor<[b = 2, c = 8], f32>, !dnn.tensor<[b = 2, c = 8], f32>) -> !dnn.tensor<[b = 2, c = 8], f32>
  dnn.return %y : !dnn.tensor<[b = 2, c = 8], f32>
}

// CHECK: {{.*}}dnn-invalid-shapes.mlir:540:3: error: 'dnn.concat' op concat operands must differ from the result [b, c] in exactly one dimension (the concatenated one), got [b, c], [b, c]

// -----

/// concat operands do not reuse the result dimension

dnn.graph @g(b = 2, c1 = 3, c2 = 5, c = 8, h = 4) {
  %x0 = dnn.input : !dnn.tensor<[b = 2, c1 = 3], f32>
  %x1 = dnn.input : !dnn.tensor<[b = 2, c = 8], f32>
  %y = dnn.concat %x0, %x1 : (!dnn.tensor<[b = 2, c1 = 3], f32>, !dnn.tensor<[b = 2, c = 8], f32>) -> !dnn.tensor<[b = 2, c = 8], f32>
  dnn.return %y : !dnn.tensor<[b = 2, c = 8], f32>
}

// CHECK: {{.*}}dnn-invalid-shapes.mlir:553:3: error: 'dnn.concat' op concat operand [b, c] must not reuse the result dimension 'c'

// -----

/// concat sizes add up

dnn.graph @g(b = 2, c1 = 3, c2 = 5, c = 7, h = 4) {
  %x0 = dnn.input : !dnn.tensor<[b = 2, c1 = 3], f32>
  %x1 = dnn.input : !dnn.tensor<[b = 2, c2 = 5], f32>
  %y = dnn.concat %x0, %x1 : (!dnn.tensor<[b = 2, c1 = 3], f32>, !dnn.tensor<[b = 2, c2 = 5], f32>) -> !dnn.tensor<[b = 2, c = 7], f32>
  dnn.return %y : !dnn.tensor<[b = 2, c = 7], f32>
}

// CHECK: {{.*}}dnn-invalid-shapes.mlir:566:3: error: 'dnn.concat' op concat result dimension 'c' must be 8 (the sum of the operands'), but it is 7

// -----

/// reshape keeps the element count

dnn.graph @g(b = 4, d = 8, e = 4) {
  %x = dnn.input : !dnn.tensor<[b = 4, d = 8], f32>
  %y = dnn.reshape %x : (!dnn.tensor<[b = 4, d = 8], f32>) -> !dnn.tensor<[b = 4, e = 4], f32>
  dnn.return %y : !dnn.tensor<[b = 4, e = 4], f32>
}

// CHECK: {{.*}}dnn-invalid-shapes.mlir:578:3: error: 'dnn.reshape' op reshape of [b, d] (32 elements) into [b, e] (16 elements) changes the element count

// -----

/// reshape merges or splits consecutive dims only

dnn.graph @g(a = 2, b = 3, c = 3, d = 2) {
  %x = dnn.input : !dnn.tensor<[a = 2, b = 3], f32>
  %y = dnn.reshape %x : (!dnn.tensor<[a = 2, b = 3], f32>) -> !dnn.tensor<[c = 3, d = 2], f32>
  dnn.return %y : !dnn.tensor<[c = 3, d = 2], f32>
}

// CHECK: {{.*}}dnn-invalid-shapes.mlir:590:3: error: 'dnn.reshape' op reshape cannot turn [a, b] [2, 3] into [c, d] [3, 2]: it merges or splits consecutive dimensions only

// -----

/// softmax_cross_entropy logits are floating-point

dnn.graph @g(b = 4, c = 10) {
  %z = dnn.input : !dnn.tensor<[b = 4, c = 10], i32>
  %t = dnn.input : !dnn.tensor<[b = 4], i32>
  %y = dnn.softmax_cross_entropy %z, %t over [c] : (!dnn.tensor<[b = 4, c = 10], i32>, !dnn.tensor<[b = 4], i32>) -> !dnn.tensor<[], f32>
  dnn.return %y : !dnn.tensor<[], f32>
}

// CHECK: {{.*}}dnn-invalid-shapes.mlir:603:3: error: 'dnn.softmax_cross_entropy' op softmax_cross_entropy takes floating-point tensors, got i32

// -----

/// softmax_cross_entropy over a dimension of the logits

dnn.graph @g(b = 4, c = 10, q = 2) {
  %z = dnn.input : !dnn.tensor<[b = 4, c = 10], f32>
  %t = dnn.input : !dnn.tensor<[b = 4], i32>
  %y = dnn.softmax_cross_entropy %z, %t over [q] : (!dnn.tensor<[b = 4, c = 10], f32>, !dnn.tensor<[b = 4], i32>) -> !dnn.tensor<[], f32>
  dnn.return %y : !dnn.tensor<[], f32>
}

// CHECK: {{.*}}dnn-invalid-shapes.mlir:616:3: error: 'dnn.softmax_cross_entropy' op softmax_cross_entropy over 'q', which is not a dimension of [b, c]

// -----

/// softmax_cross_entropy labels are integers

dnn.graph @g(b = 4, c = 10) {
  %z = dnn.input : !dnn.tensor<[b = 4, c = 10], f32>
  %t = dnn.input : !dnn.tensor<[b = 4], f32>
  %y = dnn.softmax_cross_entropy %z, %t over [c] : (!dnn.tensor<[b = 4, c = 10], f32>, !dnn.tensor<[b = 4], f32>) -> !dnn.tensor<[], f32>
  dnn.return %y : !dnn.tensor<[], f32>
}

// CHECK: {{.*}}dnn-invalid-shapes.mlir:629:3: error: 'dnn.softmax_cross_entropy' op softmax_cross_entropy labels must be integers (i32 or i64), got f32

// -----

/// softmax_cross_entropy labels are the logits without the class dim

dnn.graph @g(b = 4, c = 10) {
  %z = dnn.input : !dnn.tensor<[b = 4, c = 10], f32>
  %t = dnn.input : !dnn.tensor<[c = 10], i32>
  %y = dnn.softmax_cross_entropy %z, %t over [c] : (!dnn.tensor<[b = 4, c = 10], f32>, !dnn.tensor<[c = 10], i32>) -> !dnn.tensor<[], f32>
  dnn.return %y : !dnn.tensor<[], f32>
}

// CHECK: {{.*}}dnn-invalid-shapes.mlir:642:3: error: 'dnn.softmax_cross_entropy' op softmax_cross_entropy labels must be [b] (the logits without 'c'), got [c]

// -----

/// conv2d groups that do not divide the input channels

dnn.graph @g(b = 2, ci = 6, co = 8, h = 4, w = 4, c2 = 2, r = 3, s = 3, ho = 2, wo = 2) {
  %x = dnn.input : !dnn.tensor<[b = 2, ci = 6, h = 4, w = 4], f32>
  %f = dnn.param : !dnn.tensor<[co = 8, c2 = 2, r = 3, s = 3], f32>
  %y = dnn.conv2d %x, %f stride 1 padding 0 groups 2 : (!dnn.tensor<[b = 2, ci = 6, h = 4, w = 4], f32>, !dnn.tensor<[co = 8, c2 = 2, r = 3, s = 3], f32>) -> !dnn.tensor<[b = 2, co = 8, ho = 2, wo = 2], f32>
  dnn.return %y : !dnn.tensor<[b = 2, co = 8, ho = 2, wo = 2], f32>
}

// CHECK: {{.*}}dnn-invalid-shapes.mlir:655:3: error: 'dnn.conv2d' op conv2d with 2 groups needs 2 times the filter's 'c2' (2) input channels, but 'ci' is 6

// -----

/// conv2d output channels that do not form the groups

dnn.graph @g(b = 2, ci = 6, co = 8, h = 4, w = 4, c2 = 2, r = 3, s = 3, ho = 2, wo = 2) {
  %x = dnn.input : !dnn.tensor<[b = 2, ci = 6, h = 4, w = 4], f32>
  %f = dnn.param : !dnn.tensor<[co = 8, c2 = 2, r = 3, s = 3], f32>
  %y = dnn.conv2d %x, %f stride 1 padding 0 groups 3 : (!dnn.tensor<[b = 2, ci = 6, h = 4, w = 4], f32>, !dnn.tensor<[co = 8, c2 = 2, r = 3, s = 3], f32>) -> !dnn.tensor<[b = 2, co = 8, ho = 2, wo = 2], f32>
  dnn.return %y : !dnn.tensor<[b = 2, co = 8, ho = 2, wo = 2], f32>
}

// CHECK: {{.*}}dnn-invalid-shapes.mlir:668:3: error: 'dnn.conv2d' op conv2d output channels 'co' (8) must divide into the 3 groups

// -----

/// lstm bias dims: [layers, 4*hidden] with the weight's dims

dnn.graph @g(b = 4, s = 3, e = 8, l = 2, k = 16, n = 32, m = 32) {
  %x = dnn.input : !dnn.tensor<[b = 4, s = 3, e = 8], f32>
  %w = dnn.param : !dnn.tensor<[l = 2, k = 16, n = 32], f32>
  %g = dnn.param : !dnn.tensor<[l = 2, m = 32], f32>
  %y = dnn.lstm %x, %w, %g : (!dnn.tensor<[b = 4, s = 3, e = 8], f32>, !dnn.tensor<[l = 2, k = 16, n = 32], f32>, !dnn.tensor<[l = 2, m = 32], f32>) -> !dnn.tensor<[b = 4, s = 3, e = 8], f32>
  dnn.return %y : !dnn.tensor<[b = 4, s = 3, e = 8], f32>
}

// CHECK: {{.*}}dnn-invalid-shapes.mlir:682:3: error: 'dnn.lstm' op lstm bias [l, m] must be [layers, 4*hidden] with the weight's dims: [l, n]
