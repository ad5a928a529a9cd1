// RUN: pase-opt %s --split-input-file --verify-diagnostics | filecheck %s

/// pase.config holds a #pase.config

dnn.graph @g(b = 4) {
  %x = dnn.input : !dnn.tensor<[b = 4], f32>
  %y = dnn.relu %x {pase.config = 3} : (!dnn.tensor<[b = 4], f32>) -> !dnn.tensor<[b = 4], f32>
  dnn.return %y : !dnn.tensor<[b = 4], f32>
}

// CHECK: {{.*}}pase-invalid.mlir:7:3: error: 'dnn.relu' op pase.config must be a #pase.config, got 3 : i64

// -----

/// #pase.config splits iteration dimensions only

dnn.graph @g(b = 4, c = 2) {
  %x = dnn.input : !dnn.tensor<[b = 4], f32>
  %y = dnn.relu %x {pase.config = #pase.config<c = 2>} : (!dnn.tensor<[b = 4], f32>) -> !dnn.tensor<[b = 4], f32>
  dnn.return %y : !dnn.tensor<[b = 4], f32>
}

// CHECK: {{.*}}pase-invalid.mlir:19:3: error: 'dnn.relu' op #pase.config splits 'c', which is not an iteration dimension of dnn.relu (its dimensions: b)

// -----

/// #pase.config of an einsum names its reduction dims too

dnn.graph @g(b = 4, d = 8, h = 2, q = 2) {
  %x = dnn.input : !dnn.tensor<[b = 4, d = 8], f32>
  %w = dnn.param : !dnn.tensor<[d = 8, h = 2], f32>
  %y = dnn.einsum %x, %w {pase.config = #pase.config<b = 2, q = 2>} : (!dnn.tensor<[b = 4, d = 8], f32>, !dnn.tensor<[d = 8, h = 2], f32>) -> !dnn.tensor<[b = 4, h = 2], f32>
  dnn.return %y : !dnn.tensor<[b = 4, h = 2], f32>
}

// CHECK: {{.*}}pase-invalid.mlir:32:3: error: 'dnn.einsum' op #pase.config splits 'q', which is not an iteration dimension of dnn.einsum (its dimensions: b, h, d)

// -----

/// #pase.config factors divide their dimension

dnn.graph @g(b = 4) {
  %x = dnn.input : !dnn.tensor<[b = 4], f32>
  %y = dnn.relu %x {pase.config = #pase.config<b = 3>} : (!dnn.tensor<[b = 4], f32>) -> !dnn.tensor<[b = 4], f32>
  dnn.return %y : !dnn.tensor<[b = 4], f32>
}

// CHECK: {{.*}}pase-invalid.mlir:44:3: error: 'dnn.relu' op split factor 3 does not divide dimension 'b' of size 4

// -----

/// #pase.config factors are at most the dimension

dnn.graph @g(b = 4) {
  %x = dnn.input : !dnn.tensor<[b = 4], f32>
  %y = dnn.relu %x {pase.config = #pase.config<b = 8>} : (!dnn.tensor<[b = 4], f32>) -> !dnn.tensor<[b = 4], f32>
  dnn.return %y : !dnn.tensor<[b = 4], f32>
}

// CHECK: {{.*}}pase-invalid.mlir:56:3: error: 'dnn.relu' op split factor 8 does not divide dimension 'b' of size 4

// -----

/// conv2d does not split height and width

dnn.graph @g(b = 2, ci = 4, co = 4, h = 4, w = 4, r = 3, s = 3, ho = 2, wo = 2) {
  %x = dnn.input : !dnn.tensor<[b = 2, ci = 4, h = 4, w = 4], f32>
  %f = dnn.param : !dnn.tensor<[co = 4, ci = 4, r = 3, s = 3], f32>
  %y = dnn.conv2d %x, %f stride 1 padding 0 {pase.config = #pase.config<ho = 2>} : (!dnn.tensor<[b = 2, ci = 4, h = 4, w = 4], f32>, !dnn.tensor<[co = 4, ci = 4, r = 3, s = 3], f32>) -> !dnn.tensor<[b = 2, co = 4, ho = 2, wo = 2], f32>
  dnn.return %y : !dnn.tensor<[b = 2, co = 4, ho = 2, wo = 2], f32>
}

// CHECK: {{.*}}pase-invalid.mlir:69:3: error: 'dnn.conv2d' op dimension 'ho' of dnn.conv2d cannot be split

// -----

/// pool2d does not split height and width

dnn.graph @g(b = 4, c = 6, h = 4, w = 4, hp = 2, wp = 2) {
  %x = dnn.input : !dnn.tensor<[b = 4, c = 6, h = 4, w = 4], f32>
  %y = dnn.pool2d max %x window [2, 2] stride 2 padding 0 {pase.config = #pase.config<wp = 2>} : (!dnn.tensor<[b = 4, c = 6, h = 4, w = 4], f32>) -> !dnn.tensor<[b = 4, c = 6, hp = 2, wp = 2], f32>
  dnn.return %y : !dnn.tensor<[b = 4, c = 6, hp = 2, wp = 2], f32>
}

// CHECK: {{.*}}pase-invalid.mlir:81:3: error: 'dnn.pool2d' op dimension 'wp' of dnn.pool2d cannot be split

// -----

/// lstm does not split layers

dnn.graph @g(b = 4, s = 3, e = 8, l = 2, k = 16, n = 32) {
  %x = dnn.input : !dnn.tensor<[b = 4, s = 3, e = 8], f32>
  %w = dnn.param : !dnn.tensor<[l = 2, k = 16, n = 32], f32>
  %y = dnn.lstm %x, %w {pase.config = #pase.config<l = 2>} : (!dnn.tensor<[b = 4, s = 3, e = 8], f32>, !dnn.tensor<[l = 2, k = 16, n = 32], f32>) -> !dnn.tensor<[b = 4, s = 3, e = 8], f32>
  dnn.return %y : !dnn.tensor<[b = 4, s = 3, e = 8], f32>
}

// CHECK: {{.*}}pase-invalid.mlir:94:3: error: 'dnn.lstm' op dimension 'l' of dnn.lstm cannot be split

// -----

/// concat does not split its concatenated dimension

dnn.graph @g(b = 2, c1 = 4, c2 = 4, c = 8) {
  %x = dnn.input : !dnn.tensor<[b = 2, c1 = 4], f32>
  %z = dnn.input : !dnn.tensor<[b = 2, c2 = 4], f32>
  %y = dnn.concat %x, %z {pase.config = #pase.config<c = 2>} : (!dnn.tensor<[b = 2, c1 = 4], f32>, !dnn.tensor<[b = 2, c2 = 4], f32>) -> !dnn.tensor<[b = 2, c = 8], f32>
  dnn.return %y : !dnn.tensor<[b = 2, c = 8], f32>
}

// CHECK: {{.*}}pase-invalid.mlir:107:3: error: 'dnn.concat' op dimension 'c' of dnn.concat cannot be split

// -----

/// reshape does not split merged dimensions

dnn.graph @g(b = 2, s = 4, k = 4, d = 16) {
  %x = dnn.input : !dnn.tensor<[b = 2, s = 4, k = 4], f32>
  %y = dnn.reshape %x {pase.config = #pase.config<d = 2>} : (!dnn.tensor<[b = 2, s = 4, k = 4], f32>) -> !dnn.tensor<[b = 2, d = 16], f32>
  dnn.return %y : !dnn.tensor<[b = 2, d = 16], f32>
}

// CHECK: {{.*}}pase-invalid.mlir:119:3: error: 'dnn.reshape' op dimension 'd' of dnn.reshape cannot be split

// -----

/// pase.layer names the forward layer with a string, not an integer

dnn.graph @g(b = 4) {
  %x = dnn.param : !dnn.tensor<[b = 4], f32>
  %y = dnn.relu %x {pase.layer = 3} : (!dnn.tensor<[b = 4], f32>) -> !dnn.tensor<[b = 4], f32>
  dnn.return %y : !dnn.tensor<[b = 4], f32>
}

// CHECK: {{.*}}pase-invalid.mlir:131:3: error: 'dnn.relu' op pase.layer must be the name of a forward layer (a string), got 3 : i64

// -----

/// pase.layer names the forward layer with a string, not an array

dnn.graph @g(b = 4) {
  %x = dnn.param : !dnn.tensor<[b = 4], f32>
  %y = dnn.relu %x : (!dnn.tensor<[b = 4], f32>) -> !dnn.tensor<[b = 4], f32>
  %dx = dnn.vjp "dnn.relu" [0] (%x) -> %y grad %y {pase.layer = [1]} : (!dnn.tensor<[b = 4], f32>), !dnn.tensor<[b = 4], f32> -> (!dnn.tensor<[b = 4], f32>)
  dnn.return %y : !dnn.tensor<[b = 4], f32>
}

// CHECK: {{.*}}pase-invalid.mlir:144:3: error: 'dnn.vjp' op pase.layer must be the name of a forward layer (a string), got [1 : i64]

// -----

/// pase.grid_order holds dimension names, not integers

dnn.graph @g(b = 4, d = 8, h = 2) {
  %x = dnn.input : !dnn.tensor<[b = 4, d = 8], f32>
  %w = dnn.param : !dnn.tensor<[d = 8, h = 2], f32>
  %y = dnn.einsum %x, %w {pase.grid_order = ["b", 1, "d"]} : (!dnn.tensor<[b = 4, d = 8], f32>, !dnn.tensor<[d = 8, h = 2], f32>) -> !dnn.tensor<[b = 4, h = 2], f32>
  dnn.return %y : !dnn.tensor<[b = 4, h = 2], f32>
}

// CHECK: {{.*}}pase-invalid.mlir:157:3: error: 'dnn.einsum' op pase.grid_order must be an array of dimension names (e.g. ["b", "h"]), got ["b", 1 : i64, "d"]

// -----

/// pase.grid_order is an array

dnn.graph @g(b = 4, d = 8, h = 2) {
  %x = dnn.input : !dnn.tensor<[b = 4, d = 8], f32>
  %w = dnn.param : !dnn.tensor<[d = 8, h = 2], f32>
  %y = dnn.einsum %x, %w {pase.grid_order = "b"} : (!dnn.tensor<[b = 4, d = 8], f32>, !dnn.tensor<[d = 8, h = 2], f32>) -> !dnn.tensor<[b = 4, h = 2], f32>
  dnn.return %y : !dnn.tensor<[b = 4, h = 2], f32>
}

// CHECK: {{.*}}pase-invalid.mlir:170:3: error: 'dnn.einsum' op pase.grid_order must be an array of dimension names (e.g. ["b", "h"]), got "b"

// -----

/// pase.grid_order orders exactly the op's iteration dimensions

dnn.graph @g(b = 4, d = 8, h = 2) {
  %x = dnn.input : !dnn.tensor<[b = 4, d = 8], f32>
  %w = dnn.param : !dnn.tensor<[d = 8, h = 2], f32>
  %y = dnn.einsum %x, %w {pase.grid_order = ["b", "h"]} : (!dnn.tensor<[b = 4, d = 8], f32>, !dnn.tensor<[d = 8, h = 2], f32>) -> !dnn.tensor<[b = 4, h = 2], f32>
  dnn.return %y : !dnn.tensor<[b = 4, h = 2], f32>
}

// CHECK: {{.*}}pase-invalid.mlir:183:3: error: 'dnn.einsum' op pase.grid_order ["b", "h"] must order the iteration dimensions of dnn.einsum (b, h, d)

// -----

/// pase.layout_of holds a #pase.layout, not the old "layer:operand" string

dnn.graph @g(b = 4) {
  %w = dnn.param : !dnn.tensor<[b = 4], f32>
  %y = dnn.relu %w : (!dnn.tensor<[b = 4], f32>) -> !dnn.tensor<[b = 4], f32>
  %w_next = dnn.sgd %w, %y lr 1.000000e-02 : f64 {pase.layout_of = "y:0"} : (!dnn.tensor<[b = 4], f32>, !dnn.tensor<[b = 4], f32>) -> !dnn.tensor<[b = 4], f32>
  dnn.return %w_next : !dnn.tensor<[b = 4], f32>
}

// CHECK: {{.*}}pase-invalid.mlir:196:3: error: 'dnn.sgd' op pase.layout_of must be a #pase.layout (e.g. #pase.layout<"z", operand 1>), got "y:0"

// -----

/// pase.strategy on a graph holds a #pase.strategy

dnn.graph @g(b = 4) attributes {pase.strategy = 8} {
  %x = dnn.input : !dnn.tensor<[b = 4], f32>
  dnn.return %x : !dnn.tensor<[b = 4], f32>
}

// CHECK: {{.*}}pase-invalid.mlir:206:1: error: 'dnn.graph' op pase.strategy must be a #pase.strategy, got 8 : i64
