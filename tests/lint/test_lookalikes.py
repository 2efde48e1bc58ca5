"""Receivers the fresh7 set showed: plain classes that mimic modules, a project ``compile``
that returns a ``GraphModule``, loops over one submodule, module-level globals set in a
function, mixins of modules, and ``forward`` parameters that the instances' calls pass
(#15). Every case has a negative twin that must stay silent."""

from __future__ import annotations

import textwrap
from pathlib import Path

from hookscope.lint.python.index.classes import scan_lookalikes
from tests.lint.conftest import expected_codes, findings_of, found, write_source


def test_scan_lookalikes_needs_a_plain_class_with_forward() -> None:
    source = textwrap.dedent(
        """\
        class Controller:
            def forward(self, batch):
                return batch

            def parameters(self):
                return []

            def load_state_dict(self, other):
                pass


        class Net(Base):
            def forward(self, x):
                return x

            def eval(self):
                return self


        class Holder(object):
            def parameters(self):
                return []
        """
    ).encode()
    assert scan_lookalikes(source) == ("load_state_dict", "parameters")
    assert scan_lookalikes(source.replace(b"def forward(self, batch)", b"def act(self, b)")) == ()


_LEARNER = """\
    import copy


    class Learner:
        def __init__(self, mac):
            self.mac = mac
            self.target_mac = copy.deepcopy(mac)

        def optimise(self):
            return list(self.mac.parameters())

        def train(self, batch):
            out = self.mac.forward(batch){mark}
            self.target_mac.load_state_dict(self.mac.state_dict())
            return out
    """

_CONTROLLER = """\
    class Controller:
        def __init__(self, agent):
            self.agent = agent

        def forward(self, batch):
            return self.agent(batch)

        def parameters(self):
            return self.agent.parameters()
    """


def test_a_plain_class_with_module_methods_makes_them_no_evidence(tmp_path: Path) -> None:
    write_source(tmp_path, "controllers.py", _CONTROLLER)
    path = write_source(tmp_path, "learner.py", _LEARNER.format(mark=""))
    assert found(tmp_path, path) == set()


def test_module_methods_are_evidence_where_no_plain_class_mimics_them(tmp_path: Path) -> None:
    # the same learner, in a project whose controller derives from a base (a module
    # library's, say): ``mac.parameters()`` says ``mac`` is a module again
    write_source(
        tmp_path,
        "controllers.py",
        _CONTROLLER.replace("class Controller:", "class Controller(Base):"),
    )
    path = write_source(tmp_path, "learner.py", _LEARNER.format(mark="  # HS101"))
    assert found(tmp_path, path) == expected_codes(path)


def test_call_impl_on_a_wrapped_object_says_it_is_a_module(tmp_path: Path) -> None:
    path = write_source(
        tmp_path,
        "wrapping.py",
        """\
        def wrap(obj, subclass):
            class Wrapper(subclass):
                def __init__(self, obj):
                    object.__setattr__(self, "instance", obj)

                def _call_impl(self, *args):
                    return self.instance._call_impl(*args)

                def forward(self, *args):
                    return self.instance.forward(*args)  # HS101

            return Wrapper(obj)


        class Proxy:
            def __init__(self, target):
                self.target = target

            def forward(self, *args):
                return self.target.forward(*args)
        """,
    )
    assert found(tmp_path, path) == expected_codes(path)


def test_a_project_compile_that_returns_a_graph_module(tmp_path: Path) -> None:
    write_source(tmp_path, "trt/__init__.py", "from trt import dynamo\n")
    write_source(tmp_path, "trt/dynamo/__init__.py", "from ._compiler import compile, lower\n")
    write_source(
        tmp_path,
        "trt/dynamo/_compiler.py",
        """\
        import torch


        def compile(exported, inputs=None) -> torch.fx.GraphModule:
            return exported.module()


        def lower(exported, inputs=None):
            return exported
        """,
    )
    path = write_source(
        tmp_path,
        "examples/run.py",
        """\
        import torch
        import trt

        exported = torch.export.export(object(), ())
        compiled = trt.dynamo.compile(exported, inputs=[torch.ones(2)])
        compiled.forward(torch.ones(2))  # HS101
        lowered = trt.dynamo.lower(exported)
        lowered.forward(torch.ones(2))
        """,
    )
    assert found(tmp_path, path) == expected_codes(path)
    assert any(
        "compile() -> torch.fx.GraphModule" in f.resolution for f in findings_of(tmp_path, path)
    )


