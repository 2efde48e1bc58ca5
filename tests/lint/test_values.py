"""Values whose origin decides whether ``x.forward(...)`` skips hooks (#15): classes kept
in dicts, what external libraries return, lambda defaults, loop tuples, ``partial``."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from hookscope.lint import lint
from tests.lint.conftest import expected_codes


def _project(tmp_path: Path, name: str, source: str) -> Path:
    (tmp_path / ".git").mkdir(exist_ok=True)
    path = tmp_path / name
    path.write_text(textwrap.dedent(source), encoding="utf-8")
    return path


def _found(tmp_path: Path, path: Path, codes: tuple[str, ...] = ("HS1",)) -> set[tuple[int, str]]:
    findings = lint(tmp_path, select=list(codes), config=False)
    return {(f.line, f.code) for f in findings if f.path.endswith(path.name)}


def test_super_of_own_type_in_a_helper_installed_as_forward(tmp_path: Path) -> None:
    path = _project(
        tmp_path,
        "sparse.py",
        """\
        import torch
        from torch import nn


        class SparseHelper:
            @staticmethod
            def sp_forward(self, x):
                return super(type(self), self).forward(x)

            @staticmethod
            def on_other(self, other, x):
                return super(type(other), other).forward(x)  # HS103


        class SparseConv(nn.Conv2d):
            forward = SparseHelper.sp_forward
        """,
    )
    assert _found(tmp_path, path) == expected_codes(path)


def test_an_entry_of_a_dict_of_classes_is_a_class(tmp_path: Path) -> None:
    path = _project(
        tmp_path,
        "table.py",
        """\
        import torch
        from torch import nn


        class FullEntangler(nn.Module):
            def forward(self, x):
                return x


        class RingEntangler(nn.Module):
            def forward(self, x):
                return x


        class EntangleOp(nn.Module):
            def __init__(self, name):
                super().__init__()
                classes = {"full": FullEntangler, "ring": RingEntangler}
                self.op_class = classes.get(name, None)
                self.op = {"full": FullEntangler(), "ring": RingEntangler()}.get(name)

            def forward(self, x):
                self.op_class.forward(x)
                return self.op.forward(x)  # HS101
        """,
    )
    found = lint(tmp_path, select=["HS1"], config=False)
    assert {(f.line, f.code) for f in found} == expected_codes(path)
    assert all(f.fixable for f in found)  # the instance; the class is never flagged


def test_what_an_external_library_function_returns_is_no_confident_submodule(
    tmp_path: Path,
) -> None:
    path = _project(
        tmp_path,
        "program.py",
        """\
        import torch
        from torch import nn
        from runtime.bindings import portable as lib
        from .loaders import load_block


        class PteProgram(nn.Module):
            def __init__(self, path):
                super().__init__()
                self.program = lib.load_program(path)
                self.block = load_block(path)

            def forward(self, x):
                self.block.forward(x)  # HS101
                return self.program.forward(x)  # HS104
        """,
    )
    (tmp_path / "loaders.py").write_text(
        "def load_block(path):\n    return BLOCKS[path]\n", encoding="utf-8"
    )
    assert _found(tmp_path, path, ("HS1", "HS104")) == expected_codes(path)


def test_a_lambda_parameter_defaulting_to_an_enclosing_module(tmp_path: Path) -> None:
    path = _project(
        tmp_path,
        "closures.py",
        """\
        import torch
        from torch import nn


        class PointsRenderer(nn.Module):
            def forward(self, x):
                return x


        def check(x, expect_raise):
            renderer = PointsRenderer()
            expect_raise(lambda renderer=renderer, x=x: renderer.forward(x))  # HS101
            expect_raise(lambda *, r=renderer: r.forward(x))  # HS101
            expect_raise(lambda count=3: count.forward(x))
        """,
    )
    assert _found(tmp_path, path) == expected_codes(path)


def test_instances_built_from_a_column_of_class_tuples(tmp_path: Path) -> None:
    path = _project(
        tmp_path,
        "columns.py",
        """\
        import torch
        from torch import nn


        class NormCompositor(nn.Module):
            def forward(self, x):
                return x


        class AlphaCompositor(nn.Module):
            def forward(self, x):
                return x


        def weighted(x):
            return x


        def check(x):
            pairs = [(NormCompositor, weighted), (AlphaCompositor, weighted)]
            for compositor_class, func in pairs:
                compositor = compositor_class(0.5)
                compositor.forward(x)  # HS101
                func.forward(x)
            for compositor_class, n in ((NormCompositor, 1), (AlphaCompositor, 2)):
                compositor_class(n).forward(x)  # HS101
                n.forward(x)
        """,
    )
    assert _found(tmp_path, path, ("HS1", "HS104")) == expected_codes(path)


def test_a_module_bound_by_functools_partial(tmp_path: Path) -> None:
    path = _project(
        tmp_path,
        "gradients.py",
        """\
        import functools
        from functools import partial
        from typing import List

        import torch
        from torch import nn


        class FunctionWrapper(nn.Module):
            def forward(self, x):
                return x


        def render(functions: List[FunctionWrapper], x):
            function = functions[0]
            gradient = functools.partial(_gradient, function)
            scaled = partial(_scaled, 2.0)
            return gradient(x), scaled(x)


        def _gradient(module, x):
            return module.forward(x)  # HS101


        def _scaled(factor, x):
            return factor.forward(x)
        """,
    )
    assert _found(tmp_path, path, ("HS1", "HS104")) == expected_codes(path)


@pytest.mark.usefixtures("library_site")
def test_module_classes_of_flow_rwkv_and_lpips_libraries(tmp_path: Path) -> None:
    path = _project(
        tmp_path,
        "flows.py",
        """\
        import torch
        import nflows.nn.nde.made as made
        from nflows import distributions as distributions_
        from nflows.transforms import InverseNotAvailable
        from cpflows.flows import SequentialFlow
        from rwkv.model import RWKV
        import lpips


        class MadeNet(made.MADE):
            def log_prob(self, x):
                return self.forward(x)  # HS102


        class Mixture(distributions_.MADEMoG):
            def sample(self, x):
                return self._made.forward(x)  # HS101


        class SequentialNet(SequentialFlow):
            def sample(self, x):
                return self.forward(x)  # HS102


        class Chat:
            def __init__(self, path):
                self.model = RWKV(model=path)

            def run(self, x):
                return self.model.forward(x)  # HS101


        def metric(x):
            InverseNotAvailable().forward(x)  # an ``Exception``: nothing
            return lpips.LPIPS(net="vgg").forward(x)  # HS101
        """,
    )
    assert _found(tmp_path, path, ("HS1", "HS104")) == expected_codes(path)


@pytest.mark.usefixtures("library_site")
def test_a_library_base_named_through_an_alias_in_another_project_file(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("", encoding="utf-8")
    _project(
        tmp_path,
        "pkg/wrappers.py",
        """\
        import numpy.random as rnd
        import nflows.nn.nde.made as made
        from nflows import distributions as dist


        class MadeWrapper(made.MADE):
            pass


        class MixtureWrapper(dist.MADEMoG):
            pass


        class DrawWrapper(rnd.Generator):
            pass
        """,
    )
    path = _project(
        tmp_path,
        "pkg/estimators.py",
        """\
        import torch
        from pkg.wrappers import MadeWrapper as MADE
        from pkg.wrappers import DrawWrapper, MixtureWrapper


        class CategoricalMade(MADE):
            def log_prob(self, x):
                return self.forward(x)  # HS102


        class Mixture(MixtureWrapper):
            def sample(self, x):
                return self.forward(x)  # HS102


        class Draws(DrawWrapper):
            def sample(self, x):
                return self.forward(x)
        """,
    )
    assert _found(tmp_path, path) == expected_codes(path)


@pytest.mark.usefixtures("library_site")
def test_a_base_imported_by_a_helper_that_takes_its_path_as_text(tmp_path: Path) -> None:
    path = _project(
        tmp_path,
        "flows.py",
        """\
        import torch
        from skbase.utils.dependencies import _safe_import

        SequentialFlow = _safe_import("cpflows.flows.SequentialFlow")
        Plain = _safe_import("somelib.things.Plain")
        Helper = make_thing("cpflows.flows.SequentialFlow")


        class SequentialNet(SequentialFlow):
            def es_sample(self, x):
                return self.forward(x)  # HS102


        class Other(Plain):
            def sample(self, x):
                return self.forward(x)


        class Made(Helper):
            def sample(self, x):
                return self.forward(x)
        """,
    )
    assert _found(tmp_path, path, ("HS101", "HS102", "HS103")) == expected_codes(path)


@pytest.mark.usefixtures("library_site")
def test_detectron2_layers_are_modules(tmp_path: Path) -> None:
    path = _project(
        tmp_path,
        "mapper.py",
        """\
        import torch
        from detectron2.layers import ROIAlign, ShapeSpec


        def crop(x, boxes):
            ShapeSpec(channels=3).forward(x)
            return ROIAlign((7, 7), 1.0, 0, aligned=True).forward(x, boxes)  # HS101
        """,
    )
    assert _found(tmp_path, path, ("HS101", "HS102", "HS103")) == expected_codes(path)


def test_attributes_set_by_name(tmp_path: Path) -> None:
    path = _project(
        tmp_path,
        "stack.py",
        """\
        import torch
        from torch import nn


        class Plain:
            def forward(self, x):
                return x


        class Stack(nn.Module):
            def __init__(self, n):
                super().__init__()
                for i in range(n):
                    setattr(self, f"layer_{i}", nn.Linear(2, 2))
                    setattr(self, f"mixed_{i}", nn.Linear(2, 2) if i else Plain())
                    setattr(self, f"plain_{i}", Plain())
                self.add_module("head", nn.Linear(2, 2))

            def run(self, x, i):
                x = getattr(self, f"layer_{i}").forward(x)  # HS101
                x = getattr(self, f"plain_{i}").forward(x)
                x = getattr(self, f"mixed_{i}").forward(x)
                return getattr(self, "head").forward(x)  # HS101
        """,
    )
    assert _found(tmp_path, path, ("HS101", "HS102", "HS103")) == expected_codes(path)


def test_lists_filled_after_they_are_made(tmp_path: Path) -> None:
    path = _project(
        tmp_path,
        "filled.py",
        """\
        import torch
        from torch import nn


        class Plain:
            def forward(self, x):
                return x


        def build(x, others):
            layers = []
            for _ in range(3):
                layers.append(nn.Linear(2, 2))
            layers += [nn.ReLU()]
            mixed = []
            mixed.append(nn.ReLU())
            mixed.append(Plain())
            grown = []
            grown.append(nn.ReLU())
            grown.extend(others)
            seen = []
            seen.append(nn.ReLU())

            def hook(module, args, out):
                seen.append(out)

            for layer in layers:
                layer.forward(x)  # HS101
            mixed[0].forward(x)
            grown[0].forward(x)
            return seen[0].forward(x)


        class Stack:
            def __init__(self):
                self.blocks = []
                self.add()

            def add(self):
                self.blocks.insert(0, nn.Linear(2, 2))

            def run(self, x):
                for block in self.blocks:
                    x = block.forward(x)  # HS101
                return x
        """,
    )
    assert _found(tmp_path, path, ("HS101", "HS102", "HS103")) == expected_codes(path)
