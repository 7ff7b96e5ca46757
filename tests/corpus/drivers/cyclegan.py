"""eriklindernoren/PyTorch-GAN's CycleGAN networks (implementations/cyclegan/models.py): the
ResNet generator trained a few steps on the CPU, seeded, on tiny random images against its
PatchGAN discriminator and an L1 term, as cyclegan.py trains it; the generator's loss must be
finite and fall and both networks' outputs have the shapes the models promise. Run from the
repository's root under its environment's Python (3.7, PyTorch 1.x)."""
from __future__ import print_function

import os
import sys

import torch

sys.path.insert(0, os.path.join(os.getcwd(), "implementations", "cyclegan"))
from models import Discriminator, GeneratorResNet, weights_init_normal

SHAPE, BATCH, STEPS = (3, 32, 32), 2, 8

torch.manual_seed(0)
torch.set_num_threads(1)
generator = GeneratorResNet(SHAPE, num_residual_blocks=2)
discriminator = Discriminator(SHAPE)
generator.apply(weights_init_normal)
discriminator.apply(weights_init_normal)
source = torch.rand((BATCH,) + SHAPE) * 2 - 1
target = torch.rand((BATCH,) + SHAPE) * 2 - 1
valid = torch.ones((BATCH,) + discriminator.output_shape)
optimizer = torch.optim.Adam(generator.parameters(), lr=2e-4, betas=(0.5, 0.999))
losses = []
for _ in range(STEPS):
    optimizer.zero_grad()
    fake = generator(source)
    loss = (torch.nn.functional.mse_loss(discriminator(fake), valid)
            + 10 * torch.nn.functional.l1_loss(fake, target))
    loss.backward()
    optimizer.step()
    losses.append(loss.item())

assert all(x == x and abs(x) != float("inf") for x in losses), losses
assert losses[-1] < losses[0], losses
assert tuple(fake.shape) == (BATCH,) + SHAPE, fake.shape
assert tuple(discriminator(fake).shape) == (BATCH,) + discriminator.output_shape
print("ok loss=%.4f (from %.4f, %d steps) fake=%s" % (losses[-1], losses[0], STEPS,
                                                      tuple(fake.shape)))