def test_several_loops_over_one_submodule(tmp_path: Path) -> None:
    path = write_source(
        tmp_path,
        "fused.py",
        """\
        import torch
        from extlib import make_frontend, make_record


        class Fused(torch.nn.Module):
            def __init__(self, specs):
                super().__init__()
                self.frontends = []
                for spec in specs:
                    self.frontends.append(make_frontend(spec))
                self.frontends = torch.nn.ModuleList(self.frontends)
                self.records = [make_record(s) for s in specs]

            def forward(self, x):
                for frontend in self.frontends:
                    x = frontend.forward(x)  # HS101
                for i, frontend in enumerate(self.frontends):
                    print(i, frontend)
                return x

            def replay(self, x):
                for record in self.records:
                    x = record.forward(x)
                for i, record in enumerate(self.records):
                    print(i, record)
                return x
        """,
    )
    assert found(tmp_path, path) == expected_codes(path)


def test_a_global_set_in_a_loader_function(tmp_path: Path) -> None:
    path = write_source(
        tmp_path,
        "inference.py",
        """\
        import torch

        _model = None
        _session = None


        def load_model(path):
            global _model, _session
            _model = torch.nn.Linear(2, 2)
            _session = open(path)


        def embed(x):
            return _model.forward(x)  # HS101


        def run(x):
            return _session.forward(x)


        def shadowed(_model):
            return _model.forward(1)
        """,
    )
    assert found(tmp_path, path) == expected_codes(path)


def test_self_forward_in_a_mixin_that_only_modules_subclass(tmp_path: Path) -> None:
    write_source(
        tmp_path,
        "mixins.py",
        """\
        import torch


        class LocalMixin:
            def convert(self, x):
                with torch.no_grad():
                    return self.forward(x)  # HS102


        class PlainMixin:
            def convert(self, x):
                return self.forward(x)
        """,
    )
    write_source(
        tmp_path,
        "nets.py",
        """\
        import torch
        from mixins import LocalMixin, PlainMixin


        class NetLocal(LocalMixin, torch.nn.Linear):
            pass


        class OtherLocal(LocalMixin, torch.nn.Conv1d):
            pass


        class ModuleUser(PlainMixin, torch.nn.Linear):
            pass


        class PlainUser(PlainMixin):
            def forward(self, x):
                return x
        """,
    )
    path = tmp_path / "mixins.py"
    assert found(tmp_path, path) == expected_codes(path)
    assert any(
        "a mixin that only modules subclass" in f.resolution for f in findings_of(tmp_path, path)
    )


def test_a_forward_parameter_that_every_instance_call_passes_a_module(tmp_path: Path) -> None:
    write_source(
        tmp_path,
        "pkg/layers.py",
        """\
        import torch


        class Attention(torch.nn.Module):
            def forward(self, x, embedding=None):
                if embedding is not None:
                    x = embedding.forward(x)  # HS101
                return x


        class Mixer(torch.nn.Module):
            def forward(self, x, table=None):
                return table.forward(x)
        """,
    )
    write_source(
        tmp_path,
        "pkg/test_layers.py",
        """\
        import torch
        from pkg.layers import Attention, Mixer


        def test_attention():
            layer = Attention()
            emb = torch.nn.Linear(2, 2)
            assert layer(torch.ones(2), embedding=emb).shape == (2,)


        def test_mixer():
            mixer = Mixer()
            mixer(torch.ones(2), table={"a": 1})
        """,
    )
    path = tmp_path / "pkg" / "layers.py"
    assert found(tmp_path, path) == expected_codes(path)


def test_typing_any_is_not_a_project_class_of_that_name(tmp_path: Path) -> None:
    write_source(
        tmp_path,
        "tests/test_ops.py",
        """\
        import torch


        class Any(torch.nn.Module):
            def forward(self, x):
                return x.any()
        """,
    )
    write_source(tmp_path, "rt/__init__.py", "from rt._load import load, load_module\n")
    write_source(
        tmp_path,
        "rt/_load.py",
        """\
        from typing import Any

        import torch


        def load(path) -> Any:
            return open(path)


        def load_module(path) -> torch.nn.Module:
            return torch.load(path)
        """,
    )
    path = write_source(
        tmp_path,
        "run.py",
        """\
        import rt

        program = rt.load("m.pte")
        program.forward(1)
        model = rt.load_module("m.pt")
        model.forward(1)  # HS101
        """,
    )
    assert found(tmp_path, path) == expected_codes(path)
