#!/usr/bin/python3
"""PyTorch reference of a small torchvision-style ResNet (stem conv7x7/2 + bn + relu +
maxpool3x3/2, BasicBlocks with 1x1 downsample, global average pooling, fc) in eval mode, with
random weights and random BatchNorm running statistics. Plain torch.nn modules, independent of
Radix; module names are torchvision's, so the state_dict has its names.
  tests/oracle/resnet_ref.py DIR [--widths 4 8 8 8] [--blocks 1 1 1 1] [--classes 5] [--size 24 20]
writes DIR/resnet.safetensors (the state_dict, num_batches_tracked included) and
DIR/resnet_io.safetensors ("input" {2,3,H,W}, "logits" {2,classes})."""
import argparse
import os
import sys

import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402


class BasicBlock(nn.Module):
    def __init__(self, inplanes, planes, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = None
        if stride != 1 or inplanes != planes:
            self.downsample = nn.Sequential(nn.Conv2d(inplanes, planes, 1, stride, bias=False), nn.BatchNorm2d(planes))

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return torch.relu(y + (self.downsample(x) if self.downsample is not None else x))


class ResNet(nn.Module):
    def __init__(self, widths, blocks, classes):
        super().__init__()
        self.conv1 = nn.Conv2d(3, widths[0], 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(widths[0])
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        inplanes = widths[0]
        for i, (w, n) in enumerate(zip(widths, blocks)):
            layers = []
            for j in range(n):
                layers.append(BasicBlock(inplanes, w, 2 if (i > 0 and j == 0) else 1))
                inplanes = w
            setattr(self, "layer%d" % (i + 1), nn.Sequential(*layers))
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(inplanes, classes)
        self.stages = len(widths)

    def forward(self, x):
        x = self.maxpool(torch.relu(self.bn1(self.conv1(x))))
        for i in range(self.stages):
            x = getattr(self, "layer%d" % (i + 1))(x)
        return self.fc(torch.flatten(self.avgpool(x), 1))


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("dir")
    ap.add_argument("--widths", type=int, nargs="+", default=[4, 8, 8, 8])
    ap.add_argument("--blocks", type=int, nargs="+", default=[1, 1, 1, 1])
    ap.add_argument("--classes", type=int, default=5)
    ap.add_argument("--size", type=int, nargs=2, default=[24, 20])
    args = ap.parse_args()
    torch.manual_seed(0)
    model = ResNet(args.widths, args.blocks, args.classes)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.5, 0.5)
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 2.0)
                m.num_batches_tracked.fill_(7)
    model.eval()
    x = torch.randn(2, 3, *args.size)
    with torch.no_grad():
        logits = model(x)
    safetensors_io.write(os.path.join(args.dir, "resnet.safetensors"), model.state_dict())
    safetensors_io.write(os.path.join(args.dir, "resnet_io.safetensors"), {"input": x, "logits": logits})


if __name__ == "__main__":
    main()
