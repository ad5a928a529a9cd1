// `--split-input-file` handles each chunk (split at the marker lines) on its own and joins
// the outputs with the marker; an error names its line in the whole file.
// RUN: pase-opt %s --split-input-file | filecheck %s
// RUN: not pase-opt %s 2>&1 | filecheck %s --check-prefix=WHOLE
// RUN: not pase-opt %S/Inputs/split.mlir --split-input-file 2>&1 | filecheck %s --check-prefix=LOCATED --strict-whitespace
// RUN: not pase-opt %S/Inputs/split.dnn --split-input-file 2>&1 | filecheck %s --check-prefix=LOCATED-DNN --strict-whitespace

dnn.graph @first(b = 4) {
  %x = dnn.input : !dnn.tensor<[b = 4], f32>
  dnn.return %x : !dnn.tensor<[b = 4], f32>
}

// -----

// The same symbol again: fine in a chunk of its own.
dnn.graph @first(b = 8) {
  %x = dnn.input : !dnn.tensor<[b = 8], f32>
  dnn.return %x : !dnn.tensor<[b = 8], f32>
}

// CHECK:      builtin.module {
// CHECK-NEXT:   dnn.graph @first(b = 4) {
// CHECK-NEXT:     %x = dnn.input : !dnn.tensor<[b = 4], f32>
// CHECK-NEXT:     dnn.return %x : !dnn.tensor<[b = 4], f32>
// CHECK-NEXT:   }
// CHECK-NEXT: }
// CHECK-EMPTY:
// CHECK-NEXT: //{{ }}-----
// CHECK-NEXT: builtin.module {
// CHECK-NEXT:   dnn.graph @first(b = 8) {
// CHECK-NEXT:     %x = dnn.input : !dnn.tensor<[b = 8], f32>

// Without the flag, the two graphs of one name meet in one module.
// WHOLE: {{^}}error: 'builtin.module' op Redefinition of symbol "first"{{$}}

// LOCATED:      {{.*}}split.mlir:9:3: error: 'dnn.exp' op exp takes floating-point tensors, got i64
// LOCATED-NEXT: {{^}}  %y = dnn.exp %x : (!dnn.tensor<[b = 4], i64>) -> !dnn.tensor<[b = 4], i64>{{$}}
// LOCATED-NEXT: {{^}}  ^{{$}}

// LOCATED-DNN:      {{.*}}split.dnn:8:13: error: undefined value %q
// LOCATED-DNN-NEXT: {{^}}  %y = relu %q{{$}}
// LOCATED-DNN-NEXT: {{^}}            ^^{{$}}

// Errors a pass reports at an op of a later .dnn chunk also name the line in the whole file.
// RUN: not pase-opt %S/Inputs/split-pinned.dnn --split-input-file -p 'pase-search{devices=4}' 2>&1 | filecheck %s --check-prefix=PINNED --strict-whitespace
// PINNED:      {{^}}{{.*}}split-pinned.dnn:9:8: error: layer 'y' is pinned to 16 devices but only 4 are available{{$}}
// PINNED-NEXT: {{^}}  %y = einsum %x, %w -> [b, h] config {h = 16}{{$}}
// PINNED-NEXT: {{^}}       ^{{$}}

// A chunk with no graph (after a trailing marker) is an empty module, as for MLIR input.
// RUN: pase-opt %S/Inputs/trailing-marker.dnn --split-input-file | filecheck %s --check-prefix=TRAILING
// TRAILING:      dnn.graph @a
// TRAILING:      // -----
// TRAILING-NEXT: builtin.module {
// TRAILING-NEXT: }
