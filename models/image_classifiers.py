"""The image classifiers models/generate.py writes: InceptionV3 (torchvision's layout, the
PaSE benchmark) and ResNet-101, on an ImageNet batch of 128 with a 1000-class head.
Value names follow torchvision's module paths, each index tagged with a letter
(graph_builder.py says why).
"""

from __future__ import annotations

from pase.models.graph_builder import (
    BATCH,
    CHANNELS,
    CLASSES,
    Graph,
    Kernel,
    Padding,
)

# --- the image classifiers' batch and head --------------------------------------------


def image_batch(g: Graph, size: int) -> tuple[str, str, str, str]:
    """An ImageNet batch of 128 (size x size, 3 channels, 1000 classes): the batch dim, the
    image input, the class dim and the labels input."""
    batch = g.dim("b", 128, BATCH)
    image = g.input("image", [batch, g.channels(3), *g.spatial(size)])
    classes = g.dim("k", 1000, CLASSES)
    labels = g.input("labels", [batch], "i32")
    return batch, image, classes, labels


def classifier(g: Graph, x: str, batch: str, classes: str, labels: str) -> None:
    """The CNNs' head: global average pool, fully connected, cross-entropy loss (returned)."""
    g.blank()
    g.comment("classifier: global average pool, fully connected")
    _, channels, height, _ = g.shape(x)
    x = g.pool2d("avgpool", "avg", x, g.size(height))
    features = g.dim("f", g.size(channels), CLASSES)
    x = g.reshape("flat", x, [batch, features])
    w = g.param("fc_w", [features, classes])
    logits = g.einsum("logits", [x, w], [batch, classes])
    g.ret(g.cross_entropy("loss", logits, labels, classes))


# --- InceptionV3 ----------------------------------------------------------------------


def basic_conv(g: Graph, name: str, x: str, out_channels: int, kernel: Kernel,
               stride: int = 1, padding: Padding = 0) -> str:
    """torchvision's BasicConv2d: conv (no bias), batch norm, relu. `kernel` and
    `padding` are one number or (height, width): a 1x7 conv is kernel (1, 7),
    padding (0, 3)."""
    batch, in_channels, _, _ = g.shape(x)
    out = g.channels(out_channels, avoid=in_channels)
    w = g.param(f"{name}_w", [out, in_channels, *g.filter(kernel)])
    y = g.conv2d(f"{name}_conv", x, w, stride, padding)
    _, _, height, width = g.shape(y)
    y = g.norm(f"{name}_bn", "batchnorm", y, [batch, height, width])
    return g.relu(name, y)


def inception_a(g: Graph, name: str, x: str, pool_features: int) -> str:
    g.comment(f"{name}: InceptionA, pool features {pool_features}")
    b1 = basic_conv(g, f"{name}_1x1", x, 64, 1)
    b5 = basic_conv(g, f"{name}_5x5_c1", x, 48, 1)
    b5 = basic_conv(g, f"{name}_5x5_c2", b5, 64, 5, padding=2)
    b3 = basic_conv(g, f"{name}_3x3dbl_c1", x, 64, 1)
    b3 = basic_conv(g, f"{name}_3x3dbl_c2", b3, 96, 3, padding=1)
    b3 = basic_conv(g, f"{name}_3x3dbl_c3", b3, 96, 3, padding=1)
    bp = g.pool2d(f"{name}_pool", "avg", x, 3, stride=1, padding=1)
    bp = basic_conv(g, f"{name}_pool_1x1", bp, pool_features, 1)
    return g.concat(name, [b1, b5, b3, bp], axis=1)


def inception_b(g: Graph, name: str, x: str) -> str:
    g.comment(f"{name}: InceptionB, grid reduction")
    b3 = basic_conv(g, f"{name}_3x3", x, 384, 3, stride=2)
    bd = basic_conv(g, f"{name}_3x3dbl_c1", x, 64, 1)
    bd = basic_conv(g, f"{name}_3x3dbl_c2", bd, 96, 3, padding=1)
    bd = basic_conv(g, f"{name}_3x3dbl_c3", bd, 96, 3, stride=2)
    bp = g.pool2d(f"{name}_pool", "max", x, 3, stride=2)
    return g.concat(name, [b3, bd, bp], axis=1)


# torchvision's factorized convs: (kernel, padding) as (height, width), keeping the map size.
ONE_BY_SEVEN = {"kernel": (1, 7), "padding": (0, 3)}
SEVEN_BY_ONE = {"kernel": (7, 1), "padding": (3, 0)}
ONE_BY_THREE = {"kernel": (1, 3), "padding": (0, 1)}
THREE_BY_ONE = {"kernel": (3, 1), "padding": (1, 0)}


