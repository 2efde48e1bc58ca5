"""Yield fixtures of a ``conftest.py`` (#15): a test below it gets the module the fixture
yields (``model = get_model("dummy"); yield model``)."""

from __future__ import annotations

from pathlib import Path

from tests.lint.conftest import expected_codes, found, write_source

CONFIDENT = ("HS101", "HS102", "HS103")

_MODEL = """\
from torch import nn


class Dalle(nn.Module):
    def forward(self, x):
        return x


class Tokenizer:
    def forward(self, x):
        return x


def get_model(name, device="cpu"):
    model = Dalle()
    return model.to(device)


def get_tokenizer(name):
    return Tokenizer()
"""

_CONFTEST = """\
import pytest
from pkg.model import get_model, get_tokenizer


@pytest.fixture(scope="module")
def small_model():
    model = get_model("dummy")
    yield model


@pytest.fixture
def tokenizer():
    tok = get_tokenizer("dummy")
    yield tok


def helper_model():
    yield get_model("dummy")
"""


def test_a_module_yielded_by_a_conftest_fixture(tmp_path: Path) -> None:
    write_source(tmp_path, "pkg/model.py", _MODEL)
    write_source(tmp_path, "tests/conftest.py", _CONFTEST)
    path = write_source(
        tmp_path,
        "tests/unit/test_model.py",
        """\
        def test_forward(small_model):
            assert small_model.forward(1) == 1  # HS101


        def test_tokenizer(tokenizer):
            assert tokenizer.forward(1) == 1


        def test_not_a_fixture(helper_model):
            assert helper_model.forward(1) == 1
        """,
    )
    assert found(tmp_path, path, CONFIDENT) == expected_codes(path)


def test_a_conftest_beside_not_above_the_test_gives_nothing(tmp_path: Path) -> None:
    write_source(tmp_path, "pkg/model.py", _MODEL)
    write_source(tmp_path, "other/conftest.py", _CONFTEST)
    path = write_source(
        tmp_path,
        "tests/test_model.py",
        """\
        def test_forward(small_model):
            assert small_model.forward(1) == 1
        """,
    )
    assert found(tmp_path, path, CONFIDENT) == expected_codes(path) == set()
