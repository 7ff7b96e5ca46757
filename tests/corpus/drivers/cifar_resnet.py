"""kuangliu/pytorch-cifar's ResNet18 (models/resnet.py) trained a few steps on the CPU, seeded,
on tiny random CIFAR-shaped images normalized by torchvision as main.py's transform does, with
main.py's loss and SGD settings; the loss must be finite and fall, the logits (batch, 10). Run
from the repository's root under its environment's Python. models/__init__.py is Python 2's
(``from vgg import *``): the folder goes on sys.path, as Python 2 put it, and resnet is
imported alone."""
from __future__ import print_function

import os
import sys

import torch
import torchvision.transforms as transforms

sys.path.insert(0, os.path.join(os.getcwd(), "models"))
from resnet import ResNet18

BATCH, STEPS = 4, 6

torch.manual_seed(0)
torch.set_num_threads(1)
normalize = transforms.Normalize((0.4914, 0.4822, 0.4465), (0.2023, 0.1994, 0.2010))
images = torch.stack([normalize(torch.rand(3, 32, 32)) for _ in range(BATCH)])
labels = torch.randint(0, 10, (BATCH,), dtype=torch.long)
net = ResNet18()
criterion = torch.nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9, weight_decay=5e-4)
net.train()
losses = []
for _ in range(STEPS):
    optimizer.zero_grad()
    outputs = net(images)
    loss = criterion(outputs, labels)
    loss.backward()
    optimizer.step()
    losses.append(loss.item())

assert all(x == x and abs(x) != float("inf") for x in losses), losses
assert losses[-1] < losses[0], losses
assert tuple(outputs.shape) == (BATCH, 10), outputs.shape
print("ok loss=%.4f (from %.4f, %d steps) logits=%s" % (losses[-1], losses[0], STEPS,
                                                        tuple(outputs.shape)))
