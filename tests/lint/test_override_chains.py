"""Override chains handed modules through a factory (#15): ``self.discLoss,
self.contentLoss = init_loss(opt)`` where the factory builds one of several classes of an
override chain in branches, called as ``self.discLoss.get_loss(self.netD, ...)`` from a
file that imports only the factory; the overrides reach the base through unbound calls
(``DiscLoss.get_loss(self, net, ...)``). A plain discriminator there gives no finding."""

from __future__ import annotations

from pathlib import Path

from tests.lint.conftest import expected_codes, found, write_source

CONFIDENT = ("HS101", "HS102", "HS103")

_LOSSES = """\
import torch
import torch.nn as nn


class ContentLoss:
    def __init__(self, loss):
        self.criterion = loss

    def get_loss(self, fakeIm, realIm):
        return self.criterion(fakeIm, realIm)


class PerceptualLoss:
    def __init__(self, loss):
        self.criterion = loss

    def get_loss(self, fakeIm, realIm):
        return self.criterion(fakeIm, realIm)


class DiscLoss:
    def __init__(self, opt):
        self.opt = opt

    def get_loss(self, net, fake, real):
        pred_fake = net.forward(fake.detach())  # HS101
        pred_real = net.forward(real)  # HS101
        return pred_fake - pred_real


class DiscLossLS(DiscLoss):
    def get_loss(self, net, fake, real):
        return DiscLoss.get_loss(self, net, fake, real)


class DiscLossWGANGP(DiscLossLS):
    def penalty(self, netD, data):
        return netD.forward(data)  # HS101

    def get_loss(self, net, fake, real):
        d_fake = net.forward(fake.detach())  # HS101
        return d_fake + self.penalty(net, real)


def init_loss(opt):
    if opt.model == "content":
        content_loss = PerceptualLoss(nn.MSELoss())
    else:
        content_loss = ContentLoss(nn.L1Loss())
    if opt.gan == "wgan-gp":
        disc_loss = DiscLossWGANGP(opt)
    elif opt.gan == "lsgan":
        disc_loss = DiscLossLS(opt)
    else:
        disc_loss = DiscLoss(opt)
    return disc_loss, content_loss
"""

_GAN_MODEL = """\
import torch
from torch import nn

from .losses import init_loss


class Discriminator(nn.Module):
    def forward(self, x):
        return x


class GANModel:
    def __init__(self, opt):
        self.netD = Discriminator()
        self.discLoss, self.contentLoss = init_loss(opt)

    def backward_D(self, fake, real):
        self.loss_D = self.discLoss.get_loss(self.netD, fake, real)
        self.loss_C = self.contentLoss.get_loss(fake, real)
"""


def test_an_override_chain_built_by_a_factory(tmp_path: Path) -> None:
    write_source(tmp_path, "models/__init__.py", "")
    losses = write_source(tmp_path, "models/losses.py", _LOSSES)
    write_source(tmp_path, "models/gan_model.py", _GAN_MODEL)
    assert found(tmp_path, losses, CONFIDENT) == expected_codes(losses)
    assert len(expected_codes(losses)) == 4


def test_the_same_chain_handed_a_plain_object(tmp_path: Path) -> None:
    write_source(tmp_path, "models/__init__.py", "")
    losses = write_source(tmp_path, "models/losses.py", _LOSSES)
    plain = _GAN_MODEL.replace("class Discriminator(nn.Module):", "class Discriminator:")
    write_source(tmp_path, "models/gan_model.py", plain)
    assert found(tmp_path, losses, CONFIDENT) == set()


def test_a_receiver_of_other_classes_does_not_run_the_method(tmp_path: Path) -> None:
    # ``self.contentLoss`` is a ContentLoss or a PerceptualLoss: its ``get_loss`` calls
    # run neither DiscLoss's nor its overrides, so they say nothing of ``net``; with the
    # discriminator call gone, nothing is left to say it.
    write_source(tmp_path, "models/__init__.py", "")
    losses = write_source(tmp_path, "models/losses.py", _LOSSES)
    only_content = _GAN_MODEL.replace(
        "        self.loss_D = self.discLoss.get_loss(self.netD, fake, real)\n", ""
    )
    write_source(tmp_path, "models/gan_model.py", only_content)
    assert found(tmp_path, losses, CONFIDENT) == set()
