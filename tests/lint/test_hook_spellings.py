"""Hook registrations spelled other ways (#15): ``hook=fn``, ``partial(fn, key=value)`` and
the global ``register_module_*_hook(fn)`` hand torch the function just the same, so its
first parameter is the hooked module (a backward hook: HS101; a forward hook: nothing)."""

from __future__ import annotations

from pathlib import Path

from tests.lint.conftest import expected_codes, found, write_source

CONFIDENT = ("HS101", "HS102", "HS103")
ALL = (*CONFIDENT, "HS104")


def test_hooks_registered_through_other_spellings_get_the_module(tmp_path: Path) -> None:
    path = write_source(
        tmp_path,
        "probe.py",
        """\
        import functools
        from functools import partial

        import torch
        from torch.nn.modules.module import (
            register_module_forward_hook,
            register_module_full_backward_hook,
        )


        def grad_hook(module, grad_in, grad_out, scale):
            return module.forward(grad_out[0]) * scale  # HS101


        def keyword_hook(module, grad_in, grad_out):
            return module.forward(grad_out[0])  # HS101


        def every_grad(module, grad_in, grad_out):
            return module.forward(grad_out[0])  # HS101


        def rerun(module, inputs, output, store):
            store.append(module.forward(inputs[0]))


        def every_output(module, inputs, output):
            return module.forward(inputs[0])


        def attach(model, store):
            model.register_full_backward_hook(partial(grad_hook, scale=2.0))
            model.register_full_backward_hook(hook=keyword_hook)
            model.register_forward_hook(functools.partial(rerun, store=store))
            register_module_full_backward_hook(every_grad)
            register_module_forward_hook(every_output)
        """,
    )
    assert found(tmp_path, path, ALL) == expected_codes(path)


def test_a_partial_with_positional_arguments_is_not_read(tmp_path: Path) -> None:
    path = write_source(
        tmp_path,
        "probe.py",
        """\
        from functools import partial

        import torch


        class Step:
            def forward(self, x):
                return x


        def grad_hook(step, module, grad_in, grad_out):
            return step.forward(grad_out[0])


        def attach(model):
            model.register_full_backward_hook(partial(grad_hook, Step()))
        """,
    )
    assert found(tmp_path, path, ALL) == set()
