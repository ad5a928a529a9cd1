// RUN: PASE_ROUNDTRIP
// RUN: PASE_GENERIC_ROUNDTRIP

/// a program on two grids: inputs and parameters in their first reader's layout, a
/// layer leaving partial sums, their all-reduce, a redistribution to another grid, a
/// layer with statistics over a grid axis, a scalar result

dist.program @mlp(devices = 4) {
  shard.grid @grid2x2(shape = 2x2)
  shard.grid @grid4(shape = 4)
  %x = dist.input "x" : !dist.tensor<[b = 8, d = 16] local [4, 8], f32 on @grid2x2 split [[0], [1]]>
  %w = dist.param "w" : !dist.tensor<[d = 16, h = 32] local [8, 32], f32 on @grid2x2 split [[1], []]>
  %h = dist.layer "dnn.einsum"(%x, %w) stats [] props {} tag "h" : (!dist.tensor<[b = 8, d = 16] local [4, 8], f32 on @grid2x2 split [[0], [1]]>, !dist.tensor<[d = 16, h = 32] local [8, 32], f32 on @grid2x2 split [[1], []]>) -> !dist.tensor<[b = 8, h = 32] local [4, 32], f32 on @grid2x2 split [[0], []] partial [1]>
  %h_1 = dist.all_reduce %h on @grid2x2 grid_axes = [1] tag "h" : !dist.tensor<[b = 8, h = 32] local [4, 32], f32 on @grid2x2 split [[0], []] partial [1]> -> !dist.tensor<[b = 8, h = 32] local [4, 32], f32 on @grid2x2 split [[0], []]>
  %h_2 = dist.redistribute %h_1 tag "h->p" : !dist.tensor<[b = 8, h = 32] local [4, 32], f32 on @grid2x2 split [[0], []]> -> !dist.tensor<[b = 8, h = 32] local [8, 8], f32 on @grid4 split [[], [0]]>
  %p = dist.layer "dnn.softmax"(%h_2) stats [0] props {over = ["h"]} tag "p" : (!dist.tensor<[b = 8, h = 32] local [8, 8], f32 on @grid4 split [[], [0]]>) -> !dist.tensor<[b = 8, h = 32] local [8, 8], f32 on @grid4 split [[], [0]]>
  %t = dist.input "t" : !dist.tensor<[b = 8] local [8], i32 on @grid4 split [[]]>
  %l = dist.layer "dnn.softmax_cross_entropy"(%p, %t) stats [0] props {over = ["h"]} tag "l" : (!dist.tensor<[b = 8, h = 32] local [8, 8], f32 on @grid4 split [[], [0]]>, !dist.tensor<[b = 8] local [8], i32 on @grid4 split [[]]>) -> !dist.tensor<[] local [], f32 on @grid4 split []>
  dist.return %l, %h_1 : !dist.tensor<[] local [], f32 on @grid4 split []>, !dist.tensor<[b = 8, h = 32] local [4, 32], f32 on @grid2x2 split [[0], []]>
}

