// `--help` lists pase's passes with their options (from the pass classes' fields and
// docstrings) after xdsl-opt's flags.
// RUN: pase-opt --help | filecheck %s
// RUN: pase-opt -h | filecheck %s

// CHECK:      usage: pase-opt
// CHECK:      --split-input-file
// CHECK:      --verify-diagnostics
// CHECK:      pase passes:
// CHECK-NEXT:   pase-annotate-configs{devices=1 min-shard=4}
// CHECK-NEXT:       Attach the number of valid configurations to every layer.
// CHECK-NEXT:   pase-search{devices=0 machine=pase-default order=genseq method=dp min-shard=4
// CHECK-NEXT:               compat="" memory-gib=4.0 jit=auto strategy="" export="" report=false
// CHECK-NEXT:               device-memory-gib=0.0 bounding=true effort=30000 optimizer=sgd
// CHECK-NEXT:               precision=fp32 recompute=none zero=0 data-parallel=0 one-mesh=false}
// CHECK-NEXT:       Find the optimal strategy of each graph and attach it.
// CHECK-NEXT:   pase-merge-layers
// CHECK-NEXT:       Mark every layer with the segment it belongs to (#pase.segment).
// CHECK-NEXT:   pase-partition-stages{devices=0 stages=auto microbatches=auto schedule=1f1b
// CHECK-NEXT:                         device-memory-gib=0.0 effort=30000 machine=pase-default
// CHECK-NEXT:                         min-shard=4 method=dp report=false export="" strategy=""
// CHECK-NEXT:                         optimizer=sgd precision=fp32 recompute=none zero=0
// CHECK-NEXT:                         data-parallel=0 one-mesh=false}
// CHECK-NEXT:       Split the layers into pipeline stages with per-stage PaSE strategies.
// CHECK-NEXT:   pase-scale{factor=1.0}
// CHECK-NEXT:       Scale every dimension of every graph by `factor` (0 < factor <= 1).
// CHECK-NEXT:   pase-autodiff{lr=0.01 optimizer="" selected-rates=false}
// CHECK-NEXT:       Append the backward pass and an optimizer update to every graph.
// CHECK-NEXT:   pase-lower-spmd
// CHECK-NEXT:       optional: devices=<int>
// CHECK-NEXT:       Lower every `dnn.graph` to a `dist.program` on `devices` devices.
