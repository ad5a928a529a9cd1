// A wrong pass option is one line of error (a malformed pipeline also shows where), exit 1.
// RUN: not pase-opt %S/Inputs/tiny.dnn -p 'pase-annotate-configs{devices=x}' 2>&1 | filecheck %s --check-prefix=TYPE
// RUN: not pase-opt %S/Inputs/tiny.dnn -p 'pase-annotate-configs{gpus=8}' 2>&1 | filecheck %s --check-prefix=NAME
// RUN: not pase-opt %S/Inputs/tiny.dnn -p 'pase-annotate-configs{devices=0}' 2>&1 | filecheck %s --check-prefix=VALUE
// RUN: not pase-opt %S/Inputs/tiny.dnn -p 'pase-annotate-configs{min-shard=0}' 2>&1 | filecheck %s --check-prefix=SHARD
// RUN: not pase-opt %S/Inputs/tiny.dnn -p 'pase-annotate-configs{devices=4' 2>&1 | filecheck %s --check-prefix=SPEC
// RUN: not pase-opt %S/Inputs/tiny.dnn -p 'pase-search{devices=4,8}' 2>&1 | filecheck %s --check-prefix=LIST
// RUN: not pase-opt %S/Inputs/tiny.dnn -p 'pase-search{devices=4 report=1}' 2>&1 | filecheck %s --check-prefix=BOOL
// RUN: not pase-opt %S/Inputs/tiny.dnn -p 'pase-autodiff{lr=-1}' 2>&1 | filecheck %s --check-prefix=LR
// RUN: not pase-opt %S/Inputs/tiny.dnn -p 'pase-search{devices=4},' 2>&1 | filecheck %s --check-prefix=COMMA
// RUN: not pase-opt %S/Inputs/tiny.dnn -p 'pase-search{devices=4}, ' 2>&1 | filecheck %s --check-prefix=COMMA
// RUN: pase-opt %S/Inputs/tiny-loss.dnn -p 'pase-search{devices=2 memory-gib=1e-2},pase-autodiff{lr=1}' | filecheck %s --check-prefix=NUMBERS

// TYPE:      {{^}}pase-opt: error: pase-annotate-configs: option 'devices' takes an integer, got "x"{{$}}
// TYPE-NOT:  {{.}}

// NAME:      {{^}}pase-opt: error: pase-annotate-configs: unknown option 'gpus'; its options are devices, min-shard{{$}}
// NAME-NOT:  {{.}}

// VALUE:     error: pase-annotate-configs: devices must be between 1 and 8,192, got 0{{$}}
// VALUE-NOT: {{.}}

// SHARD:     error: pase-annotate-configs: min-shard must be at least 1, got 0{{$}}
// SHARD-NOT: {{.}}

// SPEC:      {{^}}pase-opt: error: Error parsing pass pipeline specification:
// SPEC-NEXT: pass-pipeline:1:32
// SPEC:      Malformed pass arguments, expected either a space or `}` here
// SPEC-NOT:  Traceback

// LIST:      {{^}}pase-opt: error: pase-search: option 'devices' takes one value, got 2{{$}}
// LIST-NOT:  {{.}}

// BOOL:      {{^}}pase-opt: error: pase-search: option 'report' takes true or false, got 1{{$}}
// BOOL-NOT:  {{.}}

// COMMA:      {{^}}pase-opt: error: Error parsing pass pipeline specification:
// COMMA-NEXT: {{^}}pass-pipeline:1:23{{$}}
// COMMA-NEXT: {{^}}pase-search{devices=4},{{ ?$}}
// COMMA-NEXT: {{^}}                      ^{{$}}
// COMMA-NEXT: {{^}}                      a comma that ends the pipeline; a pass name must follow it (or drop the comma){{$}}
// COMMA-NOT:  {{.}}

// LR:        {{^}}error: pase-autodiff: lr must be a finite number at least 0, got -1.0{{$}}
// LR-NOT:    {{.}}

// An integer is a number, and a number may have an exponent.
// NUMBERS:   dnn.sgd {{.*}} lr 1.000000e+00

// An option given twice is an error (xDSL would keep the last silently).
// RUN: not pase-opt %S/Inputs/tiny.dnn -p 'pase-annotate-configs{devices=4 devices=2}' 2>&1 | filecheck %s --check-prefix=TWICE
// TWICE:      {{^}}pase-opt: error: Error parsing pass pipeline specification:{{$}}
// TWICE-NEXT: {{^}}pass-pipeline:1:33{{$}}
// TWICE:      option 'devices' is given twice
