"""Fifty-odd small models built here (no downloads, no torchvision), for the summary benchmark.

torchvision-style CNNs (ResNet basic and bottleneck, VGG, MobileNetV2/V3,
EfficientNet, ShuffleNetV2, SqueezeNet, DenseNet, Inception, RegNet,
ConvNeXt, U-Net) on 1x3x64x64 images, and transformer blocks (ViT, BERT-
and GPT-style stacks with ``scaled_dot_product_attention``, MLP-Mixer) on
64x64 images or 1x32 token ids. Each entry: name, factory, input size and
input dtype.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

Entry = tuple[str, Callable[[], nn.Module], tuple[int, ...], torch.dtype]
IMAGE = (1, 3, 64, 64)
TOKENS = (1, 32)


def conv_bn(cin: int, cout: int, k: int = 3, s: int = 1, g: int = 1, act: bool = True) -> nn.Module:
    layers: list[nn.Module] = [nn.Conv2d(cin, cout, k, s, k // 2, groups=g, bias=False)]
    layers.append(nn.BatchNorm2d(cout))
    if act:
        layers.append(nn.ReLU(inplace=True))
    return nn.Sequential(*layers)


class Basic(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.a = conv_bn(cin, cout, 3, stride)
        self.b = conv_bn(cout, cout, 3, 1, act=False)
        self.down = conv_bn(cin, cout, 1, stride, act=False) if stride > 1 or cin != cout else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        skip = x if self.down is None else self.down(x)
        return F.relu(self.b(self.a(x)) + skip)


class Bottleneck(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        mid = cout // 4
        self.a = conv_bn(cin, mid, 1)
        self.b = conv_bn(mid, mid, 3, stride)
        self.c = conv_bn(mid, cout, 1, act=False)
        self.down = conv_bn(cin, cout, 1, stride, act=False) if stride > 1 or cin != cout else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        skip = x if self.down is None else self.down(x)
        return F.relu(self.c(self.b(self.a(x))) + skip)


def resnet(
    block: type[nn.Module], depths: tuple[int, ...], width: int, expand: int = 1
) -> nn.Module:
    layers: list[nn.Module] = [conv_bn(3, width, 7, 2), nn.MaxPool2d(3, 2, 1)]
    cin = width
    for i, depth in enumerate(depths):
        cout = width * (2**i) * expand
        for j in range(depth):
            layers.append(block(cin, cout, 2 if j == 0 and i > 0 else 1))
            cin = cout
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, 10)]
    return nn.Sequential(*layers)


def vgg(cfg: list[int | str], bn: bool) -> nn.Module:
    layers: list[nn.Module] = []
    cin = 3
    for v in cfg:
        if v == "M":
            layers.append(nn.MaxPool2d(2))
            continue
        assert isinstance(v, int)
        layers += [nn.Conv2d(cin, v, 3, padding=1)] + ([nn.BatchNorm2d(v)] if bn else [])
        layers.append(nn.ReLU(inplace=True))
        cin = v
    layers += [nn.AdaptiveAvgPool2d(2), nn.Flatten(), nn.Linear(cin * 4, 64), nn.ReLU()]
    return nn.Sequential(*layers, nn.Dropout(), nn.Linear(64, 10))


class SE(nn.Module):
    def __init__(self, c: int, act: type[nn.Module] = nn.ReLU) -> None:
        super().__init__()
        self.fc1, self.fc2, self.act = (
            nn.Conv2d(c, max(c // 4, 4), 1),
            nn.Conv2d(max(c // 4, 4), c, 1),
            act(),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.sigmoid(self.fc2(self.act(self.fc1(x.mean((2, 3), keepdim=True)))))


class InvertedResidual(nn.Module):
    def __init__(
        self, cin: int, cout: int, stride: int, expand: int, se: bool, act: type[nn.Module]
    ) -> None:
        super().__init__()
        mid = cin * expand
        layers: list[nn.Module] = []
        if expand != 1:
            layers += [nn.Conv2d(cin, mid, 1, bias=False), nn.BatchNorm2d(mid), act()]
        layers += [
            nn.Conv2d(mid, mid, 3, stride, 1, groups=mid, bias=False),
            nn.BatchNorm2d(mid),
            act(),
        ]
        if se:
            layers.append(SE(mid))
        layers += [nn.Conv2d(mid, cout, 1, bias=False), nn.BatchNorm2d(cout)]
        self.body = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.body(x)
        return x + y if self.residual else y


def mobilenet(mult: float, se: bool = False, act: type[nn.Module] = nn.ReLU6) -> nn.Module:
    plan = [
        (1, 16, 1, 1),
        (6, 24, 2, 2),
        (6, 32, 3, 2),
        (6, 64, 2, 2),
        (6, 96, 2, 1),
        (6, 160, 2, 2),
    ]
    cin = max(int(32 * mult), 8)
    layers: list[nn.Module] = [nn.Conv2d(3, cin, 3, 2, 1, bias=False), nn.BatchNorm2d(cin), act()]
    for expand, c, n, s in plan:
        cout = max(int(c * mult), 8)
        for i in range(n):
            layers.append(InvertedResidual(cin, cout, s if i == 0 else 1, expand, se, act))
            cin = cout
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, 10)]
    return nn.Sequential(*layers)


class Fire(nn.Module):
    def __init__(self, cin: int, squeeze: int, expand: int) -> None:
        super().__init__()
        self.s = nn.Conv2d(cin, squeeze, 1)
        self.e1, self.e3 = nn.Conv2d(squeeze, expand, 1), nn.Conv2d(squeeze, expand, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s = F.relu(self.s(x))
        return torch.cat([F.relu(self.e1(s)), F.relu(self.e3(s))], 1)


def squeezenet(width: int) -> nn.Module:
    w = width
    return nn.Sequential(
        nn.Conv2d(3, 2 * w, 3, 2), nn.ReLU(), nn.MaxPool2d(3, 2, ceil_mode=True),
        Fire(2 * w, w // 4, w), Fire(2 * w, w // 4, w), nn.MaxPool2d(3, 2, ceil_mode=True),
        Fire(2 * w, w // 2, 2 * w), Fire(4 * w, w // 2, 2 * w),
        nn.Conv2d(4 * w, 10, 1), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
    )  # fmt: skip


class Shuffle(nn.Module):
    def __init__(self, c: int, stride: int) -> None:
        super().__init__()
        half = c // 2
        self.stride = stride
        cin = c if stride > 1 else half
        self.branch = nn.Sequential(
            conv_bn(cin, half, 1),
            conv_bn(half, half, 3, stride, half, act=False),
            conv_bn(half, half, 1),
        )
        self.side = (
            nn.Sequential(conv_bn(c, c, 3, stride, c, act=False), conv_bn(c, half, 1))
            if stride > 1
            else None
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.side is None:
            a, b = x.chunk(2, dim=1)
            out = torch.cat([a, self.branch(b)], 1)
        else:
            out = torch.cat([self.side(x), self.branch(x)], 1)
        n, c, h, w = out.shape
        return out.view(n, 2, c // 2, h, w).transpose(1, 2).reshape(n, c, h, w)


def shufflenet(width: int) -> nn.Module:
    layers: list[nn.Module] = [conv_bn(3, width, 3, 2)]
    for _ in range(3):
        layers += [Shuffle(width, 2) if False else Shuffle(width, 1), Shuffle(width, 1)]
        layers.append(Shuffle(width, 2))
        width *= 2
        layers[-1] = nn.Sequential(conv_bn(width // 2, width, 1), nn.MaxPool2d(2))
    return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(width, 10))


class Dense(nn.Module):
    def __init__(self, cin: int, growth: int, layers: int) -> None:
        super().__init__()
        self.layers = nn.ModuleList(
            nn.Sequential(
                nn.BatchNorm2d(cin + i * growth),
                nn.ReLU(),
                nn.Conv2d(cin + i * growth, growth, 3, padding=1),
            )
            for i in range(layers)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = torch.cat([x, layer(x)], 1)
        return x


def densenet(growth: int, blocks: tuple[int, ...]) -> nn.Module:
    c = 2 * growth
    layers: list[nn.Module] = [nn.Conv2d(3, c, 3, 2, 1)]
    for n in blocks:
        layers.append(Dense(c, growth, n))
        c += n * growth
        layers += [nn.BatchNorm2d(c), nn.Conv2d(c, c // 2, 1), nn.AvgPool2d(2)]
        c //= 2
    return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(c, 10))


class Inception(nn.Module):
    def __init__(self, cin: int, c: int) -> None:
        super().__init__()
        self.b1 = conv_bn(cin, c, 1)
        self.b2 = nn.Sequential(conv_bn(cin, c // 2, 1), conv_bn(c // 2, c, 3))
        self.b3 = nn.Sequential(conv_bn(cin, c // 4, 1), conv_bn(c // 4, c // 2, 5))
        self.b4 = nn.Sequential(nn.MaxPool2d(3, 1, 1), conv_bn(cin, c // 2, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat([self.b1(x), self.b2(x), self.b3(x), self.b4(x)], 1)


def inception(c: int, blocks: int) -> nn.Module:
    layers: list[nn.Module] = [conv_bn(3, c, 3, 2)]
    cin = c
    for _ in range(blocks):
        layers += [Inception(cin, c), nn.MaxPool2d(2)]
        cin = 3 * c
    return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, 10))


def regnet(width: int, group: int, depths: tuple[int, ...]) -> nn.Module:
    layers: list[nn.Module] = [conv_bn(3, width, 3, 2)]
    cin = width
    for i, depth in enumerate(depths):
        cout = width * 2 ** (i + 1)
        for j in range(depth):
            stride = 2 if j == 0 else 1
            layers.append(
                nn.Sequential(
                    conv_bn(cin, cout, 1),
                    conv_bn(cout, cout, 3, stride, cout // group),
                    conv_bn(cout, cout, 1),
                )
            )
            cin = cout
    return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, 10))


class ConvNeXtBlock(nn.Module):
    def __init__(self, c: int) -> None:
        super().__init__()
        self.dw = nn.Conv2d(c, c, 7, padding=3, groups=c)
        self.norm, self.fc1, self.fc2 = nn.LayerNorm(c), nn.Linear(c, 4 * c), nn.Linear(4 * c, c)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.norm(self.dw(x).permute(0, 2, 3, 1))
        return x + self.fc2(F.gelu(self.fc1(y))).permute(0, 3, 1, 2)


def convnext(c: int, depths: tuple[int, ...]) -> nn.Module:
    layers: list[nn.Module] = [nn.Conv2d(3, c, 4, 4)]
    for i, depth in enumerate(depths):
        if i:
            layers.append(nn.Conv2d(c, 2 * c, 2, 2))
            c *= 2
        layers += [ConvNeXtBlock(c) for _ in range(depth)]
    return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(c, 10))


class UNet(nn.Module):
    def __init__(self, c: int) -> None:
        super().__init__()
        self.d1, self.d2 = conv_bn(3, c), conv_bn(c, 2 * c, 3, 2)
        self.mid = conv_bn(2 * c, 2 * c)
        self.up = nn.ConvTranspose2d(2 * c, c, 2, 2)
        self.out = nn.Conv2d(2 * c, 2, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a = self.d1(x)
        return self.out(torch.cat([a, self.up(self.mid(self.d2(a)))], 1))


class Attention(nn.Module):
    def __init__(self, d: int, heads: int, causal: bool) -> None:
        super().__init__()
        self.qkv, self.proj, self.heads, self.causal = (
            nn.Linear(d, 3 * d),
            nn.Linear(d, d),
            heads,
            causal,
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, d = x.shape
        q, k, v = self.qkv(x).view(b, n, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=self.causal)
        return self.proj(y.transpose(1, 2).reshape(b, n, d))


class Block(nn.Module):
    def __init__(self, d: int, heads: int, causal: bool = False) -> None:
        super().__init__()
        self.n1, self.attn, self.n2 = nn.LayerNorm(d), Attention(d, heads, causal), nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.n1(x))
        return x + self.mlp(self.n2(x))


class ViT(nn.Module):
    def __init__(self, d: int, depth: int, heads: int, patch: int = 8) -> None:
        super().__init__()
        self.patch = nn.Conv2d(3, d, patch, patch)
        self.cls = nn.Parameter(torch.zeros(1, 1, d))
        self.pos = nn.Parameter(torch.zeros(1, (64 // patch) ** 2 + 1, d))
        self.blocks = nn.Sequential(*[Block(d, heads) for _ in range(depth)])
        self.norm, self.head = nn.LayerNorm(d), nn.Linear(d, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.patch(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], 1) + self.pos
        return self.head(self.norm(self.blocks(x))[:, 0])


class TextModel(nn.Module):
    """BERT-style (bidirectional) or GPT-style (causal) stack over token ids."""

    def __init__(self, d: int, depth: int, heads: int, causal: bool, vocab: int = 1000) -> None:
        super().__init__()
        self.embed, self.pos = nn.Embedding(vocab, d), nn.Embedding(TOKENS[1], d)
        self.blocks = nn.ModuleList(Block(d, heads, causal) for _ in range(depth))
        self.norm, self.head = nn.LayerNorm(d), nn.Linear(d, vocab if causal else 2)
        self.causal = causal

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.embed(ids) + self.pos(torch.arange(ids.shape[1], device=ids.device))
        for block in self.blocks:
            x = block(x)
        x = self.norm(x)
        return self.head(x if self.causal else x[:, 0])


class Mixer(nn.Module):
    def __init__(self, d: int, depth: int, patch: int = 8) -> None:
        super().__init__()
        tokens = (64 // patch) ** 2
        self.patch = nn.Conv2d(3, d, patch, patch)
        self.layers = nn.ModuleList(
            nn.ModuleDict(
                {
                    "n1": nn.LayerNorm(d),
                    "tok": nn.Sequential(
                        nn.Linear(tokens, 2 * tokens), nn.GELU(), nn.Linear(2 * tokens, tokens)
                    ),
                    "n2": nn.LayerNorm(d),
                    "ch": nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d)),
                }
            )
            for _ in range(depth)
        )
        self.head = nn.Linear(d, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.patch(x).flatten(2).transpose(1, 2)
        for layer in self.layers:
            x = x + layer["tok"](layer["n1"](x).transpose(1, 2)).transpose(1, 2)
            x = x + layer["ch"](layer["n2"](x))
        return self.head(x.mean(1))


def _image(name: str, factory: Callable[[], nn.Module]) -> Entry:
    return name, factory, IMAGE, torch.float32


def _text(name: str, factory: Callable[[], nn.Module]) -> Entry:
    return name, factory, TOKENS, torch.long


VGG_A: list[int | str] = [16, "M", 32, "M", 64, 64, "M", 128, 128, "M", 128, 128, "M"]
VGG_D: list[int | str] = [
    16,
    16,
    "M",
    32,
    32,
    "M",
    64,
    64,
    64,
    "M",
    128,
    128,
    128,
    "M",
    128,
    128,
    128,
    "M",
]

MODELS: list[Entry] = [
    *(_image(f"resnet_basic_{d}_{w}", lambda d=d, w=w: resnet(Basic, d, w))
      for d in ((1, 1, 1, 1), (2, 2, 2, 2), (3, 4, 6, 3)) for w in (16, 32)),
    *(_image(f"resnet_bottleneck_{d}_{w}", lambda d=d, w=w: resnet(Bottleneck, d, w, 4))
      for d in ((1, 1, 1, 1), (2, 2, 2, 2), (3, 4, 6, 3)) for w in (8, 16)),
    *(_image(f"vgg_{n}_{'bn' if bn else 'plain'}", lambda c=c, bn=bn: vgg(c, bn))
      for n, c in (("a", VGG_A), ("d", VGG_D)) for bn in (False, True)),
    *(_image(f"mobilenet_v2_{m}", lambda m=m: mobilenet(m)) for m in (0.25, 0.35, 0.5, 0.75)),
    *(_image(f"mobilenet_v3ish_{m}", lambda m=m: mobilenet(m, True, nn.Hardswish)) for m in (0.35, 0.5)),
    *(_image(f"efficientnetish_{m}", lambda m=m: mobilenet(m, True, nn.SiLU)) for m in (0.25, 0.5, 0.75)),
    *(_image(f"squeezenet_{w}", lambda w=w: squeezenet(w)) for w in (32, 64)),
    *(_image(f"shufflenetish_{w}", lambda w=w: shufflenet(w)) for w in (16, 24)),
    *(_image(f"densenet_{g}", lambda g=g: densenet(g, (2, 3, 4))) for g in (8, 12)),
    *(_image(f"inception_{c}", lambda c=c: inception(c, 3)) for c in (16, 32)),
    *(_image(f"regnetish_{w}_{g}", lambda w=w, g=g: regnet(w, g, (1, 2, 2))) for w, g in ((8, 8), (16, 8))),
    *(_image(f"convnext_{c}", lambda c=c: convnext(c, (1, 1, 3, 1))) for c in (16, 32)),
    *(_image(f"unet_{c}", lambda c=c: UNet(c)) for c in (8, 16)),
    *(_image(f"vit_{d}_{n}", lambda d=d, n=n: ViT(d, n, 4)) for d in (64, 128) for n in (2, 4)),
    *(_image(f"mixer_{d}", lambda d=d: Mixer(d, 4)) for d in (64, 128)),
    *(_text(f"bert_{d}_{n}", lambda d=d, n=n: TextModel(d, n, 4, False)) for d, n in ((64, 2), (128, 4), (256, 2))),
    *(_text(f"gpt_{d}_{n}", lambda d=d, n=n: TextModel(d, n, 4, True)) for d, n in ((64, 2), (128, 4), (256, 2))),
]  # fmt: skip
