dnn.graph @fine(b = 4) {
  %x = dnn.input : !dnn.tensor<[b = 4], f32>
  dnn.return %x : !dnn.tensor<[b = 4], f32>
}
// -----
// line 6
dnn.graph @broken(b = 4) {
  %x = dnn.input : !dnn.tensor<[b = 4], i64>
  %y = dnn.exp %x : (!dnn.tensor<[b = 4], i64>) -> !dnn.tensor<[b = 4], i64>
  dnn.return %y : !dnn.tensor<[b = 4], i64>
}
