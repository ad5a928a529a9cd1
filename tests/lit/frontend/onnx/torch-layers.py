# Layers PyTorch users export that pase once refused, on the TorchScript fixtures of
# models/export_layers.py (`python models/export_layers.py models/onnx --fixtures`):
# torch.einsum (ONNX Einsum) as dnn.einsum, the keys' axis renamed apart from the
# queries' as MatMul renames it; nn.MultiheadAttention given an attention_mask (1 = keep)
# as its key_padding_mask, `(mask == 0)`, read as `dnn.mask padding`; given the
# key_padding_mask itself (true = padding), one error saying how to export it.
# RUN: pase-opt %S/../../../../models/onnx/einsum.torchscript.onnx -p 'pase-search{devices=8}' | filecheck %s --check-prefix=EINSUM
# RUN: pase-opt %S/../../../../models/onnx/mha_keep.torchscript.onnx | filecheck %s --check-prefix=KEEP
# RUN: not pase-opt %S/../../../../models/onnx/mha_padding.torchscript.onnx 2>&1 | filecheck %s --check-prefix=PADDING

# EINSUM:      %Einsum = dnn.einsum %x, %q {pase.config = #pase.config<{{.*}}>} : (!dnn.tensor<[b = 8, s = 16, d = 32], f32>, !dnn.tensor<[d = 32, d1 = 2, d2 = 16], f32>) -> !dnn.tensor<[b = 8, d1 = 2, s = 16, d2 = 16], f32>
# EINSUM:      %Einsum_3_t = dnn.reshape %Einsum1 {{.*}} -> !dnn.tensor<[b = 8, d1 = 2, t = 16, d2 = 16], f32>
# EINSUM-NEXT: %Einsum3 = dnn.einsum %Einsum, %Einsum_3_t {{.*}} -> !dnn.tensor<[b = 8, d1 = 2, s = 16, t = 16], f32>
# EINSUM-NEXT: %Softmax = dnn.softmax %Einsum3 over [t]
# EINSUM:      %v10 = dnn.einsum %Softmax, %v10_t, %out {pase.config = #pase.config<{{.*}}>} : ({{.*}}, !dnn.tensor<[d1 = 2, d3 = 16, c = 10], f32>) -> !dnn.tensor<[b = 8, s = 16, c = 10], f32>
# EINSUM-NEXT: %loss = dnn.softmax_cross_entropy %v10, %labels over [c]

# KEEP:     %onnx_Equal1 = dnn.input : !dnn.tensor<[d1 = 8, t = 16], i64>
# KEEP:     %attention_Add2 = dnn.mask padding %attention_MatMul1, %onnx_Equal1 over [d1, t] fill -3.3999999521443642e+38
# KEEP-NEXT: %attention_Softmax = dnn.softmax %attention_Add2 over [t]

# PADDING: mha_padding.torchscript.onnx: error: node '/attention/Add_2' (Add): the model's input 'key_padding_mask.1' masks the attention scores where it is true or 1 (as nn.MultiheadAttention's and nn.Transformer's key_padding_mask: true where a key is padding); pase reads a padding mask input as an attention_mask, 1 where a key is kept: export the model with that input and pass `key_padding_mask=(attention_mask == 0)` in its forward
# PADDING-NOT: Traceback
