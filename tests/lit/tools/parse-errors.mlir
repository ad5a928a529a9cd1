// The MLIR parser's errors, where pase-opt places them better than xDSL does.
// RUN: not pase-opt %s 2>&1 | filecheck %s --strict-whitespace
// RUN: pase-opt %S/Inputs/comments-only.mlir | filecheck %s --check-prefix=EMPTY

// An undefined value is reported at its first use, not at the end of the input.
dnn.graph @g(b = 4) {
  %x = dnn.input : !dnn.tensor<[b = 4], f32>
  %y = dnn.relu %z : (!dnn.tensor<[b = 4], f32>) -> !dnn.tensor<[b = 4], f32>
  dnn.return %y : !dnn.tensor<[b = 4], f32>
}
// CHECK:      {{^}}{{.*}}parse-errors.mlir:8:17: error: use of undefined value %z{{$}}
// CHECK-NEXT: {{^}}  %y = dnn.relu %z : (!dnn.tensor<[b = 4], f32>) -> !dnn.tensor<[b = 4], f32>{{$}}
// CHECK-NEXT: {{^}}                ^^{{$}}

// An attribute xDSL rejects as it builds it is an error at its text (issue 35: it was
// "error: Integer value 300 is out of range ..." with no place), also inside an array.
// RUN: sed -n 's|^// RANGE-INPUT: ||p' %s | not pase-opt 2>&1 | filecheck %s --check-prefix=RANGE --strict-whitespace
// RUN: sed -n 's|^// ARRAY-INPUT: ||p' %s | not pase-opt 2>&1 | filecheck %s --check-prefix=ARRAY --strict-whitespace
// RANGE-INPUT: // a module's attribute
// RANGE-INPUT: builtin.module attributes {x = 300 : i8} {
// RANGE-INPUT: }
// RANGE:      {{^}}stdin:2:32: error: Integer value 300 is out of range for type i8 which supports values in the range [-128, 256){{$}}
// RANGE-NEXT: {{^}}builtin.module attributes {x = 300 : i8} {{{$}}
// RANGE-NEXT: {{^}}                               ^^^^^^^^{{$}}
// ARRAY-INPUT: builtin.module {
// ARRAY-INPUT:   "test.op"() {y = [1, -129 : i8  ]} : () -> ()
// ARRAY-INPUT: }
// ARRAY:      {{^}}stdin:2:24: error: Integer value -129 is out of range for type i8 which supports values in the range [-128, 256){{$}}
// ARRAY-NEXT: {{^}}  "test.op"() {y = [1, -129 : i8  ]} : () -> (){{$}}
// ARRAY-NEXT: {{^}}                       ^^^^^^^^^{{$}}

// A number whose type does not fit it is an error at the number and its type, not at the
// token after them (xDSL's place: here the next line's "}").
// RUN: sed -n 's|^// TYPE-INPUT: ||p' %s | not pase-opt 2>&1 | filecheck %s --check-prefix=TYPE --strict-whitespace
// TYPE-INPUT: "test.op"() {x = 7 : (i32) -> i32
// TYPE-INPUT: } : () -> ()
// TYPE:      {{^}}stdin:1:18: error: Invalid type given for integer or float attribute.{{$}}
// TYPE-NEXT: {{^}}"test.op"() {x = 7 : (i32) -> i32{{$}}
// TYPE-NEXT: {{^}}                 ^^^^^^^^^^^^^^^^{{$}}

// A file of comments only is an empty module, as in mlir-opt.
// EMPTY:      builtin.module {
// EMPTY-NEXT: }
