// A wrong pass name is one line of error and exit status 1.
// RUN: not pase-opt %S/Inputs/tiny.dnn -p no-such-pass 2>&1 | filecheck %s
// RUN: not pase-opt %S/Inputs/tiny.dnn -p 'pase-annotate-configs,no-such-pass' 2>&1 | filecheck %s

// CHECK:     {{^}}pase-opt: error: Unrecognized passes: ['no-such-pass']{{$}}
// CHECK-NOT: {{.}}

// RUN: not pase-opt %S/Inputs/tiny.dnn -p no-such-pass 2>&1 | wc -l | filecheck %s --check-prefix=LINES
// LINES: {{^ *1$}}
