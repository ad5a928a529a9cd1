// A wrong pass option is one line of error (a malformed pipeline also shows where), exit 1.
// RUN: not pase-opt %S/Inputs/tiny.dnn -p 'pase-annotate-configs{devices=x}' 2>&1 | filecheck %s --check-prefix=TYPE
// RUN: not pase-opt %S/Inputs/tiny.dnn -p 'pase-annotate-configs{gpus=8}' 2>&1 | filecheck %s --check-prefix=NAME
// RUN: not pase-opt %S/Inputs/tiny.dnn -p 'pase-annotate-configs{devices=0}' 2>&1 | filecheck %s --check-prefix=VALUE
// RUN: not pase-opt %S/Inputs/tiny.dnn -p 'pase-annotate-configs{min-shard=0}' 2>&1 | filecheck %s --check-prefix=SHARD
// RUN: not pase-opt %S/Inputs/tiny.dnn -p 'pase-annotate-configs{devices=4' 2>&1 | filecheck %s --check-prefix=SPEC

// TYPE:      {{^}}pase-opt: error: Incompatible types: given ('x',), expected <class 'int'>{{$}}
// TYPE-NOT:  {{.}}

// NAME:      {{^}}pase-opt: error: Provided arguments ["gpus"] not found in expected arguments ["devices", "min_shard"]{{$}}
// NAME-NOT:  {{.}}

// VALUE:     error: pase-annotate-configs: devices must be at least 1, got 0{{$}}
// VALUE-NOT: {{.}}

// SHARD:     error: pase-annotate-configs: min-shard must be at least 1, got 0{{$}}
// SHARD-NOT: {{.}}

// SPEC:      {{^}}pase-opt: error: Error parsing pass pipeline specification:
// SPEC-NEXT: pass-pipeline:1:32
// SPEC:      Malformed pass arguments, expected either a space or `}` here
// SPEC-NOT:  Traceback
