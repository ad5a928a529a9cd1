// A strategy that export= writes reads back with strategy= on the same graph in every form:
// unnamed values (%0), one name taken twice (%h, %h_1), the generic form, and the .dnn
// print (-t dnn), whose value names are the layer names (GraphOp.value_names).
// RUN: pase-opt %s -p 'pase-search{devices=4 export="%t.json"}' -o %t.first.mlir
// RUN: filecheck %s --check-prefix=JSON < %t.json
// RUN: pase-opt %s -p 'pase-search{devices=4 strategy="%t.json"}' -o %t.second.mlir
// RUN: cmp %t.first.mlir %t.second.mlir
// RUN: pase-opt %s --print-op-generic | pase-opt -p 'pase-search{devices=4 strategy="%t.json"}' -o %t.generic.mlir
// RUN: cmp %t.first.mlir %t.generic.mlir
// RUN: pase-opt %s -t dnn -o %t.dnn
// RUN: filecheck %s --check-prefix=DNN < %t.dnn
// RUN: pase-opt %t.dnn -p 'pase-search{devices=4 strategy="%t.json"}' | filecheck %s --check-prefix=PINNED

dnn.graph @g(b = 8, d = 256, e = 1024) {
  %0 = dnn.input : !dnn.tensor<[b = 8, d = 256], f32>
  %1 = dnn.param : !dnn.tensor<[d = 256, e = 1024], f32>
  %h = dnn.einsum %0, %1 : (!dnn.tensor<[b = 8, d = 256], f32>, !dnn.tensor<[d = 256, e = 1024], f32>) -> !dnn.tensor<[b = 8, e = 1024], f32>
  %h_1 = dnn.relu %h : (!dnn.tensor<[b = 8, e = 1024], f32>) -> !dnn.tensor<[b = 8, e = 1024], f32>
  %2 = dnn.reduce sum %h_1 over [b, e] : (!dnn.tensor<[b = 8, e = 1024], f32>) -> !dnn.tensor<[], f32>
  dnn.return %2 : !dnn.tensor<[], f32>
}

// JSON:         "name": "h",
// JSON:         "name": "h_v2",
// JSON:         "name": "reduce4",

// DNN:          graph @g(b = 8, d = 256, e = 1024) {
// DNN-NEXT:       %input0 = input [b, d]
// DNN-NEXT:       %param1 = param [d, e]
// DNN-NEXT:       %h = einsum %input0, %param1 -> [b, e]
// DNN-NEXT:       %h_v2 = relu %h
// DNN-NEXT:       %reduce4 = reduce sum %h_v2 over [b, e]
// DNN-NEXT:       return %reduce4
// DNN-NEXT:     }

// PINNED:       %h = dnn.einsum %input0, %param1 {pase.config = #pase.config<e = 4>}
// PINNED-NEXT:  %h_v2 = dnn.relu %h {pase.config = #pase.config<e = 4>}
// PINNED-NEXT:  %reduce4 = dnn.reduce sum %h_v2 over [b, e] {pase.config = #pase.config<e = 4>}
