// RUN: pase-opt %s | filecheck %s
// RUN: pase-opt %s | pase-opt | filecheck %s

/// A pipelined program: a stage grid from its first device, a micro-batch's rows of an
/// input, a running sum and a scale; it prints back as it reads.

dist.program @p(devices = 4) attributes {dist.stages = 2 : i64, dist.microbatches = 2 : i64} {
  shard.grid @grid2_at2(shape = 2) {dist.first_device = 2 : i64}
  %x = dist.input "x" at [2, 0] {dist.microbatch = 1 : i64, dist.phase = "forward"} : !dist.tensor<[b = 2, d = 4] local [1, 4], f32 on @grid2_at2 split [[0], []]>
  %y = dist.accumulate %x, %x tag "h" {dist.microbatch = 1 : i64, dist.phase = "backward"} : !dist.tensor<[b = 2, d = 4] local [1, 4], f32 on @grid2_at2 split [[0], []]>
  %z = dist.scale %y by 2.500000e-01 : f64 tag "h" {dist.phase = "update"} : !dist.tensor<[b = 2, d = 4] local [1, 4], f32 on @grid2_at2 split [[0], []]>
  dist.return %z : !dist.tensor<[b = 2, d = 4] local [1, 4], f32 on @grid2_at2 split [[0], []]>
}

// CHECK:      dist.program @p(devices = 4) attributes {dist.stages = 2 : i64, dist.microbatches = 2 : i64} {
// CHECK-NEXT:   shard.grid @grid2_at2(shape = 2) {dist.first_device = 2 : i64}
// CHECK-NEXT:   %x = dist.input "x" at [2, 0] {dist.microbatch = 1 : i64, dist.phase = "forward"} : !dist.tensor<[b = 2, d = 4] local [1, 4], f32 on @grid2_at2 split [[0], []]>
// CHECK-NEXT:   %y = dist.accumulate %x, %x tag "h"
// CHECK-NEXT:   %z = dist.scale %y by 2.500000e-01 : f64 tag "h"
