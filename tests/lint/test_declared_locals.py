"""Declared locals and class aliases (#15): ``ctxs: list[LossContext] = []`` gives ``ctxs``
its type for every assignment in the function (``ctxs = LossContext.build_batches(ctxs)``
cannot be followed), and ``Ctx = LossContext`` in another project file is that class,
in annotations and calls alike; the same with a plain class is no module."""

from __future__ import annotations

from pathlib import Path

from tests.lint.conftest import expected_codes, findings_of, found, write_source

CONFIDENT = ("HS101", "HS102", "HS103")

_CONTEXTS = """\
    import torch
    from torch import nn


    class LossContext(nn.Module):
        def forward(self, x):
            return x

        @staticmethod
        def build_batches(ctxs, lens):
            return ctxs


    class Batcher:
        def forward(self, x):
            return x

        @staticmethod
        def build_batches(items, lens):
            return items


    Ctx = LossContext
    Plain = Batcher
    """

_USES = """\
    import torch
    from pkg.contexts import {alias}, {cls}


    def run(cfg, xs):
        ctxs: list[{cls}] = []
        for x in xs:
            ctxs.append(cfg.build(x))
        ctxs = {cls}.build_batches(ctxs, [1])
        for i in range(2):
            ctx = ctxs[i]
            ctx.forward(xs[i]){mark}
        return ctxs[0].forward(xs[0]){mark}


    def aliased(cfg, x):
        made = {alias}()
        given: {alias} = cfg.make(x)
        return made.forward(x), given.forward(x){mark}
    """


def test_declared_locals_and_class_aliases(tmp_path: Path) -> None:
    write_source(tmp_path, "pkg/__init__.py", "")
    write_source(tmp_path, "pkg/contexts.py", _CONTEXTS)
    path = write_source(
        tmp_path, "pkg/uses.py", _USES.format(alias="Ctx", cls="LossContext", mark="  # HS101")
    )
    assert found(tmp_path, path, CONFIDENT) == {(12, "HS101"), (13, "HS101"), (19, "HS101")}
    assert len([f for f in findings_of(tmp_path, path, CONFIDENT) if f.line == 19]) == 2
    assert expected_codes(path) == {(12, "HS101"), (13, "HS101"), (19, "HS101")}
    messages = {f.line: f.message for f in findings_of(tmp_path, path, CONFIDENT)}
    assert "declared for every assignment" in messages[12]


def test_declared_locals_and_aliases_of_plain_classes(tmp_path: Path) -> None:
    write_source(tmp_path, "pkg/__init__.py", "")
    write_source(tmp_path, "pkg/contexts.py", _CONTEXTS)
    path = write_source(
        tmp_path, "pkg/plain_uses.py", _USES.format(alias="Plain", cls="Batcher", mark="")
    )
    assert found(tmp_path, path, CONFIDENT) == set()