def inception_c(g: Graph, name: str, x: str, channels_7x7: int) -> str:
    g.comment(f"{name}: InceptionC, channels_7x7 {channels_7x7}")
    c7 = channels_7x7
    b1 = basic_conv(g, f"{name}_1x1", x, 192, 1)
    b7 = basic_conv(g, f"{name}_7x7_c1", x, c7, 1)
    b7 = basic_conv(g, f"{name}_7x7_c2", b7, c7, **ONE_BY_SEVEN)
    b7 = basic_conv(g, f"{name}_7x7_c3", b7, 192, **SEVEN_BY_ONE)
    bd = basic_conv(g, f"{name}_7x7dbl_c1", x, c7, 1)
    bd = basic_conv(g, f"{name}_7x7dbl_c2", bd, c7, **SEVEN_BY_ONE)
    bd = basic_conv(g, f"{name}_7x7dbl_c3", bd, c7, **ONE_BY_SEVEN)
    bd = basic_conv(g, f"{name}_7x7dbl_c4", bd, c7, **SEVEN_BY_ONE)
    bd = basic_conv(g, f"{name}_7x7dbl_c5", bd, 192, **ONE_BY_SEVEN)
    bp = g.pool2d(f"{name}_pool", "avg", x, 3, stride=1, padding=1)
    bp = basic_conv(g, f"{name}_pool_1x1", bp, 192, 1)
    return g.concat(name, [b1, b7, bd, bp], axis=1)


def inception_d(g: Graph, name: str, x: str) -> str:
    g.comment(f"{name}: InceptionD, grid reduction")
    b3 = basic_conv(g, f"{name}_3x3_c1", x, 192, 1)
    b3 = basic_conv(g, f"{name}_3x3_c2", b3, 320, 3, stride=2)
    b7 = basic_conv(g, f"{name}_7x7x3_c1", x, 192, 1)
    b7 = basic_conv(g, f"{name}_7x7x3_c2", b7, 192, **ONE_BY_SEVEN)
    b7 = basic_conv(g, f"{name}_7x7x3_c3", b7, 192, **SEVEN_BY_ONE)
    b7 = basic_conv(g, f"{name}_7x7x3_c4", b7, 192, 3, stride=2)
    bp = g.pool2d(f"{name}_pool", "max", x, 3, stride=2)
    return g.concat(name, [b3, b7, bp], axis=1)


def inception_e(g: Graph, name: str, x: str) -> str:
    g.comment(f"{name}: InceptionE")
    b1 = basic_conv(g, f"{name}_1x1", x, 320, 1)
    b3 = basic_conv(g, f"{name}_3x3_c1", x, 384, 1)
    b3 = g.concat(f"{name}_3x3", [basic_conv(g, f"{name}_3x3_c2a", b3, 384, **ONE_BY_THREE),
                                  basic_conv(g, f"{name}_3x3_c2b", b3, 384, **THREE_BY_ONE)], 1)
    bd = basic_conv(g, f"{name}_3x3dbl_c1", x, 448, 1)
    bd = basic_conv(g, f"{name}_3x3dbl_c2", bd, 384, 3, padding=1)
    bd = g.concat(f"{name}_3x3dbl",
                  [basic_conv(g, f"{name}_3x3dbl_c3a", bd, 384, **ONE_BY_THREE),
                   basic_conv(g, f"{name}_3x3dbl_c3b", bd, 384, **THREE_BY_ONE)], 1)
    bp = g.pool2d(f"{name}_pool", "avg", x, 3, stride=1, padding=1)
    bp = basic_conv(g, f"{name}_pool_1x1", bp, 192, 1)
    return g.concat(name, [b1, b3, bd, bp], axis=1)


