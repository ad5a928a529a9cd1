"""The models of models/export_trained.py committed in models/onnx/ (shared by
tests/frontend/test_trained_exports.py, which tests them, and test_torch_exports.py, which
leaves them to it)."""

TRAINED = ("llama", "llama_tied", "mistral", "qwen2", "qwen3", "gemma", "gemma2", "phi3",
           "gpt_neox", "olmo", "llama_loss", "bert_loss", "bart", "whisper", "electra",
           "deberta_v2", "hf_vit", "deit", "clip_vision", "hf_resnet", "cnn_bn",
           "cnn_bn_train", "encoder_batch_first", "encoder_seq_first", "dropout_train",
           "rope_lm")
"""Every model of export_trained.py but `mixtral`, which neither exporter writes
(aten::histc)."""
