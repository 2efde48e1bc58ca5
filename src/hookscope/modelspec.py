"""Loading a model from a ``MODEL_SPEC`` and building example inputs.

``MODEL_SPEC`` is ``package.module:callable`` or ``path/to/file.py:callable``;
the callable is called with keyword arguments (``--kwargs '{"num_classes": 10}'``)
and must return an ``nn.Module``.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import keyword
import sys
from pathlib import Path
from typing import Any

import torch
from torch import nn

from hookscope.errors import ModelSpecError, UsageError

#: Largest size of one dimension (PyTorch sizes are int64).
MAX_DIM = 2**63 - 1

_DTYPES = {
    "float32": torch.float32,
    "float": torch.float32,
    "fp32": torch.float32,
    "float16": torch.float16,
    "fp16": torch.float16,
    "half": torch.float16,
    "bfloat16": torch.bfloat16,
    "bf16": torch.bfloat16,
    "float64": torch.float64,
    "double": torch.float64,
    "int64": torch.int64,
    "long": torch.int64,
    "int32": torch.int32,
    "bool": torch.bool,
}


def parse_dtype(text: str) -> torch.dtype:
    """``"bf16"`` → ``torch.bfloat16``; raises `UsageError` showing the bad value."""
    try:
        return _DTYPES[text.strip().lower().removeprefix("torch.")]
    except KeyError:
        raise UsageError(f"unknown dtype {text!r}; use one of {sorted(_DTYPES)}") from None


def parse_shape(text: str) -> tuple[int, ...]:
    """``"1,3,224,224"`` (or ``1x3x224x224``) → ``(1, 3, 224, 224)``."""
    compact = text.replace(" ", "")
    parts = compact.split("," if "," in compact else "x")
    try:
        shape = tuple(int(p) for p in parts)
    except ValueError:
        raise UsageError(f"bad shape {text!r}; expected integers like 1,3,224,224") from None
    if not shape or any(n < 0 for n in shape):
        raise UsageError(f"bad shape {text!r}; expected non-negative integers like 1,3,224,224")
    if any(n > MAX_DIM for n in shape):
        raise UsageError(f"bad shape {text!r}; a size above {MAX_DIM:,} cannot exist")
    return shape


def parse_kwargs(text: str | None) -> dict[str, Any]:
    """The ``--kwargs`` JSON object, or ``{}``."""
    if not text:
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"--kwargs is not valid JSON ({exc.msg}): {text!r}") from None
    if not isinstance(value, dict):
        raise UsageError(f"--kwargs must be a JSON object, got {text!r}")
    return value


def _same_file(origin: str | None, path: Path) -> bool:
    return origin is not None and Path(origin).resolve() == path.resolve()


def _module_name(path: Path) -> str:
    """The name ``import stem`` gives the file (so hook and class names show the
    user's file name), unless another module already has or would get that name."""
    stem = path.stem
    if not stem.isidentifier() or keyword.iskeyword(stem):
        return f"hookscope_modelspec_{stem}"
    existing = sys.modules.get(stem)
    if existing is not None:
        same = _same_file(getattr(existing, "__file__", None), path)
        return stem if same else f"hookscope_modelspec_{stem}"
    try:
        found = importlib.util.find_spec(stem)
    except (ImportError, ValueError):
        found = None
    if found is None or _same_file(found.origin, path):
        return stem
    return f"hookscope_modelspec_{stem}"


def _import_target(spec: str) -> Any:
    if ":" not in spec:
        raise ModelSpecError(
            f"bad MODEL_SPEC {spec!r}; expected package.module:callable or path/to/file.py:callable"
        )
    location, _, attr = spec.rpartition(":")
    if not location or not attr:
        raise ModelSpecError(f"bad MODEL_SPEC {spec!r}; both sides of ':' are needed")
    if location.endswith(".py") or "/" in location or "\\" in location:
        path = Path(location)
        if not path.is_file():
            raise ModelSpecError(f"MODEL_SPEC file not found: {location}")
        mod_name = _module_name(path)
        module_spec = importlib.util.spec_from_file_location(mod_name, path)
        if module_spec is None or module_spec.loader is None:
            raise ModelSpecError(f"cannot import {location}")
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[mod_name] = module
        sys.path.insert(0, str(path.resolve().parent))
        try:
            module_spec.loader.exec_module(module)
        except SystemExit as exc:
            raise ModelSpecError(f"importing {location} called sys.exit({exc.code!r})") from None
        except Exception as exc:
            raise ModelSpecError(
                f"importing {location} failed: {type(exc).__name__}: {exc}"
            ) from exc
        finally:
            sys.path.remove(str(path.resolve().parent))
    else:
        try:
            module = importlib.import_module(location)
        except ImportError as exc:
            raise ModelSpecError(f"cannot import {location!r}: {exc}") from exc
    target: Any = module
    for part in attr.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise ModelSpecError(f"{location} has no attribute {attr!r}") from None
    return target


def load_model(spec: str, kwargs: dict[str, Any] | None = None) -> nn.Module:
    """Build the model a ``MODEL_SPEC`` names.

    Raises:
        ModelSpecError: the spec cannot be imported, called, or does not give a module.
    """
    target = _import_target(spec)
    if isinstance(target, nn.Module):
        if kwargs:
            raise ModelSpecError(f"{spec} is a module instance; --kwargs needs a callable")
        return target
    if not callable(target):
        raise ModelSpecError(f"{spec} is not callable (got {type(target).__name__})")
    try:
        model = target(**(kwargs or {}))
    except SystemExit as exc:
        raise ModelSpecError(f"calling {spec} called sys.exit({exc.code!r})") from None
    except Exception as exc:
        raise ModelSpecError(f"calling {spec} failed: {type(exc).__name__}: {exc}") from exc
    if not isinstance(model, nn.Module):
        raise ModelSpecError(f"{spec} returned {type(model).__name__}, not an nn.Module")
    return model
