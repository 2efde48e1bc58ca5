"""A module's own ``__call__`` that returns ``self.forward(...)`` replaces
``Module.__call__``, so every call of the module skips its hooks (#15, fresh11)."""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from tests.lint.conftest import expected_codes, findings_of, found, write_source

CONFIDENT = ("HS101", "HS102", "HS103")


def test_own_call_returning_forward_is_a_bypass(tmp_path: Path) -> None:
    path = write_source(
        tmp_path,
        "layers.py",
        """\
        import torch
        from torch import nn


        class MeshLayer(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = nn.Conv2d(2, 2, 1)

            def __call__(self, x, mesh):
                return self.forward(x, mesh)  # HS102

            def forward(self, x, mesh):
                return self.conv(x)


        class Agent(nn.Module):
            def __call__(self, workspace, **kwargs):
                self.workspace = workspace
                self._run(**kwargs)

            def _run(self, **kwargs):
                return self.forward(**kwargs)  # HS102

            def forward(self, **kwargs):
                return kwargs


        class Traced(nn.Module):
            def __call__(self, x):
                if torch.jit.is_tracing():
                    return self.forward(x)
                return super().__call__(x)

            def forward(self, x):
                return x


        class Explicit(nn.Module):
            def __call__(self, x):
                if x is None:
                    return self.forward(x)  # HS102
                return nn.Module.__call__(self, x)

            def forward(self, x):
                return x


        class Plain:
            def __call__(self, x):
                return self.forward(x)

            def forward(self, x):
                return x
        """,
    )
    assert found(tmp_path, path, CONFIDENT) == expected_codes(path)
    # ``self(...)`` inside ``__call__`` would recurse: no fix is offered.
    assert all(not f.fixable for f in findings_of(tmp_path, path, CONFIDENT))


def test_own_call_example_really_skips_hooks() -> None:
    """The shape flagged above does skip a registered forward hook."""

    class MeshLayer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(2, 2)

        def __call__(self, x):  # type: ignore[override]
            return self.forward(x)

        def forward(self, x):  # type: ignore[override]
            return self.fc(x)

    layer, seen = MeshLayer(), []
    layer.register_forward_hook(lambda m, i, o: seen.append(m))
    layer(torch.zeros(1, 2))
    assert seen == []  # Module.__call__ never ran
    layer.fc(torch.zeros(1, 2))
    nn.Module.__call__(layer, torch.zeros(1, 2))
    assert seen == [layer]
