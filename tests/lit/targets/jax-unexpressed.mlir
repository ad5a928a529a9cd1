// -t jax expresses the plan whole or not at all: an attribute of the plan it does not
// translate (here one a newer pase might write) is one error naming it and the layer, exit 1,
// and no file.
// RUN: rm -f %t.py && not pase-opt %s -t jax -o %t.py 2>&1 | filecheck %s
// RUN: test ! -e %t.py

// CHECK: jax-unexpressed.mlir:[[# @LINE + 6]]:5: error: the jax target cannot express pase.offload of layer 'h' (dnn.einsum): its program would silently not follow it

builtin.module {
  dnn.graph @g(b = 4, d = 6, h = 8) {
    %x = dnn.input : !dnn.tensor<[b = 4, d = 6], f32>
    %w = dnn.param : !dnn.tensor<[d = 6, h = 8], f32>
    %h = dnn.einsum %x, %w {pase.config = #pase.config<b = 2>, pase.offload = 1 : i64} : (!dnn.tensor<[b = 4, d = 6], f32>, !dnn.tensor<[d = 6, h = 8], f32>) -> !dnn.tensor<[b = 4, h = 8], f32>
    %l = dnn.reduce mean %h over [b, h] : (!dnn.tensor<[b = 4, h = 8], f32>) -> !dnn.tensor<[], f32>
    dnn.return %l : !dnn.tensor<[], f32>
  }
}
