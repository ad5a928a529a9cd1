// Usage errors: exit status 1 and a one-line message, never a traceback.
// RUN: not pase-opt --no-such-flag 2>&1 | filecheck %s --check-prefix=FLAG
// RUN: not pase-opt %S/Inputs/no-such-file.dnn 2>&1 | filecheck %s --check-prefix=MISSING
// RUN: not pase-opt %s -f no-such-frontend 2>&1 | filecheck %s --check-prefix=FRONTEND
// RUN: not pase-opt %S/Inputs/notes.txt 2>&1 | filecheck %s --check-prefix=EXTENSION
// RUN: not pase-opt %S/Inputs/tiny.dnn -t x86-asm 2>&1 | filecheck %s --check-prefix=TARGET
// No extension: one usage line (was "Error parsing pass pipeline specification" of the
// empty name); with -f the name does not matter (was "Unrecognized file extension").
// RUN: rm -rf %t.d && mkdir %t.d && cp %S/Inputs/tiny.dnn %t.d/tiny && not pase-opt %t.d/tiny 2>&1 | filecheck %s --check-prefix=NOEXT
// RUN: pase-opt %t.d/tiny -f dnn | filecheck %s --check-prefix=GIVEN
// RUN: cp %S/Inputs/tiny.dnn %t.txt && pase-opt %t.txt -f dnn | filecheck %s --check-prefix=GIVEN

// FLAG:          {{^}}pase-opt: error: unrecognized arguments: --no-such-flag (see pase-opt --help){{$}}
// FLAG-NOT:      {{.}}

// MISSING:       {{^}}pase-opt: error: cannot open {{.*}}no-such-file.dnn: No such file or directory{{$}}
// MISSING-NOT:   {{.}}

// FRONTEND:      {{^}}pase-opt: error: argument -f/--frontend: invalid choice: 'no-such-frontend' (choose from dnn, onnx, mlir) (see pase-opt --help){{$}}
// FRONTEND-NOT:  {{.}}

// EXTENSION:     {{^}}pase-opt: error: Unrecognized file extension 'txt'{{$}}
// EXTENSION-NOT: {{.}}

// NOEXT:         {{^}}pase-opt: error: cannot tell the format of {{.*}}/tiny without an extension; name it .dnn, .mlir or .onnx, or give -f dnn (or mlir, onnx) (see pase-opt --help){{$}}
// NOEXT-NOT:     {{.}}

// GIVEN:         dnn.graph @

// TARGET:        {{^}}pase-opt: error: -t x86-asm prints xDSL's own dialects, not dnn.graph; pase's targets are mlir, dnn, jax (see pase-opt --help){{$}}
// TARGET-NOT:    {{.}}

// Options of -t and -f that do not parse are pase's usage error (they were xDSL's "Error
// parsing pass pipeline specification" in five lines), and so is what follows them
// (xDSL ignored it: -t 'jax{devices=8}}' ran).
// RUN: not pase-opt %S/Inputs/tiny.dnn -t 'jax{devices=8' 2>&1 | filecheck %s --check-prefix=UNCLOSED
// RUN: not pase-opt %S/Inputs/tiny.dnn -t 'jax{devices=8}}' 2>&1 | filecheck %s --check-prefix=AFTER
// RUN: not pase-opt %s -f 'dnn{' 2>&1 | filecheck %s --check-prefix=NONAME

// UNCLOSED:      {{^}}pase-opt: error: -t 'jax{devices=8': malformed options, expected either a space or `}` at column 14 (see pase-opt --help){{$}}
// UNCLOSED-NOT:  {{.}}
// AFTER:         {{^}}pase-opt: error: -t 'jax{devices=8}}': unexpected '}' after the options at column 15 (see pase-opt --help){{$}}
// AFTER-NOT:     {{.}}
// NONAME:        {{^}}pase-opt: error: -f 'dnn{': expected an option's name at column 5 (see pase-opt --help){{$}}
// NONAME-NOT:    {{.}}
