// RUN: pase-opt %s --split-input-file --verify-diagnostics | filecheck %s

/// A grid from its first device stays within the program's devices.

dist.program @p(devices = 4) {
  shard.grid @grid2_at3(shape = 2) {dist.first_device = 3 : i64}
  %x = dist.input "x" : !dist.tensor<[b = 2] local [1], f32 on @grid2_at3 split [[0]]>
  dist.return %x : !dist.tensor<[b = 2] local [1], f32 on @grid2_at3 split [[0]]>
}

// CHECK: {{.*}}dist-pipeline.mlir:{{[0-9]+}}:1: error: 'dist.program' op shard.grid @grid2_at3 has 2 devices from device 3 but dist.program @p runs on 4

// -----

/// dist.first_device is an integer.

dist.program @p(devices = 4) {
  shard.grid @grid2(shape = 2) {dist.first_device = "two"}
  %x = dist.input "x" : !dist.tensor<[b = 2] local [1], f32 on @grid2 split [[0]]>
  dist.return %x : !dist.tensor<[b = 2] local [1], f32 on @grid2 split [[0]]>
}

// CHECK: {{.*}}dist-pipeline.mlir:{{[0-9]+}}:1: error: 'dist.program' op dist.first_device must be an integer from 0 to the devices - 1, got "two"

// -----

/// A micro-batch index is one of the program's micro-batches.

dist.program @p(devices = 2) attributes {dist.microbatches = 2 : i64} {
  shard.grid @grid2(shape = 2)
  %x = dist.input "x" {dist.microbatch = 2 : i64} : !dist.tensor<[b = 2] local [1], f32 on @grid2 split [[0]]>
  dist.return %x : !dist.tensor<[b = 2] local [1], f32 on @grid2 split [[0]]>
}

// CHECK: {{.*}}dist-pipeline.mlir:{{[0-9]+}}:3: error: 'dist.input' op dist.microbatch must be an integer from 0 to 1, the program's micro-batches, got 2 : i64

// -----

/// An input's slice starts somewhere in each of its dims.

dist.program @p(devices = 2) {
  shard.grid @grid2(shape = 2)
  %x = dist.input "x" at [0] : !dist.tensor<[b = 2, d = 4] local [1, 4], f32 on @grid2 split [[0], []]>
  dist.return %x : !dist.tensor<[b = 2, d = 4] local [1, 4], f32 on @grid2 split [[0], []]>
}

// CHECK: {{.*}}dist-pipeline.mlir:{{[0-9]+}}:3: error: 'dist.input' op `at` gives where the slice starts in each of the 2 dims, each at least 0; got [0]
