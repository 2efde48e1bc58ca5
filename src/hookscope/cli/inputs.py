"""The model-input options shared by ``summary``, ``doctor`` and ``featuremaps``.

One parser for ``--kwargs`` (the factory's keyword arguments), ``--input-size``
(repeatable; one positional input each), ``--dtype`` (one per ``--input-size``,
or one for all), ``--input-ids SHAPE`` (int64 token ids as ``input_ids=``),
``--input NAME=SHAPE[:DTYPE]`` (a keyword input; ``NAME.KEY=...`` builds a dict)
and ``--device``. Every size is checked before a tensor is made: a size that
cannot exist, or an input larger than the machine's memory, is a `UsageError`
naming the size (exit 2), never a traceback.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any

import torch

from hookscope.errors import UsageError
from hookscope.modelspec import parse_dtype, parse_shape
from hookscope.summary.inputs import make_tensor, normalize_dtypes


def add_input_arguments(
    parser: argparse.ArgumentParser, *, keywords: bool = True, device: str = "cpu"
) -> None:
    """Add the shared input options (``keywords=False``: no ``--input-ids``/``--input``)."""
    parser.add_argument("--kwargs", help="JSON object of keyword arguments for the factory")
    parser.add_argument(
        "--input-size",
        action="append",
        default=[],
        metavar="SHAPE",
        help="shape of a positional input, e.g. 1,3,224,224 (repeat for several inputs)",
    )
    parser.add_argument(
        "--dtype",
        action="append",
        default=[],
        help="dtype of each --input-size (one value applies to all; default float32)",
    )
    if keywords:
        parser.add_argument(
            "--input-ids", metavar="SHAPE", help="integer token ids of this shape as input_ids="
        )
        parser.add_argument(
            "--input",
            action="append",
            default=[],
            dest="keyword_input",
            metavar="NAME=SHAPE[:DTYPE]",
            help="a keyword input; NAME.KEY=... builds a dict input NAME={KEY: ...}",
        )
    parser.add_argument("--device", default=device, help=f"device to run on (default {device})")


@dataclass(frozen=True)
class InputSpec:
    """What the input options asked for (tensors are made by `make_inputs`).

    Attributes:
        sizes: one shape per ``--input-size``.
        dtypes: one dtype per shape.
        keywords: ``--input-ids`` / ``--input`` entries as ``(name, key, shape, dtype)``.
    """

    sizes: tuple[tuple[int, ...], ...]
    dtypes: tuple[torch.dtype, ...]
    keywords: tuple[tuple[str, str | None, tuple[int, ...], torch.dtype], ...]

    @property
    def empty(self) -> bool:
        """True when no input at all was given."""
        return not self.sizes and not self.keywords


def parse_keyword_input(text: str) -> tuple[str, str | None, tuple[int, ...], torch.dtype]:
    """``"mask=1,128:bool"`` → ``("mask", None, (1, 128), torch.bool)``; ``"b.x=2,3"`` → ``("b", "x", ...)``."""
    name, sep, spec = text.partition("=")
    if not sep or not name or not spec:
        raise UsageError(f"--input takes NAME=SHAPE[:DTYPE], got {text!r}")
    shape_text, _, dtype_text = spec.partition(":")
    dtype = parse_dtype(dtype_text) if dtype_text else torch.float32
    shape = parse_shape(shape_text)
    outer, dot, key = name.partition(".")
    if not outer.isidentifier() or (dot and not key):
        raise UsageError(f"bad input name {name!r} in --input {text!r}")
    return outer, key or None, shape, dtype


def parse_inputs(args: argparse.Namespace) -> InputSpec:
    """Validate the input options once.

    Raises:
        UsageError: a bad shape or dtype, or more ``--dtype`` than ``--input-size``.
    """
    if args.dtype and not args.input_size:
        raise UsageError(f"--dtype {args.dtype[0]} needs --input-size")
    sizes = tuple(parse_shape(text) for text in args.input_size)
    dtypes = [parse_dtype(text) for text in args.dtype] or None
    keywords: list[tuple[str, str | None, tuple[int, ...], torch.dtype]] = []
    if getattr(args, "input_ids", None):
        keywords.append(("input_ids", None, parse_shape(args.input_ids), torch.int64))
    keywords.extend(parse_keyword_input(text) for text in getattr(args, "keyword_input", []))
    return InputSpec(sizes, tuple(normalize_dtypes(dtypes, len(sizes))), tuple(keywords))


def parse_device(text: str) -> torch.device:
    """``--device`` as a ``torch.device``; raises `UsageError` showing the bad value."""
    try:
        return torch.device(text)
    except RuntimeError:
        raise UsageError(f"bad --device {text!r}; e.g. cpu, cuda, cuda:1, meta") from None


def make_inputs(spec: InputSpec, device: torch.device) -> tuple[list[Any], dict[str, Any]]:
    """Positional and keyword inputs on ``device``.

    Raises:
        UsageError: an input too large to make, naming its size.
    """
    positional = [make_tensor(s, d, device) for s, d in zip(spec.sizes, spec.dtypes, strict=True)]
    return positional, make_keyword_inputs(spec, device)


def make_keyword_inputs(spec: InputSpec, device: torch.device) -> dict[str, Any]:
    """The ``--input-ids`` / ``--input`` tensors on ``device``, by keyword.

    Raises:
        UsageError: an input too large to make, or ``NAME.KEY=`` on a tensor input.
    """
    keywords: dict[str, Any] = {}
    for name, key, shape, dtype in spec.keywords:
        tensor = make_tensor(shape, dtype, device)
        if key is None:
            keywords[name] = tensor
            continue
        group = keywords.setdefault(name, {})
        if not isinstance(group, dict):
            raise UsageError(f"--input {name}.{key}: {name} is already a tensor input")
        group[key] = tensor
    return keywords
