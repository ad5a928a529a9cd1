// RUN: pase-opt %s --split-input-file --parsing-diagnostics | filecheck %s

/// !dnn.tensor: a dimension twice

dnn.graph @g(b = 4, d = 8) {
  %x = dnn.input : !dnn.tensor<[b = 4, b = 4], f32>
  dnn.return %x : !dnn.tensor<[b = 4, b = 4], f32>
}

// CHECK: {{.*}}dnn-invalid-parse.mlir:6:31{{$}}
// CHECK: dimension 'b' appears twice in a !dnn.tensor

// -----

/// !dnn.tensor: sizes are positive

dnn.graph @g(b = 4, d = 8) {
  %x = dnn.input : !dnn.tensor<[b = 0], f32>
  dnn.return %x : !dnn.tensor<[b = 0], f32>
}

// CHECK: {{.*}}dnn-invalid-parse.mlir:18:31{{$}}
// CHECK: dimension sizes must be positive, got 0

// -----

/// !dnn.tensor: element types

dnn.graph @g(b = 4, d = 8) {
  %x = dnn.input : !dnn.tensor<[b = 4], i8>
  dnn.return %x : !dnn.tensor<[b = 4], i8>
}

// CHECK: {{.*}}dnn-invalid-parse.mlir:30:31{{$}}
// CHECK: unsupported element type i8; expected f32, f64, i32 or i64

// -----

/// !dnn.tensor: a dimension is a name

dnn.graph @g(b = 4, d = 8) {
  %x = dnn.input : !dnn.tensor<[4 = b], f32>
  dnn.return %x : !dnn.tensor<[4 = b], f32>
}

// CHECK: {{.*}}dnn-invalid-parse.mlir:42:33{{$}}
// CHECK: identifier expected (a dimension name)

// -----

/// dnn.graph: a dimension declared twice

dnn.graph @g(b = 4, b = 8) {
  %x = dnn.input : !dnn.tensor<[b = 4], f32>
  dnn.return %x : !dnn.tensor<[b = 4], f32>
}

// CHECK: {{.*}}dnn-invalid-parse.mlir:53:28{{$}}
// CHECK: dimension 'b' is declared twice in @g

// -----

/// layer ops have one result

dnn.graph @g(b = 4, d = 8) {
  %x = dnn.input : !dnn.tensor<[b = 4, d = 8], f32>
  %y = dnn.relu %x : (!dnn.tensor<[b = 4, d = 8], f32>) -> (!dnn.tensor<[b = 4, d = 8], f32>, !dnn.tensor<[b = 4, d = 8], f32>)
  dnn.return %x : !dnn.tensor<[b = 4, d = 8], f32>
}

// CHECK: {{.*}}dnn-invalid-parse.mlir:67:22{{$}}
// CHECK: dnn.relu has exactly one result

// -----

/// pool2d needs its kind

dnn.graph @g(b = 4, d = 8) {
  %x = dnn.input : !dnn.tensor<[b = 4, d = 8], f32>
  %y = dnn.pool2d %x window [1, 1] stride 1 padding 0 : (!dnn.tensor<[b = 4, d = 8], f32>) -> !dnn.tensor<[b = 4, d = 8], f32>
  dnn.return %y : !dnn.tensor<[b = 4, d = 8], f32>
}

// CHECK: {{.*}}dnn-invalid-parse.mlir:80:19{{$}}
// CHECK: identifier expected (max or avg)

// -----

/// !dnn.tensor: at most 2^53 elements, so counts and costs are exact

dnn.graph @g(b = 4294967296, d = 4294967296) {
  %x = dnn.input : !dnn.tensor<[b = 4294967296, d = 4294967296], f32>
  dnn.return %x : !dnn.tensor<[b = 4294967296, d = 4294967296], f32>
}

// CHECK: {{.*}}dnn-invalid-parse.mlir:92:31{{$}}
// CHECK: a !dnn.tensor of 18,446,744,073,709,551,616 elements is too large; pase handles at most 2^53 per tensor
