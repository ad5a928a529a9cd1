// Usage errors: exit status 1 and a one-line message, never a traceback.
// RUN: not pase-opt --no-such-flag 2>&1 | filecheck %s --check-prefix=FLAG
// RUN: not pase-opt %S/Inputs/no-such-file.dnn 2>&1 | filecheck %s --check-prefix=MISSING
// RUN: not pase-opt %s -f no-such-frontend 2>&1 | filecheck %s --check-prefix=FRONTEND
// RUN: not pase-opt %S/Inputs/notes.txt 2>&1 | filecheck %s --check-prefix=EXTENSION

// FLAG:          {{^}}pase-opt: error: unrecognized arguments: --no-such-flag (see pase-opt --help){{$}}
// FLAG-NOT:      {{.}}

// MISSING:       {{^}}pase-opt: error: cannot open {{.*}}no-such-file.dnn: No such file or directory{{$}}
// MISSING-NOT:   {{.}}

// FRONTEND:      {{^}}pase-opt: error: argument -f/--frontend: invalid choice: 'no-such-frontend' (choose from dnn, onnx, mlir) (see pase-opt --help){{$}}
// FRONTEND-NOT:  {{.}}

// EXTENSION:     {{^}}pase-opt: error: Unrecognized file extension 'txt'{{$}}
// EXTENSION-NOT: {{.}}
