// RUN: pase-opt %s --split-input-file --verify-diagnostics --allow-unregistered-dialect | filecheck %s
// RUN: not pase-opt %s --split-input-file 2>&1 | filecheck %s --check-prefix=ONE

/// A value of a type that is not the op's says why after xDSL's "does not verify:" (the
/// reason, on xDSL's next line, was dropped: the error ended with the colon).

"dnn.graph"() <{sym_name = "g", dim_names = ["b"], dim_sizes = [#builtin.int<4>]}> ({
  %x = "dnn.input"() : () -> !dnn.tensor<[b = 4], f32>
  %y = "dnn.relu"(%x) : (!dnn.tensor<[b = 4], f32>) -> tensor<4xf32>
  "dnn.return"(%y) : (tensor<4xf32>) -> ()
}) : () -> ()

// CHECK: {{.*}}dnn-invalid-types.mlir:9:3: error: 'dnn.relu' op result 'output' at position 0 does not verify: tensor<4xf32> should be of base attribute dnn.tensor
// ONE:   {{.*}}dnn-invalid-types.mlir:9:3: error: 'dnn.relu' op result 'output' at position 0 does not verify: tensor<4xf32> should be of base attribute dnn.tensor{{$}}
// ONE-NEXT: {{^}}  %y = "dnn.relu"(%x) : (!dnn.tensor<[b = 4], f32>) -> tensor<4xf32>{{$}}
// ONE-NEXT: {{^}}  ^{{$}}
// ONE-NOT:  {{.}}

// -----

/// A type of an unregistered dialect (allowed on the command line) is not a dnn tensor.

"dnn.graph"() <{sym_name = "g", dim_names = ["b"], dim_sizes = [#builtin.int<4>]}> ({
  %x = "dnn.input"() : () -> !foo.bar
  "dnn.return"(%x) : (!foo.bar) -> ()
}) : () -> ()

// CHECK: {{.*}}dnn-invalid-types.mlir:24:3: error: 'dnn.input' op result 'output' at position 0 does not verify: !foo.bar should be of base attribute dnn.tensor
