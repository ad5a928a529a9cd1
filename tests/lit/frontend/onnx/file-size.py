# The .onnx file itself is read within the import's memory budget (-f 'onnx{memory-gib=G}',
# default 4): a file past it, or past protobuf's 2 GiB that no ONNX model exceeds, is
# refused before it is read (a 3 GiB sparse file here), and a stream is read no further
# than the budget (/dev/zero was read until memory ran out).
# RUN: rm -f %t.onnx && truncate -s 3G %t.onnx
# RUN: not pase-opt %t.onnx -f 'onnx{memory-gib=8}' 2>&1 | filecheck %s --check-prefix=PROTOBUF
# RUN: not pase-opt %t.onnx -f 'onnx{memory-gib=1}' 2>&1 | filecheck %s --check-prefix=FILE
# RUN: not pase-opt /dev/zero -f 'onnx{memory-gib=0.01}' 2>&1 | filecheck %s --check-prefix=STREAM
# RUN: rm -f %t.onnx

# PROTOBUF: file-size.py.tmp.onnx: error: the file is over 2 GiB, more than an ONNX model holds (protobuf's limit); its weights belong in external data (torch.onnx.export writes them to FILE.onnx.data)
# FILE: file-size.py.tmp.onnx: error: the model's file takes 3,221,225,472 bytes, over the import's memory budget of 1,073,741,824 bytes; raise it with -f 'onnx{memory-gib=G}' (pase-run: --memory-gib G)
# STREAM: /dev/zero: error: the model's input (read up to the budget) takes 10,737,419 bytes, over the import's memory budget of 10,737,418 bytes
