"""Where a traced forward row reads from: a ReLU's input, a BatchNorm's input and parts.

Reading a tensor inside a compiled graph makes inductor store it. A ReLU's
output and a BatchNorm's are otherwise never stored on the CPU (the next
pooling loop recomputes them), so `hookscope.monitor.traced` takes their
rows from the inputs these helpers find, where that gives the same row.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from torch.nn.modules import module as _module

__all__ = ["NORMS", "Affine", "hooks_alone", "norm_parts", "relu_input"]


def relu_input(module: nn.Module | None, args: tuple[Any, ...], output: Any) -> torch.Tensor | None:
    """The input of an out-of-place ``nn.ReLU`` whose output is ``relu(input)``, else None.

    Only float32 (the one dtype `hookscope.stats.rowop.relu_row_values` reads
    in one pass); an in-place ReLU's input is its output.
    """
    if type(module) is not nn.ReLU or module.inplace or len(args) != 1:
        return None
    x = args[0]
    if not isinstance(x, torch.Tensor) or not isinstance(output, torch.Tensor):
        return None
    return x if x.dtype == torch.float32 and x.shape == output.shape else None


#: A BatchNorm's output as its input and per-channel parts: ``(x, mean, scale, bias)``,
#: the output being ``(x - mean) * scale + bias`` along dim 1.
Affine = tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]
NORMS = (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d)


def norm_parts(module: nn.Module | None, args: tuple[Any, ...], output: Any) -> Affine | None:
    """A float32 BatchNorm's output as `Affine` parts of its input, else None.

    The mean and variance are the batch's (``var_mean`` over every dim but 1,
    as BatchNorm computes them: inductor merges the two) in training mode,
    the running ones otherwise. Reading the input, which the backward keeps
    anyway, instead of the output lets inductor keep BatchNorm → ReLU →
    pooling in one kernel without storing the BatchNorm output.
    """
    if type(module) not in NORMS or len(args) != 1:
        return None
    assert isinstance(module, nn.modules.batchnorm._BatchNorm)
    if not hooks_alone(module):
        return None
    x = args[0]
    if not isinstance(x, torch.Tensor) or not isinstance(output, torch.Tensor):
        return None
    if x.dtype != torch.float32 or x.dim() < 2 or x.shape != output.shape:
        return None
    x = x.detach()
    if module.training or module.running_mean is None or module.running_var is None:
        dims = [d for d in range(x.dim()) if d != 1]
        var, mean = torch.var_mean(x, dim=dims, correction=0)
    else:
        mean, var = module.running_mean, module.running_var
    scale = torch.rsqrt(var + module.eps)
    if module.weight is not None:
        scale = scale * module.weight.detach()
    bias = torch.zeros_like(mean) if module.bias is None else module.bias.detach()
    return x, mean, scale, bias


def hooks_alone(module: nn.Module) -> bool:
    """Whether the module has no hooks but the Monitor's (a pre-hook and a forward hook).

    Another hook could change the output, or a ReLU's input in place, so that
    a row made from the BatchNorm's input would no longer be the one eager
    mode reads.
    """
    return (
        len(module._forward_hooks) <= 1
        and len(module._forward_pre_hooks) <= 1
        and not (_module._global_forward_hooks or _module._global_forward_pre_hooks)
    )