def inception_v3() -> Graph:
    g = Graph("inception_v3", [
        "InceptionV3 (Szegedy et al. 2016) in torchvision's layout, a PaSE benchmark: batch 128,",
        "3x299x299 images, 1000 classes, without the auxiliary classifier and dropout. Every",
        "conv is torchvision's BasicConv2d: conv (no bias), batch norm (no scale or bias, to",
        "keep the file short) and relu. Value names follow torchvision's modules, with a",
        "branch's conv index tagged c (Mixed_5b.branch5x5_2 is %m5b_5x5_c2), as a name may",
        "not end in _<number>. The factorized convs are torchvision's: a 1x7 filter is",
        "[co, ci, r1, s7] with padding [0, 3], a 7x1 filter [co, ci, r7, s1] with padding",
        "[3, 0], and likewise 1x3 and 3x1 with padding [0, 1] and [1, 0].",
    ])
    batch, image, classes, labels = image_batch(g, 299)

    g.blank()
    g.comment("stem: 299x299 -> 35x35")
    x = basic_conv(g, "conv1a", image, 32, 3, stride=2)
    x = basic_conv(g, "conv2a", x, 32, 3)
    x = basic_conv(g, "conv2b", x, 64, 3, padding=1)
    x = g.pool2d("maxpool1", "max", x, 3, stride=2)
    x = basic_conv(g, "conv3b", x, 80, 1)
    x = basic_conv(g, "conv4a", x, 192, 3)
    x = g.pool2d("maxpool2", "max", x, 3, stride=2)

    for name, pool_features in (("m5b", 32), ("m5c", 64), ("m5d", 64)):
        g.blank()
        x = inception_a(g, name, x, pool_features)
    g.blank()
    x = inception_b(g, "m6a", x)
    for name, channels_7x7 in (("m6b", 128), ("m6c", 160), ("m6d", 160), ("m6e", 192)):
        g.blank()
        x = inception_c(g, name, x, channels_7x7)
    g.blank()
    x = inception_d(g, "m7a", x)
    for name in ("m7b", "m7c"):
        g.blank()
        x = inception_e(g, name, x)

    classifier(g, x, batch, classes, labels)
    return g


# --- ResNet-101 -----------------------------------------------------------------------


def conv_bn(g: Graph, name: str, bn_name: str, x: str, out_channels: str, kernel: int,
            stride: int = 1, padding: int = 0) -> str:
    """A conv without bias and a batch norm with scale and bias."""
    batch, in_channels, _, _ = g.shape(x)
    w = g.param(f"{name}_w", [out_channels, in_channels, *g.filter(kernel)])
    y = g.conv2d(name, x, w, stride, padding)
    scale = g.param(f"{bn_name}_scale", [out_channels])
    bias = g.param(f"{bn_name}_bias", [out_channels])
    _, _, height, width = g.shape(y)
    return g.norm(bn_name, "batchnorm", y, [batch, height, width], (scale, bias))


def bottleneck(g: Graph, name: str, x: str, width: int, stride: int) -> str:
    """torchvision's Bottleneck (ResNet v1.5: the stride is in the 3x3 conv)."""
    reduced = g.dim(f"m{width}", width, CHANNELS)
    middle = g.dim(f"n{width}", width, CHANNELS)
    expanded = g.channels(4 * width)
    y = conv_bn(g, f"{name}_conv1", f"{name}_bn1", x, reduced, 1)
    y = g.relu(f"{name}_relu1", y)
    y = conv_bn(g, f"{name}_conv2", f"{name}_bn2", y, middle, 3, stride, padding=1)
    y = g.relu(f"{name}_relu2", y)
    y = conv_bn(g, f"{name}_conv3", f"{name}_bn3", y, expanded, 1)
    shortcut = x
    if g.shape(x)[1] != expanded:
        shortcut = conv_bn(g, f"{name}_downsample_conv", f"{name}_downsample_bn", x,
                           expanded, 1, stride)
    y = g.add(f"{name}_add", y, shortcut)
    return g.relu(name, y)


def resnet101() -> Graph:
    g = Graph("resnet101", [
        "ResNet-101 (He et al. 2016) in torchvision's layout (v1.5: stride 2 in the 3x3 conv",
        "of a stage's first block): batch 128, 3x224x224 images, 1000 classes. Every conv is",
        "followed by batch norm with scale and bias. Channel dims: c<n> is a stem or block",
        "output, m<n> and n<n> the two inner widths of a bottleneck. Value names follow",
        "torchvision's modules, with the block index tagged b (layer3[5].conv2 is",
        "%layer3_b5_conv2), as a name may not end in _<number>.",
    ])
    batch, image, classes, labels = image_batch(g, 224)

    g.blank()
    g.comment("stem: 224x224 -> 56x56")
    x = conv_bn(g, "conv1", "bn1", image, g.channels(64), 7, stride=2, padding=3)
    x = g.relu("relu", x)
    x = g.pool2d("maxpool", "max", x, 3, stride=2, padding=1)

    stages = ((64, 3, 1), (128, 4, 2), (256, 23, 2), (512, 3, 2))
    for stage, (width, blocks, stride) in enumerate(stages, start=1):
        for block in range(blocks):
            g.blank()
            if block == 0:
                g.comment(f"layer{stage}: {blocks} bottlenecks of width {width}")
            x = bottleneck(g, f"layer{stage}_b{block}", x, width, stride if block == 0 else 1)

    classifier(g, x, batch, classes, labels)
    return g
