"""Models handed to plain trainer, evaluator and metric code (#15, fresh11): a static
method's parameter given modules by its callers, an argument the caller itself uses as a
module, an attribute left ``None`` by a base and built by its subclasses; and classes of
``torch.legacy`` (the Lua-torch port), which are not modules."""

from __future__ import annotations

from pathlib import Path

from tests.lint.conftest import expected_codes, found, write_source

CONFIDENT = ("HS101", "HS102", "HS103")


def test_static_method_parameters_from_the_callers_in_other_files(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("", encoding="utf-8")
    base = write_source(
        tmp_path,
        "pkg/base.py",
        """\
        import torch


        class Instructor:
            @staticmethod
            def eval_dis(model, loader):
                with torch.no_grad():
                    return [model.forward(x) for x in loader]  # HS101

            @staticmethod
            def score(scorer, loader):
                return [scorer.forward(x) for x in loader]
        """,
    )
    write_source(
        tmp_path,
        "pkg/gan.py",
        """\
        from torch import nn

        from pkg.base import Instructor


        class Disc(nn.Module):
            def forward(self, x):
                return x


        class Scorer:
            def forward(self, x):
                return x


        class GanInstructor(Instructor):
            def __init__(self):
                self.dis = Disc()

            def run(self, loader):
                Instructor.score(Scorer(), loader)
                return self.eval_dis(self.dis, loader)
        """,
    )
    assert found(tmp_path, base, CONFIDENT) == expected_codes(base)


def test_argument_the_caller_uses_as_a_module(tmp_path: Path) -> None:
    path = write_source(
        tmp_path,
        "trainer.py",
        """\
        import torch


        class Trainer:
            def __init__(self, structure):
                self.structure = structure

            def train(self, batches):
                model = self.structure.build()
                optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
                for batch in batches:
                    self.train_step(model, optimizer, batch)

            def train_step(self, model, optimizer, batch):
                return model.forward(batch)  # HS101

            def report(self, batches):
                stepper = self.structure.stepper()
                stepper.reset()
                for batch in batches:
                    self.report_step(stepper, batch)

            def report_step(self, stepper, batch):
                return stepper.forward(batch)
        """,
    )
    assert found(tmp_path, path, CONFIDENT) == expected_codes(path)


def test_attribute_left_none_by_the_base_and_built_by_subclasses(tmp_path: Path) -> None:
    path = write_source(
        tmp_path,
        "instructors.py",
        """\
        from torch import nn


        class Classifier(nn.Module):
            def forward(self, x):
                return x


        class Meter:
            def forward(self, x):
                return x


        class Base:
            def __init__(self):
                self.clas = None
                self.meter = None

            def evaluate(self, x):
                return self.clas.forward(x)  # HS101

            def measure(self, x):
                return self.meter.forward(x)


        class Sentiment(Base):
            def __init__(self):
                super().__init__()
                self.clas = Classifier()
                self.meter = Meter()


        class Category(Base):
            def __init__(self):
                super().__init__()
                self.clas = Classifier()
        """,
    )
    assert found(tmp_path, path, CONFIDENT) == expected_codes(path)


def test_torch_legacy_classes_are_not_modules(tmp_path: Path) -> None:
    path = write_source(
        tmp_path,
        "lrn.py",
        """\
        import torch
        from torch.legacy.nn import SpatialCrossMapLRN as LegacyLRN
        from torch.nn import Module


        class LRNFunction(torch.autograd.Function):
            def forward(self, x):
                self.lrn = LegacyLRN(5)
                return self.lrn.forward(x)


        class SpatialCrossMapLRN(Module):
            def __init__(self):
                super().__init__()
                self.inner = SpatialCrossMapLRN2()

            def forward(self, x):
                return self.inner.forward(x)  # HS101


        class SpatialCrossMapLRN2(Module):
            def forward(self, x):
                return x
        """,
    )
    assert found(tmp_path, path, CONFIDENT) == expected_codes(path)


def test_callers_in_files_that_only_override_or_mention_the_method(tmp_path: Path) -> None:
    """A subclass file that only overrides the method (``def eval_dis``), and a docstring
    that names it, neither call nor hand it on: the other calls still decide."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("", encoding="utf-8")
    base = write_source(
        tmp_path,
        "pkg/base.py",
        '''\
        import torch


        class Instructor:
            """Call ``eval_dis`` after each epoch."""

            @staticmethod
            def eval_dis(model, loader):
                return [model.forward(x) for x in loader]  # HS101

            @staticmethod
            def eval_plain(helper, loader):
                return [helper.forward(x) for x in loader]
        ''',
    )
    write_source(
        tmp_path,
        "pkg/gan.py",
        """\
        from torch import nn

        from pkg.base import Instructor


        class Disc(nn.Module):
            def forward(self, x):
                return x


        class GanInstructor(Instructor):
            def __init__(self):
                self.dis = Disc()

            def run(self, loader):
                return self.eval_dis(self.dis, loader)
        """,
    )
    write_source(
        tmp_path,
        "pkg/other.py",
        """\
        from pkg.base import Instructor


        class OwnEval(Instructor):
            def eval_dis(self, model, pos, neg):
                return pos

            def eval_plain(self, helper, loader):
                return loader

            def run(self, helper, loader):
                handed = self.eval_plain
                return handed(helper, loader)
        """,
    )
    assert found(tmp_path, base, CONFIDENT) == expected_codes(base)


def test_alias_of_a_name_used_as_a_module(tmp_path: Path) -> None:
    path = write_source(
        tmp_path,
        "extract.py",
        """\
        import torch


        def encoder(name, build, loader):
            model = build(name)
            model.eval()
            if name == "simclr":
                _model = model
                model = lambda x: _model.forward(x)[0]  # HS101
            elif name == "dino":
                _model = model
                model = lambda x: _model.forward(x)  # HS101
            return model


        def scorer(name, build):
            metric = build(name)
            metric.reset()
            _metric = metric
            return lambda x: _metric.forward(x)
        """,
    )
    assert found(tmp_path, path, CONFIDENT) == expected_codes(path)


def test_function_imported_but_unused_in_a_file(tmp_path: Path) -> None:
    """A file importing the function and naming it only in a comment neither calls nor
    hands it on; a file handing it on as a callback still stops the look-up."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("", encoding="utf-8")
    apis = write_source(
        tmp_path,
        "pkg/apis.py",
        """\
        import torch


        def infer(model, x):
            with torch.no_grad():
                return model.forward(x)  # HS101


        def score(model, x):
            return model.forward(x)
        """,
    )
    write_source(
        tmp_path,
        "pkg/demo.py",
        """\
        from torch import nn

        from pkg.apis import infer, score


        def main(x):
            net = nn.Linear(2, 2)
            infer(net, x)
            return score(net, x)
        """,
    )
    write_source(
        tmp_path,
        "pkg/old.py",
        """\
        from pkg.apis import infer, score


        def run(pool, items):
            # result = infer(model, image)
            return pool.map(score, items)
        """,
    )
    assert found(tmp_path, apis, CONFIDENT) == expected_codes(apis)


def test_method_callers_through_the_module_of_the_class(tmp_path: Path) -> None:
    """``from pkg import rollout`` and ``rollout.Rollout(...).get_reward(x, dis)``."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("", encoding="utf-8")
    rollout = write_source(
        tmp_path,
        "pkg/rollout.py",
        """\
        import torch


        class Rollout:
            def __init__(self, gen):
                self.gen = gen

            def get_reward(self, samples, dis):
                with torch.no_grad():
                    return dis.forward(samples)  # HS101

            def get_score(self, samples, meter):
                return meter.forward(samples)
        """,
    )
    write_source(
        tmp_path,
        "pkg/train.py",
        """\
        from torch import nn

        from pkg import rollout


        class Disc(nn.Module):
            def forward(self, x):
                return x


        class Meter:
            def forward(self, x):
                return x


        def train(gen, samples):
            rollout_func = rollout.Rollout(gen)
            rollout_func.get_score(samples, Meter())
            return rollout_func.get_reward(samples, Disc())
        """,
    )
    assert found(tmp_path, rollout, CONFIDENT) == expected_codes(rollout)
