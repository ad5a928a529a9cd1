// A UTF-8 byte order mark that starts an input (as Windows editors save) is dropped, as
// editors hide it: .dnn and .mlir read as without it, and columns count from after it
// (it was "unexpected character '\ufeff'", and for MLIR an invisible character in the
// message; strategy JSON said "decode using utf-8-sig").
// RUN: printf '\357\273\277' > %t.dnn && cat %S/Inputs/tiny.dnn >> %t.dnn && pase-opt %t.dnn | filecheck %s
// RUN: printf '\357\273\277' > %t.mlir && pase-opt %S/Inputs/tiny.dnn >> %t.mlir && pase-opt %t.mlir | filecheck %s
// RUN: printf '\357\273\277%%oops' > %t.bad.dnn && not pase-opt %t.bad.dnn 2>&1 | filecheck %s --check-prefix=COLUMN

// CHECK:  dnn.graph @
// COLUMN: {{^}}{{.*}}.bad.dnn:1:1: error:
