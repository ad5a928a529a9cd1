// RUN: pase-opt %s --split-input-file --verify-diagnostics | filecheck %s

/// dnn.graph: one size per dimension (only the generic form can say otherwise)

"dnn.graph"() <{sym_name = "g", dim_names = ["b", "d"], dim_sizes = [#builtin.int<4>]}> ({
  %x = "dnn.input"() : () -> !dnn.tensor<[b = 4], f32>
  "dnn.return"(%x) : (!dnn.tensor<[b = 4], f32>) -> ()
}) : () -> ()

// CHECK: {{.*}}dnn-invalid.mlir:5:1: error: 'dnn.graph' op @g needs one size per dimension, got 2 names and 1 sizes

// -----

/// dnn.graph: a dimension declared twice (the custom form rejects it while parsing)

"dnn.graph"() <{sym_name = "g", dim_names = ["b", "b"], dim_sizes = [#builtin.int<4>, #builtin.int<4>]}> ({
  %x = "dnn.input"() : () -> !dnn.tensor<[b = 4], f32>
  "dnn.return"(%x) : (!dnn.tensor<[b = 4], f32>) -> ()
}) : () -> ()

// CHECK: {{.*}}dnn-invalid.mlir:16:1: error: 'dnn.graph' op @g declares a dimension twice

// -----

/// dnn.graph: sizes are positive

dnn.graph @g(b = 0) {
  %x = dnn.input : !dnn.tensor<[], f32>
  dnn.return %x : !dnn.tensor<[], f32>
}

// CHECK: {{.*}}dnn-invalid.mlir:27:1: error: 'dnn.graph' op dimension 'b' must have a positive size, got 0

// -----

/// dnn.graph: no block arguments

dnn.graph @g(b = 4) {
^bb0(%a : !dnn.tensor<[b = 4], f32>):
  dnn.return %a : !dnn.tensor<[b = 4], f32>
}

// CHECK: {{.*}}dnn-invalid.mlir:38:1: error: 'dnn.graph' op dnn.graph takes no block arguments; use dnn.input and dnn.param

// -----

/// dnn.graph: must end with dnn.return

dnn.graph @g(b = 4) {
  %x = dnn.input : !dnn.tensor<[b = 4], f32>
}

// CHECK: {{.*}}dnn-invalid.mlir:49:1: error: 'dnn.graph' op dnn.graph must end with dnn.return

// -----

/// dnn.graph: an empty body has no dnn.return either

dnn.graph @g(b = 4) {
}

// CHECK: {{.*}}dnn-invalid.mlir:59:1: error: 'dnn.graph' op dnn.graph must end with dnn.return

// -----

/// dnn.graph: a single block

dnn.graph @g(b = 4) {
  %x = dnn.input : !dnn.tensor<[b = 4], f32>
  dnn.return %x : !dnn.tensor<[b = 4], f32>
^bb1:
  dnn.return %x : !dnn.tensor<[b = 4], f32>
}

// CHECK: {{.*}}dnn-invalid.mlir:68:1: error: 'dnn.graph' op Region 'body' at position 0 expected a single block, but got 2 blocks

// -----

/// dnn.graph: every dimension of every value is declared

dnn.graph @g(b = 4) {
  %x = dnn.input : !dnn.tensor<[b = 4, c = 4], f32>
  dnn.return %x : !dnn.tensor<[b = 4, c = 4], f32>
}

// CHECK: {{.*}}dnn-invalid.mlir:81:1: error: 'dnn.graph' op dimension 'c' of %x is not declared in @g

// -----

/// dnn.graph: a dimension has its declared size everywhere

dnn.graph @g(b = 4) {
  %x = dnn.input : !dnn.tensor<[b = 8], f32>
  dnn.return %x : !dnn.tensor<[b = 8], f32>
}

// CHECK: {{.*}}dnn-invalid.mlir:92:1: error: 'dnn.graph' op dimension 'b' is 4 in @g but 8 in %x

// -----

/// ops of the dnn dialect live in a dnn.graph

%x = "dnn.input"() : () -> !dnn.tensor<[b = 4], f32>

// CHECK: {{.*}}dnn-invalid.mlir:103:1: error: 'dnn.input' op 'dnn.input' expects parent op 'dnn.graph'

// -----

/// dnn.return needs a value

dnn.graph @g(b = 4) {
  %x = dnn.input : !dnn.tensor<[b = 4], f32>
  "dnn.return"() : () -> ()
}

// CHECK: {{.*}}dnn-invalid.mlir:113:3: error: 'dnn.return' op dnn.return needs at least one value

// -----

/// dnn.param is floating-point

dnn.graph @g(b = 4) {
  %x = dnn.param : !dnn.tensor<[b = 4], i32>
  dnn.return %x : !dnn.tensor<[b = 4], i32>
}