// CHECK-LABEL: dist.program @mlp(devices = 4) {
// CHECK-NEXT:    shard.grid @grid2x2(shape = 2x2)
// CHECK-NEXT:    shard.grid @grid4(shape = 4)
// CHECK-NEXT:    %x = dist.input "x" : !dist.tensor<[b = 8, d = 16] local [4, 8], f32 on @grid2x2 split [[0], [1]]>
// CHECK-NEXT:    %w = dist.param "w" : !dist.tensor<[d = 16, h = 32] local [8, 32], f32 on @grid2x2 split [[1], []]>
// CHECK-NEXT:    %h = dist.layer "dnn.einsum"(%x, %w) stats [] props {} tag "h" : (!dist.tensor<[b = 8, d = 16] local [4, 8], f32 on @grid2x2 split [[0], [1]]>, !dist.tensor<[d = 16, h = 32] local [8, 32], f32 on @grid2x2 split [[1], []]>) -> !dist.tensor<[b = 8, h = 32] local [4, 32], f32 on @grid2x2 split [[0], []] partial [1]>
// CHECK-NEXT:    %h_1 = dist.all_reduce %h on @grid2x2 grid_axes = [1] tag "h" : !dist.tensor<[b = 8, h = 32] local [4, 32], f32 on @grid2x2 split [[0], []] partial [1]> -> !dist.tensor<[b = 8, h = 32] local [4, 32], f32 on @grid2x2 split [[0], []]>
// CHECK-NEXT:    %h_2 = dist.redistribute %h_1 tag "h->p" : !dist.tensor<[b = 8, h = 32] local [4, 32], f32 on @grid2x2 split [[0], []]> -> !dist.tensor<[b = 8, h = 32] local [8, 8], f32 on @grid4 split [[], [0]]>
// CHECK-NEXT:    %p = dist.layer "dnn.softmax"(%h_2) stats [0] props {over = ["h"]} tag "p" : (!dist.tensor<[b = 8, h = 32] local [8, 8], f32 on @grid4 split [[], [0]]>) -> !dist.tensor<[b = 8, h = 32] local [8, 8], f32 on @grid4 split [[], [0]]>
// CHECK-NEXT:    %t = dist.input "t" : !dist.tensor<[b = 8] local [8], i32 on @grid4 split [[]]>
// CHECK-NEXT:    %l = dist.layer "dnn.softmax_cross_entropy"(%p, %t) stats [0] props {over = ["h"]} tag "l" : (!dist.tensor<[b = 8, h = 32] local [8, 8], f32 on @grid4 split [[], [0]]>, !dist.tensor<[b = 8] local [8], i32 on @grid4 split [[]]>) -> !dist.tensor<[] local [], f32 on @grid4 split []>
// CHECK-NEXT:    dist.return %l, %h_1 : !dist.tensor<[] local [], f32 on @grid4 split []>, !dist.tensor<[b = 8, h = 32] local [4, 32], f32 on @grid2x2 split [[0], []]>
// CHECK-NEXT:  }
// GENERIC:      "dist.program"() <{sym_name = "mlp", devices = #builtin.int<4>}> ({
// GENERIC:      %x = "dist.input"() <{value_name = "x"}> : () -> !dist.tensor<[b = 8, d = 16] local [4, 8], f32 on @grid2x2 split [[0], [1]]>
// GENERIC:      %h = "dist.layer"(%x, %w) <{kernel = "dnn.einsum", stats_axes = array<i16>, op_properties = {}, tag = "h"}>
// GENERIC-NEXT: %h_1 = "dist.all_reduce"(%h) <{grid = @grid2x2, grid_axes = array<i16: 1>, tag = "h"}>
// GENERIC-NEXT: %h_2 = "dist.redistribute"(%h_1) <{tag = "h->p"}>
// GENERIC-NEXT: %p = "dist.layer"(%h_2) <{kernel = "dnn.softmax", stats_axes = array<i16: 0>, op_properties = {over = ["h"]}, tag = "p"}>
// GENERIC:      "dist.return"(%l, %h_1)

// -----

/// a dim split over two grid axes, partial sums over two axes summed by one all_reduce,
/// a redistribution on one grid, f64 values, attributes on the program

dist.program @two_axes(devices = 8) attributes {pase.note = "hand-written"} {
  shard.grid @grid2x4(shape = 2x4)
  %x = dist.input "x" : !dist.tensor<[b = 8, d = 16] local [1, 16], f64 on @grid2x4 split [[0, 1], []]>
  %y = dist.layer "dnn.reduce"(%x) stats [] props {kind = "sum", over = ["b"]} tag "y" : (!dist.tensor<[b = 8, d = 16] local [1, 16], f64 on @grid2x4 split [[0, 1], []]>) -> !dist.tensor<[d = 16] local [16], f64 on @grid2x4 split [[]] partial [0, 1]>
  %y_1 = dist.all_reduce %y on @grid2x4 grid_axes = [0, 1] tag "y" : !dist.tensor<[d = 16] local [16], f64 on @grid2x4 split [[]] partial [0, 1]> -> !dist.tensor<[d = 16] local [16], f64 on @grid2x4 split [[]]>
  %y_2 = dist.redistribute %y_1 tag "y->z" : !dist.tensor<[d = 16] local [16], f64 on @grid2x4 split [[]]> -> !dist.tensor<[d = 16] local [4], f64 on @grid2x4 split [[1]]>
  dist.return %y_2 : !dist.tensor<[d = 16] local [4], f64 on @grid2x4 split [[1]]>
}

// CHECK-LABEL: dist.program @two_axes(devices = 8) attributes {pase.note = "hand-written"} {
// CHECK-NEXT:    shard.grid @grid2x4(shape = 2x4)
// CHECK-NEXT:    %x = dist.input "x" : !dist.tensor<[b = 8, d = 16] local [1, 16], f64 on @grid2x4 split [[0, 1], []]>
// CHECK-NEXT:    %y = dist.layer "dnn.reduce"(%x) stats [] props {kind = "sum", over = ["b"]} tag "y" : (!dist.tensor<[b = 8, d = 16] local [1, 16], f64 on @grid2x4 split [[0, 1], []]>) -> !dist.tensor<[d = 16] local [16], f64 on @grid2x4 split [[]] partial [0, 1]>
// CHECK-NEXT:    %y_1 = dist.all_reduce %y on @grid2x4 grid_axes = [0, 1] tag "y" : !dist.tensor<[d = 16] local [16], f64 on @grid2x4 split [[]] partial [0, 1]> -> !dist.tensor<[d = 16] local [16], f64 on @grid2x4 split [[]]>
// CHECK-NEXT:    %y_2 = dist.redistribute %y_1 tag "y->z" : !dist.tensor<[d = 16] local [16], f64 on @grid2x4 split [[]]> -> !dist.tensor<[d = 16] local [4], f64 on @grid2x4 split [[1]]>
// CHECK-NEXT:    dist.return %y_2 : !dist.tensor<[d = 16] local [4], f64 on @grid2x4 split [[1]]>
// CHECK-NEXT:  }
// GENERIC:      "dist.program"() <{sym_name = "two_axes", devices = #builtin.int<8>}> ({
// GENERIC:      %y_1 = "dist.all_reduce"(%y) <{grid = @grid2x4, grid_axes = array<i16: 0, 1>, tag = "y"}>
// GENERIC:      }) {pase.note = "hand-written"} : () -> ()

