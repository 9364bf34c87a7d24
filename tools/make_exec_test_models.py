#!/usr/bin/python3
"""Writes the small models the executor's import tests run (tests/data).

    /usr/bin/python3 tools/make_exec_test_models.py --out tests/data

writes small_cnn.onnx (batch 2, 3 x 16 x 16) and small_cnn_pytorch.json,
the same network traced by tools/export_pytorch.py, and
small_blocks_pytorch.json, the ops of later torchvision families traced
alone: EfficientNet's SiLU, ShuffleNet's channel split and shuffle,
MobileNet-V3's hard swish and hard sigmoid, and a vision transformer's
GELU and attention softmax. The network has one
of each layer torchvision's CNNs are made of (convolutions with and
without bias, strided and grouped, batch norm, ReLU, ReLU6, max and
average pooling, a residual add, a concatenation, global average pooling,
a linear layer) and a gated activation (sigmoid, tanh, mul, sub, div),
small enough that the test suite stays fast. Weights are random: the
executor needs shapes, not values. Run with Debian's python3
(python3-torch, python3-torchvision).
"""
import argparse
import os
import subprocess
import sys

import torch
from torch import nn


class SmallCnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU())
        self.pool = nn.MaxPool2d(3, stride=2, padding=1)
        self.branch = nn.Sequential(nn.Conv2d(8, 8, 3, padding=1, groups=2), nn.BatchNorm2d(8), nn.ReLU6())
        self.side = nn.Conv2d(8, 4, 1)
        self.down = nn.AvgPool2d(2)
        self.fc = nn.Linear(12, 10)

    def forward(self, x):
        x = self.pool(self.stem(x))
        x = x + self.branch(x)
        gate = torch.sigmoid(x) * torch.tanh(x) - x / 2.0
        x = torch.cat([gate, self.side(x)], dim=1)
        x = self.down(x)
        x = torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1)
        return self.fc(x)


class SmallBlocks(nn.Module):
    """SiLU (EfficientNet), a channel split, a concatenation and a channel
    shuffle (ShuffleNet-V2), hard swish and hard sigmoid (MobileNet-V3),
    GELU and a softmax over the last axis (ViT's MLP and attention)."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(8), nn.SiLU())
        self.branch = nn.Sequential(nn.Conv2d(4, 4, 1), nn.SiLU())
        self.gate = nn.Sequential(nn.Conv2d(8, 8, 1), nn.Hardswish(), nn.Conv2d(8, 8, 1), nn.Hardsigmoid())
        self.mlp = nn.Sequential(nn.Linear(8, 8), nn.GELU())
        self.fc = nn.Linear(8, 10)

    def forward(self, x):
        x = self.stem(x)
        keep, work = x.chunk(2, dim=1)
        x = torch.cat([keep, self.branch(work)], dim=1)
        n, c, h, w = x.shape
        x = x.view(n, 2, c // 2, h, w).transpose(1, 2).reshape(n, c, h, w)
        x = x * self.gate(x)
        tokens = self.mlp(x.flatten(2).transpose(1, 2))  # [n, h * w, c]
        attention = torch.softmax(tokens @ tokens.transpose(1, 2), dim=-1)
        return self.fc((attention @ tokens).mean(dim=1))


def make_blocks(batch):
    """For tools/export_pytorch.py (make_model, with DEVPLACE_TEST_MODEL=blocks)."""
    torch.manual_seed(0)
    return SmallBlocks(), (torch.randn(batch, 3, 16, 16),), torch.randint(0, 10, (batch,))


def make_model(batch):
    """For tools/export_pytorch.py."""
    if os.environ.get("DEVPLACE_TEST_MODEL") == "blocks":
        return make_blocks(batch)
    torch.manual_seed(0)
    return SmallCnn(), (torch.randn(batch, 3, 16, 16),), torch.randint(0, 10, (batch,))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    options = parser.parse_args()
    os.makedirs(options.out, exist_ok=True)
    model, inputs, _ = make_model(2)
    model.eval()
    torch.onnx.export(model, inputs, os.path.join(options.out, "small_cnn.onnx"), opset_version=13,
                      training=torch.onnx.TrainingMode.PRESERVE, do_constant_folding=False, input_names=["x"])
    exporter = os.path.join(os.path.dirname(os.path.abspath(__file__)), "export_pytorch.py")
    subprocess.run([sys.executable, exporter, os.path.abspath(__file__), "--batch", "2", "-o",
                    os.path.join(options.out, "small_cnn_pytorch.json")], check=True)
    subprocess.run([sys.executable, exporter, os.path.abspath(__file__), "--batch", "2", "-o",
                    os.path.join(options.out, "small_blocks_pytorch.json")], check=True,
                   env=dict(os.environ, DEVPLACE_TEST_MODEL="blocks"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
