// RUN: pase-opt %s --split-input-file --verify-diagnostics | filecheck %s

/// dist.accumulate: adds two values of one type, its result's

dist.program @p(devices = 2) {
  shard.grid @grid2(shape = 2)
  %x = dist.input "x" : !dist.tensor<[b = 2, d = 4] local [1, 4], f32 on @grid2 split [[0], []]>
  %z = dist.input "z" : !dist.tensor<[b = 2, d = 4] local [2, 2], f32 on @grid2 split [[], [0]]>
  %y = "dist.accumulate"(%x, %z) <{tag = "h"}> : (!dist.tensor<[b = 2, d = 4] local [1, 4], f32 on @grid2 split [[0], []]>, !dist.tensor<[b = 2, d = 4] local [2, 2], f32 on @grid2 split [[], [0]]>) -> !dist.tensor<[b = 2, d = 4] local [1, 4], f32 on @grid2 split [[0], []]>
  dist.return %y : !dist.tensor<[b = 2, d = 4] local [1, 4], f32 on @grid2 split [[0], []]>
}

// CHECK: {{.*}}dist-pipeline-ops-invalid.mlir:9:3: error: 'dist.accumulate' op operand 'rhs' at position 1 does not verify: attribute !dist.tensor<[b = 2, d = 4] local [1, 4], f32 on @grid2 split {{\[\[}}0], []]> expected from variable 'T', but got !dist.tensor<[b = 2, d = 4] local [2, 2], f32 on @grid2 split {{\[\[}}], [0]]>

// -----

/// dist.accumulate: inside a dist.program

%x = "test.op"() : () -> !dist.tensor<[b = 2, d = 4] local [1, 4], f32 on @grid2 split [[0], []]>
%y = dist.accumulate %x, %x tag "h" : !dist.tensor<[b = 2, d = 4] local [1, 4], f32 on @grid2 split [[0], []]>

// CHECK: {{.*}}dist-pipeline-ops-invalid.mlir:20:1: error: 'dist.accumulate' op 'dist.accumulate' expects parent op 'dist.program'

// -----

/// dist.scale: the result has its input's type

dist.program @p(devices = 2) {
  shard.grid @grid2(shape = 2)
  %x = dist.input "x" : !dist.tensor<[b = 2, d = 4] local [1, 4], f32 on @grid2 split [[0], []]>
  %y = "dist.scale"(%x) <{factor = 2.500000e-01 : f64, tag = "h"}> : (!dist.tensor<[b = 2, d = 4] local [1, 4], f32 on @grid2 split [[0], []]>) -> !dist.tensor<[b = 2, d = 4] local [1, 4], f64 on @grid2 split [[0], []]>
  dist.return %y : !dist.tensor<[b = 2, d = 4] local [1, 4], f64 on @grid2 split [[0], []]>
}

// CHECK: {{.*}}dist-pipeline-ops-invalid.mlir:31:3: error: 'dist.scale' op result 'result' at position 0 does not verify: attribute !dist.tensor<[b = 2, d = 4] local [1, 4], f32 on @grid2 split {{\[\[}}0], []]> expected from variable 'T', but got !dist.tensor<[b = 2, d = 4] local [1, 4], f64 on @grid2 split {{\[\[}}0], []]>

// -----

/// dist.scale: inside a dist.program

%x = "test.op"() : () -> !dist.tensor<[b = 2, d = 4] local [1, 4], f32 on @grid2 split [[0], []]>
%y = dist.scale %x by 2.500000e-01 : f64 tag "h" : !dist.tensor<[b = 2, d = 4] local [1, 4], f32 on @grid2 split [[0], []]>

// CHECK: {{.*}}dist-pipeline-ops-invalid.mlir:42:1: error: 'dist.scale' op 'dist.scale' expects parent op 'dist.program'
