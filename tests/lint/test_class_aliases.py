"""Classes whose base is a module-level alias of a class (``MyModule =
torch.jit.ScriptModule``, ``Base = A if cond else B``, ``from x import Module as M``), in
the same file and imported from another one; aliases of plain classes stay plain (#33)."""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from hookscope.lint.python.index.classes import scan_classes
from tests.lint.conftest import expected_codes, findings_of, found, write_source


def test_a_base_aliased_to_a_module_class_is_a_module(tmp_path: Path) -> None:
    path = write_source(
        tmp_path,
        "rnn.py",
        """\
        import os

        import torch
        from torch import nn
        from torch.nn import Module as M

        MyModule = nn.Module
        if os.environ.get("JIT") == "1":
            MyModule = torch.jit.ScriptModule

        Base = torch.jit.ScriptModule if os.environ.get("JIT") else nn.Module
        Plain = object
        Either = nn.Module if os.environ.get("X") else dict


        class RNN(MyModule):
            def forward(self, x):
                return x


        class Ternary(Base):
            def forward(self, x):
                return x


        class Imported(M):
            def forward(self, x):
                return x


        class NotTorch(Plain):
            def forward(self, x):
                return x


        class Undecided(Either):
            def forward(self, x):
                return x


        rnn, ternary, imported = RNN(), Ternary(), Imported()
        rnn.forward(1)  # HS101
        ternary.forward(1)  # HS101
        imported.forward(1)  # HS101
        NotTorch().forward(1)
        Undecided().forward(1)
        """,
    )
    assert found(tmp_path, path) == expected_codes(path)
    resolved = [f.resolution for f in findings_of(tmp_path, path)]
    assert any("rnn = RNN() at" in r for r in resolved)


def test_an_alias_in_another_file_reaches_its_importers(tmp_path: Path) -> None:
    write_source(
        tmp_path,
        "src/model_run.py",
        """\
        import torch

        MyModule = torch.nn.Module
        try:
            MyModule = torch.jit.ScriptModule
        except AttributeError:
            pass


        class RWKV_RNN(MyModule):
            def forward(self, tokens, state):
                return tokens, state
        """,
    )
    (tmp_path / "src" / "__init__.py").write_text("", encoding="utf-8")
    path = write_source(
        tmp_path,
        "chat.py",
        """\
        from src.model_run import RWKV_RNN

        model = RWKV_RNN()
        out, state = model.forward([187], None)  # HS101
        """,
    )
    assert found(tmp_path, path) == expected_codes(path)


def test_the_index_records_an_alias_as_a_class_with_that_base() -> None:
    source = (
        b"import torch\n"
        b"MyModule = torch.nn.Module\n"
        b"if JIT:\n"
        b"    MyModule = torch.jit.ScriptModule  # faster\n"
        b"obj.MyModule = Other\n"
        b"ABC = abc.ABC\n"
        b"class Net(MyModule):\n"
        b"    pass\n"
        b"class Spec(ABC):\n"
        b"    pass\n"
    )
    entries = {(name, bases, where) for name, bases, _, where in scan_classes(source, "m.py")}
    assert entries == {
        ("Net", ("MyModule",), "m.py:7"),
        ("Spec", ("ABC",), "m.py:9"),
        ("MyModule", ("torch.nn.Module",), "m.py:2"),
        ("MyModule", ("torch.jit.ScriptModule",), "m.py:4"),
    }


def test_a_scriptmodule_subclass_takes_forward_hooks_and_forward_skips_them() -> None:
    # The facts the rule rests on, checked on the installed torch.
    base = torch.jit.ScriptModule if torch.__version__ else nn.Module

    class Net(base):  # type: ignore[misc, valid-type]
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(2, 2)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.fc(x)

    net = Net()
    seen: list[int] = []
    net.register_forward_hook(lambda module, args, out: seen.append(1))
    x = torch.zeros(1, 2)
    net(x)
    assert seen == [1]
    net.forward(x)
    assert seen == [1]
