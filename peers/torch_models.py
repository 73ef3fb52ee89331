"""The models of tr's registry (framework/graph/models/) in PyTorch, layer for layer.

Each entry: build(width, classes) -> nn.Module, the input (H, W, C), classes,
normalisation, the logit scale and the optimizer tr-bench uses by default.
  mlp       784-1024-512-256-10, ReLU, biases
  cnn       conv3x3(32)+BN+ReLU; 64/128/256: conv+maxpool2+BN+ReLU, conv+BN+ReLU;
            global max pool; linear (no bias) scaled by 1/8
  resnet18  CIFAR ResNet-18: 3x3 stem, basic blocks 64-512 (1x1 conv + BN
            projections where the shape changes), global average pool, linear
  resnet50  ResNet-50 v1.5 (the stride on the bottleneck's 3x3, as torchvision
            and MLPerf): 7x7/2 stem, 3x3/2 max pool, 3/4/6/3 bottlenecks
  vgg16bn   13 conv3x3+BN+ReLU, 5 max pools, 4096-4096 classifier; convolutions
            without bias (each feeds a BN) and no dropout, as in tr
"""
import torch.nn as nn


def scaled(c, width):
    return max(1, round(c * width))


def mlp(width=1.0, classes=10):
    w = [scaled(c, width) for c in (1024, 512, 256)]
    return nn.Sequential(nn.Flatten(), nn.Linear(784, w[0]), nn.ReLU(), nn.Linear(w[0], w[1]), nn.ReLU(),
                         nn.Linear(w[1], w[2]), nn.ReLU(), nn.Linear(w[2], classes))


def cnn(width=1.0, classes=10, channels=1):
    layers = [nn.Conv2d(channels, scaled(32, width), 3, padding=1, bias=False), nn.BatchNorm2d(scaled(32, width)),
              nn.ReLU()]
    cin = scaled(32, width)
    for base in (64, 128, 256):
        c = scaled(base, width)
        layers += [nn.Conv2d(cin, c, 3, padding=1, bias=False), nn.MaxPool2d(2), nn.BatchNorm2d(c), nn.ReLU(),
                   nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c), nn.ReLU()]
        cin = c
    layers += [nn.AdaptiveMaxPool2d(1), nn.Flatten(), nn.Linear(cin, classes, bias=False)]
    return nn.Sequential(*layers)


def conv_bn(cin, cout, k, stride, relu):
    layers = [nn.Conv2d(cin, cout, k, stride=stride, padding=k // 2, bias=False), nn.BatchNorm2d(cout)]
    return nn.Sequential(*(layers + [nn.ReLU()] if relu else layers))


class Residual(nn.Module):
    """relu(main(x) + shortcut(x)), the shortcut a 1x1 conv + BN where the shape changes."""

    def __init__(self, main, cin, cout, stride):
        super().__init__()
        self.main = main
        self.down = conv_bn(cin, cout, 1, stride, False) if stride != 1 or cin != cout else nn.Identity()

    def forward(self, x):
        return (self.main(x) + self.down(x)).relu()


def basic(cin, w, stride):
    return Residual(nn.Sequential(conv_bn(cin, w, 3, stride, True), conv_bn(w, w, 3, 1, False)), cin, w, stride), w


def bottleneck(cin, w, stride):
    main = nn.Sequential(conv_bn(cin, w, 1, 1, True), conv_bn(w, w, 3, stride, True), conv_bn(w, 4 * w, 1, 1, False))
    return Residual(main, cin, 4 * w, stride), 4 * w


def stages(cin, width, blocks, block):
    layers = []
    for s, (base, n) in enumerate(zip((64, 128, 256, 512), blocks)):
        for b in range(n):
            m, cin = block(cin, scaled(base, width), 2 if (b == 0 and s > 0) else 1)
            layers.append(m)
    return layers, cin


def resnet18(width=1.0, classes=10, channels=3):
    stem = scaled(64, width)
    body, cout = stages(stem, width, (2, 2, 2, 2), basic)
    return nn.Sequential(conv_bn(channels, stem, 3, 1, True), *body, nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                         nn.Linear(cout, classes))


def resnet50(width=1.0, classes=1000, channels=3):
    stem = scaled(64, width)
    body, cout = stages(stem, width, (3, 4, 6, 3), bottleneck)
    return nn.Sequential(conv_bn(channels, stem, 7, 2, True), nn.MaxPool2d(3, 2, 1), *body, nn.AdaptiveAvgPool2d(1),
                         nn.Flatten(), nn.Linear(cout, classes))


def vgg16bn(width=1.0, classes=1000, channels=3, side=224):
    layers, cin = [], channels
    for base, n in ((64, 2), (128, 2), (256, 3), (512, 3), (512, 3)):
        for _ in range(n):
            layers.append(conv_bn(cin, scaled(base, width), 3, 1, True))
            cin = scaled(base, width)
        layers.append(nn.MaxPool2d(2))
    flat = cin * (side // 32) ** 2
    hidden = scaled(4096, width)
    return nn.Sequential(*layers, nn.Flatten(), nn.Linear(flat, hidden), nn.ReLU(), nn.Linear(hidden, hidden),
                         nn.ReLU(), nn.Linear(hidden, classes))


CIFAR = ((0.4914, 0.4822, 0.4465), (0.2470, 0.2435, 0.2616))
IMAGENET = ((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))
FMNIST = ((0.2860,), (0.3530,))

# name: (builder, (H, W, C), classes, (mean, std), logit scale, optimizer, default GPU batches)
REGISTRY = {
    "mlp": (lambda w, k, s: mlp(w, k), (28, 28, 1), 10, FMNIST, 1.0, "adamw", [200]),
    "cnn": (lambda w, k, s: cnn(w, k), (28, 28, 1), 10, FMNIST, 0.125, "sgd", [64, 256, 1024, 4096]),
    "resnet18": (lambda w, k, s: resnet18(w, k), (32, 32, 3), 10, CIFAR, 1.0, "sgd", [128, 512, 2048]),
    "resnet50": (lambda w, k, s: resnet50(w, k), (224, 224, 3), 1000, IMAGENET, 1.0, "sgd", [32, 64, 128, 256]),
    "vgg16bn": (lambda w, k, s: vgg16bn(w, k, 3, s), (224, 224, 3), 1000, IMAGENET, 1.0, "sgd", [32, 128]),
}


def build(name, width=1.0, side=None):
    """(model, (H, W, C), classes, (mean, std), logit scale, optimizer) for a registry name."""
    builder, shape, classes, norm, scale, opt, _ = REGISTRY[name]
    if side is not None:
        shape = (side, side, shape[2])
    return builder(width, classes, shape[0]), shape, classes, norm, scale, opt
