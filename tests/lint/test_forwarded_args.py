"""Arguments forwarded through ``*args`` (#15): ``def run(*args): return helper(*args)``
gives ``helper``'s parameter what the callers of ``run`` pass at that place, in the same
file and from a wrapper in another file; plain objects forwarded stay plain."""

from __future__ import annotations

from pathlib import Path

from tests.lint.conftest import expected_codes, found, write_source

EVERY = ("HS101", "HS102", "HS103", "HS104")


def test_a_module_forwarded_through_args_in_the_same_file(tmp_path: Path) -> None:
    path = write_source(
        tmp_path,
        "steps.py",
        """\
        import torch
        from torch import nn


        def evaluate(model, batch):
            return model.forward(batch)  # HS101


        def timed(*args, **kwargs):
            return evaluate(*args, **kwargs)


        def main():
            return timed(nn.Linear(2, 2), torch.ones(2))
        """,
    )
    assert found(tmp_path, path, EVERY) == expected_codes(path)


def test_a_module_forwarded_by_a_wrapper_in_another_file(tmp_path: Path) -> None:
    path = write_source(
        tmp_path,
        "steps.py",
        """\
        def evaluate(model, batch):
            return model.forward(batch)  # HS101
        """,
    )
    write_source(
        tmp_path,
        "loop.py",
        """\
        import torch
        from torch import nn

        from steps import evaluate


        def logged(name, *args):
            print(name)
            return evaluate(*args)


        def main():
            return logged("eval", nn.Linear(2, 2), torch.ones(2))
        """,
    )
    assert found(tmp_path, path, EVERY) == expected_codes(path)


def test_a_plain_object_forwarded_through_args_stays_plain(tmp_path: Path) -> None:
    path = write_source(
        tmp_path,
        "steps.py",
        """\
        import torch


        class Stage:
            def forward(self, x):
                return x


        def evaluate(model, batch):
            return model.forward(batch)


        def timed(*args):
            return evaluate(*args)


        def main():
            return timed(Stage(), torch.ones(2))
        """,
    )
    assert found(tmp_path, path, EVERY) == set()
