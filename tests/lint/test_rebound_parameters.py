"""A parameter rebound from itself (#15, fresh14): ``net = net.cuda()`` in a function whose
callers all pass modules keeps ``net`` a module; the ``net`` on the right side is the
parameter, so what the callers pass decides."""

from __future__ import annotations

from pathlib import Path

from tests.lint.conftest import expected_codes, found, write_source

CONFIDENT = ("HS101", "HS102", "HS103")


def test_a_parameter_moved_to_the_gpu_is_what_the_script_passes(tmp_path: Path) -> None:
    attack = write_source(
        tmp_path,
        "attack.py",
        """\
        import torch


        def fool(image, net, steps=3):
            if torch.cuda.is_available():
                net = net.cuda()
            out = net.forward(image)  # HS101
            for _ in range(steps):
                out = net.forward(image + out)  # HS101
            return out
        """,
    )
    write_source(
        tmp_path,
        "run_attack.py",
        """\
        import torch
        from torch import nn

        from attack import fool



        def main():
            net = nn.Linear(2, 2)
            net.eval()
            print(fool(torch.ones(2), net))


        if __name__ == "__main__":
            main()
        """,
    )
    assert found(tmp_path, attack, CONFIDENT) == expected_codes(attack)
    assert found(tmp_path, attack, ("HS104",)) == set()


def test_a_plain_object_rebound_from_itself_stays_plain(tmp_path: Path) -> None:
    scoring = write_source(
        tmp_path,
        "scoring.py",
        """\
        import torch


        def score(image, net):
            if torch.cuda.is_available():
                net = net.cuda()
            return net.forward(image)
        """,
    )
    write_source(
        tmp_path,
        "run_scoring.py",
        """\
        import torch

        from scoring import score


        class Scorer:
            def cuda(self):
                return self

            def forward(self, x):
                return x + 1


        print(score(torch.ones(2), Scorer()))
        """,
    )
    assert found(tmp_path, scoring, ("HS101", "HS102", "HS103", "HS104")) == set()
