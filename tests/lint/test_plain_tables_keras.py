"""Two shapes that look like torch modules and are not (#15): an attribute built by a
project function from a table of plain classes, and ``self.forward`` inside a Keras
layer's ``call``. Each has a module twin that must still give its finding."""

from __future__ import annotations

from pathlib import Path

from tests.lint.conftest import expected_codes, found, write_source


def test_an_attribute_built_from_a_table_of_plain_classes_is_no_submodule(
    tmp_path: Path,
) -> None:
    write_source(
        tmp_path,
        "pkg/tasks.py",
        """\
        from torch import nn


        class BaseTask:
            def forward(self, batch, model):
                return model(batch)


        class LMTask(BaseTask):
            pass


        class Head(nn.Module):
            def forward(self, x):
                return x


        class Tail(nn.Module):
            def forward(self, x):
                return x


        registry = {"base": BaseTask, "lm": LMTask}
        heads = {"head": Head, "tail": Tail}
        """,
    )
    write_source(
        tmp_path,
        "pkg/utils.py",
        """\
        import importlib


        def instantiate(registry, name, **kwargs):
            target = registry[name]
            if isinstance(target, str):
                module, _, attr = target.rpartition(".")
                target = getattr(importlib.import_module(module), attr)
            return target(**kwargs)
        """,
    )
    model = write_source(
        tmp_path,
        "pkg/model.py",
        """\
        from torch import nn

        import pkg.utils as utils
        from pkg import tasks


        class Model(nn.Module):
            def __init__(self, cfg):
                super().__init__()
                self.task = utils.instantiate(tasks.registry, cfg.task)
                self.head = utils.instantiate(tasks.heads, cfg.head)

            def forward(self, batch):
                out = self.head.forward(batch)  # HS101
                return self.task.forward(out, self.head)
        """,
    )
    assert found(tmp_path, model) == expected_codes(model)


def test_self_forward_in_a_keras_call_is_the_entry_point(tmp_path: Path) -> None:
    write_source(
        tmp_path,
        "pkg/base.py",
        """\
        from torch import nn


        class Base(nn.Module):
            pass
        """,
    )
    keras_side = write_source(
        tmp_path,
        "pkg/keras_side.py",
        """\
        import tensorflow as tf

        from pkg.base import Base


        class Block(Base, tf.keras.layers.Layer):
            def forward(self, x):
                return x

            def call(self, x):
                return self.forward(x)
        """,
    )
    torch_side = write_source(
        tmp_path,
        "pkg/torch_side.py",
        """\
        from pkg.base import Base


        class Block(Base):
            def forward(self, x):
                return x

            def call(self, x):
                return self.forward(x)  # HS102
        """,
    )
    assert found(tmp_path, keras_side) == expected_codes(keras_side) == set()
    assert found(tmp_path, torch_side) == expected_codes(torch_side)