// CHECK: {{.*}}dnn-invalid.mlir:123:3: error: 'dnn.param' op dnn.param must be floating-point

// -----

/// layer: the declared result type must be the inferred one

dnn.graph @g(b = 4) {
  %x = dnn.input : !dnn.tensor<[b = 4], f32>
  %y = dnn.relu %x : (!dnn.tensor<[b = 4], f32>) -> !dnn.tensor<[], f32>
  dnn.return %y : !dnn.tensor<[], f32>
}

// CHECK: {{.*}}dnn-invalid.mlir:135:3: error: 'dnn.relu' op result type !dnn.tensor<[], f32> does not match the inferred !dnn.tensor<[b = 4], f32>

// -----

/// layer: kind of pool2d

dnn.graph @g(b = 4, c = 6, h = 4, w = 4, hp = 2, wp = 2) {
  %x = dnn.input : !dnn.tensor<[b = 4, c = 6, h = 4, w = 4], f32>
  %y = dnn.pool2d min %x window [2, 2] stride 2 padding 0 : (!dnn.tensor<[b = 4, c = 6, h = 4, w = 4], f32>) -> !dnn.tensor<[b = 4, c = 6, hp = 2, wp = 2], f32>
  dnn.return %y : !dnn.tensor<[b = 4, c = 6, hp = 2, wp = 2], f32>
}

// CHECK: {{.*}}dnn-invalid.mlir:147:3: error: 'dnn.pool2d' op dnn.pool2d kind must be one of max, avg, got 'min'

// -----

/// layer: kind of reduce

dnn.graph @g(b = 4, d = 8) {
  %x = dnn.input : !dnn.tensor<[b = 4, d = 8], f32>
  %y = dnn.reduce max %x over [d] : (!dnn.tensor<[b = 4, d = 8], f32>) -> !dnn.tensor<[b = 4], f32>
  dnn.return %y : !dnn.tensor<[b = 4], f32>
}

// CHECK: {{.*}}dnn-invalid.mlir:159:3: error: 'dnn.reduce' op dnn.reduce kind must be one of sum, mean, got 'max'

// -----

/// layer: a missing property

dnn.graph @g(b = 4, c = 6, h = 4, w = 4, hp = 2, wp = 2) {
  %x = dnn.input : !dnn.tensor<[b = 4, c = 6, h = 4, w = 4], f32>
  %y = dnn.pool2d max %x window [2, 2] padding 0 : (!dnn.tensor<[b = 4, c = 6, h = 4, w = 4], f32>) -> !dnn.tensor<[b = 4, c = 6, hp = 2, wp = 2], f32>
  dnn.return %y : !dnn.tensor<[b = 4, c = 6, hp = 2, wp = 2], f32>
}

// CHECK: {{.*}}dnn-invalid.mlir:171:3: error: 'dnn.pool2d' op property 'stride' expected in operation 'dnn.pool2d'

// -----

/// conv2d operand count

dnn.graph @g(b = 4, d = 8) {
  %x = dnn.input : !dnn.tensor<[b = 4, d = 8], f32>
  %y = dnn.conv2d %x stride 1 padding 0 : (!dnn.tensor<[b = 4, d = 8], f32>) -> !dnn.tensor<[b = 4, d = 8], f32>
  dnn.return %y : !dnn.tensor<[b = 4, d = 8], f32>
}

// CHECK: {{.*}}dnn-invalid.mlir:183:3: error: 'dnn.conv2d' op conv2d takes 2 operands (input, filter), got 1

// -----

/// pool2d operand count

dnn.graph @g(b = 4, d = 8) {
  %x = dnn.input : !dnn.tensor<[b = 4, d = 8], f32>
  %y = dnn.pool2d max %x, %x window [1, 1] stride 1 padding 0 : (!dnn.tensor<[b = 4, d = 8], f32>, !dnn.tensor<[b = 4, d = 8], f32>) -> !dnn.tensor<[b = 4, d = 8], f32>
  dnn.return %y : !dnn.tensor<[b = 4, d = 8], f32>
}

// CHECK: {{.*}}dnn-invalid.mlir:195:3: error: 'dnn.pool2d' op pool2d takes 1 operand, got 2

// -----

/// pool2d window rank

dnn.graph @g(b = 4, c = 6, h = 4, w = 4, hp = 2, wp = 2) {
  %x = dnn.input : !dnn.tensor<[b = 4, c = 6, h = 4, w = 4], f32>
  %y = dnn.pool2d max %x window [2, 2, 2] stride 2 padding 0 : (!dnn.tensor<[b = 4, c = 6, h = 4, w = 4], f32>) -> !dnn.tensor<[b = 4, c = 6, hp = 2, wp = 2], f32>
  dnn.return %y : !dnn.tensor<[b = 4, c = 6, hp = 2, wp = 2], f32>
}

