"""Parameters whose callers say what they are (#15): ``Any``-annotated and keyword-only
parameters, constructor arguments, and helpers called only from other project files."""

from __future__ import annotations

from pathlib import Path

from hookscope.lint import lint
from tests.lint.conftest import expected_codes, found, write_source

CONFIDENT = ("HS101", "HS102", "HS103")


def _alone(path: Path) -> set[tuple[int, str]]:
    """The findings of ``path`` linted on its own (the pre-commit hook's way)."""
    return {(f.line, f.code) for f in lint(path, select=list(CONFIDENT), config=False)}


def test_constructor_arguments_and_any_annotations(tmp_path: Path) -> None:
    path = write_source(
        tmp_path,
        "gate.py",
        """\
        from typing import Any

        import torch
        from torch import nn


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(2, 2)

            def build(self) -> nn.Module:
                return nn.Linear(2, 2)


        class Gate:
            def __init__(self, classifier: Any, scale):
                self._classifier = classifier
                self.scale = classifier.forward(scale)  # HS101

            def __call__(self, x):
                return self._classifier.forward(x)  # HS101


        class Mixed:
            def __init__(self, scorer: Any):
                self._scorer = scorer

            def __call__(self, x):
                return self._scorer.forward(x)


        class Scorer:
            def forward(self, x):
                return x


        def main():
            net = Net()
            Gate(net.fc, 2)
            Gate(net.build(), 3)
            Mixed(net.fc)
            Mixed(Scorer())
        """,
    )
    assert found(tmp_path, path, CONFIDENT) == expected_codes(path)


def test_keyword_only_parameters_and_defaults_of_none(tmp_path: Path) -> None:
    path = write_source(
        tmp_path,
        "drive.py",
        """\
        import torch
        from torch import nn


        def drive(x, *, model):
            return model.forward(x)  # HS101


        def maybe(x, *, model=None):
            return model.forward(x)


        def score(x, lpips_model=None):
            if lpips_model is not None:
                return lpips_model.forward(x)  # HS101
            return x


        def rate(x, rater=None):
            return rater.forward(x) if rater is not None else x


        class Rater:
            def forward(self, x):
                return x


        def main():
            drive(1, model=nn.Linear(2, 2))
            maybe(1)
            score(1)
            score(1, None)
            score(1, lpips_model=nn.Linear(2, 2))
            rate(1)
            rate(1, nn.ReLU())
            rate(1, Rater())
        """,
    )
    assert found(tmp_path, path, CONFIDENT) == expected_codes(path)


def test_helpers_called_from_other_files(tmp_path: Path) -> None:
    helpers = write_source(
        tmp_path,
        "pkg/helpers.py",
        """\
        import torch


        def compare(eager_model, compiled_model, x):
            a = eager_model.forward(x)  # HS101
            return a, compiled_model.forward(x)  # HS101


        def evaluate(scorer, x):
            return scorer.forward(x)


        def handed_on(model, x):
            return model.forward(x)


        class Wrapper:
            def __init__(self, inner):
                self.inner = inner

            def run(self, x):
                return self.inner.forward(x)  # HS101
        """,
    )
    write_source(tmp_path, "pkg/__init__.py", "")
    write_source(
        tmp_path,
        "tests/test_one.py",
        """\
        from torch import nn

        from pkg.helpers import (  # the helpers under test
            Wrapper,
            compare,
            evaluate,
            handed_on,
        )


        class Plain:
            def forward(self, x):
                return x


        def test_compare():
            compare(nn.Linear(2, 2), nn.Linear(2, 2), 1)
            Wrapper(nn.ReLU()).run(1)
            evaluate(Plain(), 1)
            run_later(handed_on)
        """,
    )
    write_source(
        tmp_path,
        "tests/test_two.py",
        """\
        from torch import nn

        from pkg import helpers as h


        def test_again():
            h.compare(nn.Linear(2, 2), nn.Linear(2, 2), 1)
            h.evaluate(nn.ReLU(), 1)
        """,
    )
    assert found(tmp_path, helpers, CONFIDENT) == expected_codes(helpers)
    assert _alone(helpers) == expected_codes(helpers)


