# Layers PyTorch users export that pase once refused, on the TorchScript fixtures of
# models/export_layers.py (`python models/export_layers.py models/onnx --fixtures`):
# torch.einsum (ONNX Einsum) as dnn.einsum, the keys' axis renamed apart from the
# queries' as MatMul renames it; nn.MultiheadAttention given an attention_mask (1 = keep)
# as its key_padding_mask, `(mask == 0)`, read as `dnn.mask padding`; given the
# key_padding_mask itself (true = padding), one error saying how to export it; nn.Conv1d
# and MaxPool1d as 2-D windows of height 1 between two reshapes; an encoder layer exported
# with a symbolic batch (dynamic_axes), read at batch 8 with its shape computations folded.
# RUN: pase-opt %S/../../../../models/onnx/einsum.torchscript.onnx -p 'pase-search{devices=8}' | filecheck %s --check-prefix=EINSUM
# RUN: pase-opt %S/../../../../models/onnx/mha_keep.torchscript.onnx | filecheck %s --check-prefix=KEEP
# RUN: not pase-opt %S/../../../../models/onnx/mha_padding.torchscript.onnx 2>&1 | filecheck %s --check-prefix=PADDING
# RUN: pase-opt %S/../../../../models/onnx/conv1d.torchscript.onnx | filecheck %s --check-prefix=CONV1D
# RUN: pase-opt %S/../../../../models/onnx/encoder_dynamic_batch.torchscript.onnx -f 'onnx{batch=8}' | filecheck %s --check-prefix=BATCH

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

# CONV1D:      %layers_layers_0_Conv_2d = dnn.reshape %input1 : (!dnn.tensor<[b = 8, s = 4, d = 32], f32>) -> !dnn.tensor<[b = 8, s = 4, h = 1, d = 32], f32>
# CONV1D:      %layers_layers_0_Conv_conv = dnn.conv2d %layers_layers_0_Conv_2d, %onnx_Conv_25_2d stride 1 padding [0, 2] : ({{.*}}, !dnn.tensor<[c = 16, s = 4, kh = 1, kw = 5], f32>) -> !dnn.tensor<[b = 8, c = 16, h1 = 1, w = 32], f32>
# CONV1D:      %layers_layers_0_Conv_1d = dnn.reshape %layers_layers_0_Conv_conv {{.*}} -> !dnn.tensor<[b = 8, c = 16, w = 32], f32>
# CONV1D:      %layers_layers_0_Conv = dnn.add %layers_layers_0_Conv_1d, %onnx_Conv26
# CONV1D:      dnn.conv2d {{.*}} stride 2 padding [0, 1] groups 4 : {{.*}} -> !dnn.tensor<[b = 8, c1 = 16, h3 = 1, w1 = 16], f32>
# CONV1D:      dnn.pool2d max {{.*}} window [1, 2] stride 2 padding 0 : {{.*}} -> !dnn.tensor<[b = 8, c1 = 16, h5 = 1, w2 = 8], f32>
# CONV1D:      dnn.conv2d {{.*}} stride 1 padding [0, 1] groups 16 : {{.*}} -> !dnn.tensor<[b = 8, c2 = 16, h7 = 1, w3 = 8], f32>
# CONV1D:      dnn.reduce mean %layers_layers_6_Conv over [w3]

# BATCH:     %x = dnn.input : !dnn.tensor<[b = 8, s = 16, d = 32], f32>
# BATCH:     %layer_self_attn_Softmax = dnn.softmax %layer_self_attn_MatMul1 over [t] : (!dnn.tensor<[d15 = 8, d16 = 2, s = 16, t = 16], f32>)
# BATCH:     dnn.return %loss
