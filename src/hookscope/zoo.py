"""Built-in example models: no downloads, used by the demo, tests and benchmarks.

``resnet50_like`` follows torchvision's ResNet-50 layout (bottleneck blocks
3-4-6-3, widths 64-512, expansion 4) without depending on torchvision.
"""

from __future__ import annotations

import torch
from torch import nn


class SmallCNN(nn.Module):
    """A small image classifier for 3x32x32 inputs.

    With ``plant_bypass=True`` its forward calls ``self.head.forward(x)``
    directly — the classic bug the doctor and the demo find.
    """

    def __init__(self, num_classes: int = 10, *, plant_bypass: bool = False) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1),
            nn.BatchNorm2d(16),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1),
            nn.BatchNorm2d(32),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d(4),
        )
        self.flatten = nn.Flatten()
        self.head = nn.Linear(32 * 4 * 4, num_classes)
        self.plant_bypass = plant_bypass

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.flatten(self.features(x))
        if self.plant_bypass:
            return self.head.forward(x)  # noqa: HS101 -- planted on purpose for the demo
        return self.head(x)


class Bottleneck(nn.Module):
    """ResNet bottleneck block (1x1, 3x3, 1x1 convolutions, expansion 4)."""

    expansion = 4

    def __init__(self, in_channels: int, width: int, stride: int = 1) -> None:
        super().__init__()
        out_channels = width * self.expansion
        self.conv1 = nn.Conv2d(in_channels, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, out_channels, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(out_channels)
        self.relu = nn.ReLU(inplace=True)
        self.downsample: nn.Module | None = None
        if stride != 1 or in_channels != out_channels:
            self.downsample = nn.Sequential(
                nn.Conv2d(in_channels, out_channels, 1, stride=stride, bias=False),
                nn.BatchNorm2d(out_channels),
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return self.relu(out + identity)


class ResNetLike(nn.Module):
    """ResNet with bottleneck blocks; ``layers=(3, 4, 6, 3)`` is ResNet-50's shape."""

    def __init__(
        self, layers: tuple[int, int, int, int] = (3, 4, 6, 3), num_classes: int = 1000
    ) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
        in_channels = 64
        stages = []
        for index, (blocks, width) in enumerate(zip(layers, (64, 128, 256, 512), strict=True)):
            stride = 1 if index == 0 else 2
            stage = []
            for block in range(blocks):
                stage.append(Bottleneck(in_channels, width, stride if block == 0 else 1))
                in_channels = width * Bottleneck.expansion
            stages.append(nn.Sequential(*stage))
        self.layer1, self.layer2, self.layer3, self.layer4 = stages
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(in_channels, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def small_cnn(num_classes: int = 10, plant_bypass: bool = False) -> SmallCNN:
    """Factory for `SmallCNN` (usable as MODEL_SPEC ``hookscope.zoo:small_cnn``)."""
    return SmallCNN(num_classes, plant_bypass=plant_bypass)


def resnet50_like(num_classes: int = 1000) -> ResNetLike:
    """ResNet-50-shaped model (``hookscope.zoo:resnet50_like``), 25.6 M parameters."""
    return ResNetLike((3, 4, 6, 3), num_classes)