def test_call_parameters_from_the_calls_of_instances(tmp_path: Path) -> None:
    wrappers = write_source(
        tmp_path,
        "pkg/wrappers.py",
        """\
        import torch


        class Direction:
            def __call__(self, module):
                raise NotImplementedError


        class MeanDirection(Direction):
            def __call__(self, module):
                return module.forward(torch.zeros(2))  # HS101


        class Mitigator:
            def __call__(self, module, inputs, outputs):
                return module.forward(inputs)


        class Scorer:
            def __call__(self, scored):
                return scored.forward(1)


        class Plain:
            def forward(self, x):
                return x


        def check(scorer: Scorer, mitigator: Mitigator, layer: torch.nn.Linear):
            mitigator(layer, 1, 2)
            scorer(layer)
            scorer(Plain())
        """,
    )
    write_source(tmp_path, "pkg/__init__.py", "")
    write_source(
        tmp_path,
        "pkg/apply.py",
        """\
        from torch import nn

        from pkg.wrappers import Direction


        class Applicator:
            def __init__(self, direction: Direction, layer: nn.Embedding):
                self.direction = direction
                self.found = self.direction(layer)
        """,
    )
    assert found(tmp_path, wrappers, CONFIDENT) == expected_codes(wrappers)
    assert _alone(wrappers) == expected_codes(wrappers)


def test_method_parameters_from_calls_in_files_deriving_from_the_class(tmp_path: Path) -> None:
    base = write_source(
        tmp_path,
        "tests/base.py",
        """\
        import unittest

        import torch


        class EncoderTestBase(unittest.TestCase):
            def set_up_encoder(self, encoder):
                self.encoder = encoder

            def run_encoder(self, x):
                return self.encoder.forward(x)  # HS101

            def set_up_scorer(self, scorer):
                self.scorer = scorer

            def run_scorer(self, x):
                return self.scorer.forward(x)
        """,
    )
    write_source(tmp_path, "tests/__init__.py", "")
    write_source(
        tmp_path,
        "tests/test_conv.py",
        """\
        from torch import nn

        from tests.base import EncoderTestBase


        class Plain:
            def forward(self, x):
                return x


        class ConvEncoderTest(EncoderTestBase):
            def setUp(self):
                self.set_up_encoder(nn.Conv1d(2, 2, 1))
                self.set_up_scorer(nn.ReLU())

            def test_plain(self):
                self.set_up_scorer(Plain())
        """,
    )
    assert found(tmp_path, base, CONFIDENT) == expected_codes(base)
    assert _alone(base) == expected_codes(base)


def test_callers_elsewhere_when_this_file_only_mentions_the_name(tmp_path: Path) -> None:
    probes = write_source(
        tmp_path,
        "pkg/probes.py",
        """\
        import torch


        def check(model, x):
            \"\"\"check a model: call check(model, x) from a test.\"\"\"
            return model.forward(x)  # HS101


        def handed(model, x):
            return model.forward(x)


        class Probe:
            def __call__(self, layer):
                return layer.forward(1)  # HS101


        CALLBACKS = [handed]
        """,
    )
    write_source(tmp_path, "pkg/__init__.py", "")
    write_source(
        tmp_path,
        "tests/test_probes.py",
        """\
        from torch import nn

        from pkg.probes import Probe, check, handed


        def test_probe():
            probe = Probe()
            probe(nn.ReLU())
            check(nn.ReLU(), 1)
            handed(nn.ReLU(), 1)
        """,
    )
    assert found(tmp_path, probes, CONFIDENT) == expected_codes(probes)
    assert _alone(probes) == expected_codes(probes)


def test_attributes_of_modules_passed_to_a_parameter_called_forward(tmp_path: Path) -> None:
    path = write_source(
        tmp_path,
        "passing_attrs.py",
        """\
        import torch
        from torch import nn
        from extlib import load_program


        def run_encoder(encoder, x):
            return encoder.forward(x)  # HS101


        def run_program(program, x):
            return program.forward(x)


        def run_other(thing, x):
            return thing.forward(x)


        class Model(nn.Module):
            def __init__(self, make):
                super().__init__()
                self.enc = make()
                self.program = load_program("p")

            def forward(self, x):
                run_program(self.program, x)
                return run_encoder(self.enc, x)


        class Holder:
            def __init__(self, make):
                self.enc = make()

            def go(self, x):
                return run_other(self.enc, x)
        """,
    )
    assert found(tmp_path, path, CONFIDENT) == expected_codes(path)