// -----

/// the vjp of the loss is `seeded` (its incoming gradient is 1, not an operand); the
/// vjp of another layer reads the incoming gradient as its last operand

dist.program @seeded(devices = 2) {
  shard.grid @grid2(shape = 2)
  %x = dist.param "x" : !dist.tensor<[b = 4] local [2], f32 on @grid2 split [[0]]>
  %r = dist.layer "dnn.relu"(%x) stats [] props {} tag "r" : (!dist.tensor<[b = 4] local [2], f32 on @grid2 split [[0]]>) -> !dist.tensor<[b = 4] local [2], f32 on @grid2 split [[0]]>
  %l = dist.layer "dnn.reduce"(%r) stats [] props {kind = "sum", over = ["b"]} tag "l" : (!dist.tensor<[b = 4] local [2], f32 on @grid2 split [[0]]>) -> !dist.tensor<[] local [], f32 on @grid2 split [] partial [0]>
  %l_1 = dist.all_reduce %l on @grid2 grid_axes = [0] tag "l" : !dist.tensor<[] local [], f32 on @grid2 split [] partial [0]> -> !dist.tensor<[] local [], f32 on @grid2 split []>
  %dr = dist.layer "dnn.vjp"(%r, %l_1) seeded stats [] props {wrt = [#builtin.int<0>], forward = "dnn.reduce", kind = "sum", over = ["b"]} tag "l" : (!dist.tensor<[b = 4] local [2], f32 on @grid2 split [[0]]>, !dist.tensor<[] local [], f32 on @grid2 split []>) -> !dist.tensor<[b = 4] local [2], f32 on @grid2 split [[0]]>
  %dx = dist.layer "dnn.vjp"(%x, %r, %dr) stats [] props {wrt = [#builtin.int<0>], forward = "dnn.relu"} tag "r" : (!dist.tensor<[b = 4] local [2], f32 on @grid2 split [[0]]>, !dist.tensor<[b = 4] local [2], f32 on @grid2 split [[0]]>, !dist.tensor<[b = 4] local [2], f32 on @grid2 split [[0]]>) -> !dist.tensor<[b = 4] local [2], f32 on @grid2 split [[0]]>
  dist.return %l_1, %dx : !dist.tensor<[] local [], f32 on @grid2 split []>, !dist.tensor<[b = 4] local [2], f32 on @grid2 split [[0]]>
}

// CHECK-LABEL: dist.program @seeded(devices = 2) {
// CHECK:         %dr = dist.layer "dnn.vjp"(%r, %l_1) seeded stats [] props {wrt = [#builtin.int<0>], forward = "dnn.reduce", kind = "sum", over = ["b"]} tag "l" : (!dist.tensor<[b = 4] local [2], f32 on @grid2 split [[0]]>, !dist.tensor<[] local [], f32 on @grid2 split []>) -> !dist.tensor<[b = 4] local [2], f32 on @grid2 split [[0]]>
// CHECK-NEXT:    %dx = dist.layer "dnn.vjp"(%x, %r, %dr) stats [] props {wrt = [#builtin.int<0>], forward = "dnn.relu"} tag "r" : (!dist.tensor<[b = 4] local [2], f32 on @grid2 split [[0]]>, !dist.tensor<[b = 4] local [2], f32 on @grid2 split [[0]]>, !dist.tensor<[b = 4] local [2], f32 on @grid2 split [[0]]>) -> !dist.tensor<[b = 4] local [2], f32 on @grid2 split [[0]]>

// GENERIC:      %dr = "dist.layer"(%r, %l_1) <{kernel = "dnn.vjp", seeded, stats_axes = array<i16>, op_properties = {wrt = [#builtin.int<0>], forward = "dnn.reduce", kind = "sum", over = ["b"]}, tag = "l"}>
// GENERIC-NEXT: %dx = "dist.layer"(%x, %r, %dr) <{kernel = "dnn.vjp", stats_axes = array<i16>, op_properties = {wrt = [#builtin.int<0>], forward = "dnn.relu"}, tag = "r"}>
