"""Helpers that ``forward`` reaches and other code also runs directly (#15, fresh14): a
public ``sample_actions`` that ``forward`` delegates to, run as ``policy.sample_actions(...)``
or named in a string (``forward_method_names=("sample_actions",)``), is an entry point of its
own, so ``self.forward(...)`` in it, and in what it reaches, skips the hooks (HS102)."""

from __future__ import annotations

from pathlib import Path

from tests.lint.conftest import expected_codes, found, write_source

CONFIDENT = ("HS101", "HS102", "HS103")

_POLICY = """\
    import torch
    from torch import nn


    class Policy(nn.Module):
        def __init__(self):
            super().__init__()
            self.net = nn.Linear(4, 4)

        def forward(self, x, actions=None):
            if actions is None:
                return self.sample_actions(x)
            return self.net(x) - actions

        def sample_actions(self, x, steps=4):
            actions = torch.zeros_like(x)
            for _ in range(steps):
                actions = actions + self.step(x, actions)
            return actions

        def step(self, x, actions):
            return self.forward(x, actions){mark}
    """


def test_a_helper_run_by_other_code_is_an_entry_point(tmp_path: Path) -> None:
    path = write_source(tmp_path, "policy.py", _POLICY.format(mark="  # HS102"))
    write_source(
        tmp_path,
        "rollout.py",
        """\
        import torch

        from policy import Policy


        def rollout():
            policy = Policy()
            return policy.sample_actions(torch.ones(4))
        """,
    )
    assert found(tmp_path, path, CONFIDENT) == expected_codes(path)
    assert len(expected_codes(path)) == 1


def test_a_helper_named_in_a_string_is_an_entry_point(tmp_path: Path) -> None:
    source = _POLICY.format(mark="  # HS102")
    path = write_source(
        tmp_path, "policy.py", source + '\n\n    EMA_METHODS = ("sample_actions",)\n'
    )
    assert found(tmp_path, path, CONFIDENT) == expected_codes(path)
    assert len(expected_codes(path)) == 1


def test_helpers_only_forward_reaches_stay_exempt(tmp_path: Path) -> None:
    path = write_source(tmp_path, "policy.py", _POLICY.format(mark=""))
    write_source(
        tmp_path,
        "rollout.py",
        """\
        import torch

        from policy import Policy


        class Sampler:
            def sample_actions(self, x):
                return x

            def forward(self, x):
                return x


        def rollout(sampler: Sampler):
            policy = Policy()
            policy.forward(torch.ones(4))  # HS101
            return sampler.sample_actions(torch.ones(4))
        """,
    )
    assert found(tmp_path, path, CONFIDENT) == set()