// CHECK: {{.*}}dnn-invalid.mlir:207:3: error: 'dnn.pool2d' op pool2d window must be [height, width], got [2, 2, 2]

// -----

/// padding is one int or a pair

dnn.graph @g(b = 4, c = 6, h = 4, w = 4, hp = 2, wp = 2) {
  %x = dnn.input : !dnn.tensor<[b = 4, c = 6, h = 4, w = 4], f32>
  %y = dnn.pool2d max %x window [2, 2] stride 2 padding [0, 0, 0] : (!dnn.tensor<[b = 4, c = 6, h = 4, w = 4], f32>) -> !dnn.tensor<[b = 4, c = 6, hp = 2, wp = 2], f32>
  dnn.return %y : !dnn.tensor<[b = 4, c = 6, hp = 2, wp = 2], f32>
}

// CHECK: {{.*}}dnn-invalid.mlir:219:3: error: 'dnn.pool2d' op padding must be one int or [height, width], got [0, 0, 0]

// -----

/// unary operand count

dnn.graph @g(b = 4, d = 8) {
  %x = dnn.input : !dnn.tensor<[b = 4, d = 8], f32>
  %y = dnn.gelu %x, %x : (!dnn.tensor<[b = 4, d = 8], f32>, !dnn.tensor<[b = 4, d = 8], f32>) -> !dnn.tensor<[b = 4, d = 8], f32>
  dnn.return %y : !dnn.tensor<[b = 4, d = 8], f32>
}

// CHECK: {{.*}}dnn-invalid.mlir:231:3: error: 'dnn.gelu' op gelu takes 1 operand, got 2

// -----

/// binary operand count

dnn.graph @g(b = 4, d = 8) {
  %x = dnn.input : !dnn.tensor<[b = 4, d = 8], f32>
  %y = dnn.sub %x : (!dnn.tensor<[b = 4, d = 8], f32>) -> !dnn.tensor<[b = 4, d = 8], f32>
  dnn.return %y : !dnn.tensor<[b = 4, d = 8], f32>
}

// CHECK: {{.*}}dnn-invalid.mlir:243:3: error: 'dnn.sub' op sub takes 2 operands, got 1

// -----

/// softmax operand count

dnn.graph @g(b = 4, d = 8) {
  %x = dnn.input : !dnn.tensor<[b = 4, d = 8], f32>
  %y = dnn.softmax %x, %x over [d] : (!dnn.tensor<[b = 4, d = 8], f32>, !dnn.tensor<[b = 4, d = 8], f32>) -> !dnn.tensor<[b = 4, d = 8], f32>
  dnn.return %y : !dnn.tensor<[b = 4, d = 8], f32>
}

// CHECK: {{.*}}dnn-invalid.mlir:255:3: error: 'dnn.softmax' op softmax takes 1 operand, got 2

// -----

/// norm operand count: none

dnn.graph @g(b = 4, d = 8) {
  %x = dnn.input : !dnn.tensor<[b = 4, d = 8], f32>
  %y = dnn.layernorm over [d] : () -> !dnn.tensor<[b = 4, d = 8], f32>
  dnn.return %y : !dnn.tensor<[b = 4, d = 8], f32>
}

// CHECK: {{.*}}dnn-invalid.mlir:267:3: error: 'dnn.layernorm' op layernorm takes 1 operand, or 3 with scale and bias, got 0

// -----

/// norm operand count: two

dnn.graph @g(b = 4, d = 8) {
  %x = dnn.input : !dnn.tensor<[b = 4, d = 8], f32>
  %g = dnn.param : !dnn.tensor<[b = 4], f32>
  %y = dnn.batchnorm %x, %g over [b] : (!dnn.tensor<[b = 4, d = 8], f32>, !dnn.tensor<[b = 4], f32>) -> !dnn.tensor<[b = 4, d = 8], f32>
  dnn.return %y : !dnn.tensor<[b = 4, d = 8], f32>
}

// CHECK: {{.*}}dnn-invalid.mlir:280:3: error: 'dnn.batchnorm' op batchnorm takes 1 operand, or 3 with scale and bias, got 2

// -----

/// reduce operand count

dnn.graph @g(b = 4, d = 8) {
  %x = dnn.input : !dnn.tensor<[b = 4, d = 8], f32>
  %y = dnn.reduce sum %x, %x over [d] : (!dnn.tensor<[b = 4, d = 8], f32>, !dnn.tensor<[b = 4, d = 8], f32>) -> !dnn.tensor<[b = 4], f32>
  dnn.return %y : !dnn.tensor<[b = 4], f32>
}

