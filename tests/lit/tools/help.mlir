// `--help` lists pase's passes with their options after xdsl-opt's flags.
// RUN: pase-opt --help | filecheck %s
// RUN: pase-opt -h | filecheck %s

// CHECK:      usage: pase-opt
// CHECK:      --split-input-file
// CHECK:      --verify-diagnostics
// CHECK:      pase passes:
// CHECK-NEXT:   pase-annotate-configs{devices=P min-shard=4}
// CHECK-NEXT:       attach pase.num_configs, the number of valid PaSE configurations, to every layer
