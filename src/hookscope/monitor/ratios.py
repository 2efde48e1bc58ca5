"""Update ratios ‖Δw‖/‖w‖ per parameter between steps (``Monitor(update_ratio=True)``)."""

from __future__ import annotations

import torch
from torch import nn

from hookscope import shards
from hookscope.stats import Reduction


class UpdateRatios:
    """Keeps one copy of the trainable parameters, taken at the steps before recorded ones."""

    def __init__(self, model: nn.Module) -> None:
        self.model = model
        self._previous: dict[str, torch.Tensor] | None = None

    def take(self, *, snapshot: bool) -> list[tuple[str, Reduction]]:
        """The ratio of each parameter since the last snapshot; a new snapshot if ``snapshot``.

        Each ratio is a 0-d device tensor in ``Reduction.sum`` (fetched with
        the step's other values).
        """
        ratios = []
        params = [
            (n, shards.local_tensor(p.detach()))
            for n, p in self.model.named_parameters()
            if p.requires_grad
        ]
        if self._previous is not None:
            for name, param in params:
                before = self._previous.get(name)
                if param is not None and before is not None and before.shape == param.shape:
                    red = Reduction("float", 1)
                    delta = torch.linalg.vector_norm(param - before)
                    red.sum = delta / torch.linalg.vector_norm(param)
                    ratios.append((name, red))
        self._previous = {n: p.clone() for n, p in params if p is not None} if snapshot else None
        return ratios