// CHECK: {{.*}}dnn-invalid.mlir:292:3: error: 'dnn.reduce' op reduce takes 1 operand, got 2

// -----

/// embedding operand count

dnn.graph @g(b = 4, d = 8) {
  %x = dnn.input : !dnn.tensor<[b = 4, d = 8], f32>
  %y = dnn.embedding %x : (!dnn.tensor<[b = 4, d = 8], f32>) -> !dnn.tensor<[b = 4, d = 8], f32>
  dnn.return %y : !dnn.tensor<[b = 4, d = 8], f32>
}

// CHECK: {{.*}}dnn-invalid.mlir:304:3: error: 'dnn.embedding' op embedding takes 2 operands (ids, table), got 1

// -----

/// lstm operand count

dnn.graph @g(b = 4, d = 8) {
  %x = dnn.input : !dnn.tensor<[b = 4, d = 8], f32>
  %y = dnn.lstm %x : (!dnn.tensor<[b = 4, d = 8], f32>) -> !dnn.tensor<[b = 4, d = 8], f32>
  dnn.return %y : !dnn.tensor<[b = 4, d = 8], f32>
}

// CHECK: {{.*}}dnn-invalid.mlir:316:3: error: 'dnn.lstm' op lstm takes 2 or 3 operands (input, weight, optional bias), got 1

// -----

/// reshape operand count

dnn.graph @g(b = 4, d = 8) {
  %x = dnn.input : !dnn.tensor<[b = 4, d = 8], f32>
  %y = dnn.reshape %x, %x : (!dnn.tensor<[b = 4, d = 8], f32>, !dnn.tensor<[b = 4, d = 8], f32>) -> !dnn.tensor<[b = 4, d = 8], f32>
  dnn.return %y : !dnn.tensor<[b = 4, d = 8], f32>
}

// CHECK: {{.*}}dnn-invalid.mlir:328:3: error: 'dnn.reshape' op reshape takes 1 operand, got 2

// -----

/// softmax_cross_entropy operand count

dnn.graph @g(b = 4, d = 8) {
  %x = dnn.input : !dnn.tensor<[b = 4, d = 8], f32>
  %y = dnn.softmax_cross_entropy %x over [d] : (!dnn.tensor<[b = 4, d = 8], f32>) -> !dnn.tensor<[], f32>
  dnn.return %y : !dnn.tensor<[], f32>
}

// CHECK: {{.*}}dnn-invalid.mlir:340:3: error: 'dnn.softmax_cross_entropy' op softmax_cross_entropy takes 2 operands (logits, labels), got 1

// -----

/// softmax_cross_entropy is over one dimension

dnn.graph @g(b = 4, d = 8) {
  %x = dnn.input : !dnn.tensor<[b = 4, d = 8], f32>
  %t = dnn.input : !dnn.tensor<[b = 4], i32>
  %y = dnn.softmax_cross_entropy %x, %t over [b, d] : (!dnn.tensor<[b = 4, d = 8], f32>, !dnn.tensor<[b = 4], i32>) -> !dnn.tensor<[], f32>
  dnn.return %y : !dnn.tensor<[], f32>
}

// CHECK: {{.*}}dnn-invalid.mlir:353:3: error: 'dnn.softmax_cross_entropy' op softmax_cross_entropy is over one class dimension, got [b, d]

// -----

/// dnn.graph: sizes stay within 2^53, so counts and costs are exact

dnn.graph @g(b = 9007199254740993) {
  %x = dnn.input : !dnn.tensor<[], f32>
  dnn.return %x : !dnn.tensor<[], f32>
}

// CHECK: {{.*}}dnn-invalid.mlir:363:1: error: 'dnn.graph' op dimension 'b' is 9,007,199,254,740,993; pase handles at most 2^53


// -----

/// dnn.input and dnn.param take no configuration

dnn.graph @g(b = 4) {
  %x = dnn.input {pase.config = #pase.config<b = 2>} : !dnn.tensor<[b = 4], f32>
  dnn.return %x : !dnn.tensor<[b = 4], f32>
}

// CHECK: {{.*}}dnn-invalid.mlir:376:3: error: 'dnn.input' op dnn.input takes no pase.config: it is laid out as its first reader's configuration needs

// -----

dnn.graph @g(b = 4) {
  %w = dnn.param {pase.config = #pase.config<b = 2>} : !dnn.tensor<[b = 4], f32>
  dnn.return %w : !dnn.tensor<[b = 4], f32>
}

// CHECK: {{.*}}dnn-invalid.mlir:385:3: error: 'dnn.param' op dnn.param takes no pase.config: it is laid out as its first reader's configuration needs
