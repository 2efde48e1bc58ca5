"""A method named like an imported module (#15): inside the class's methods the name is
still the module (``import lpips`` ... ``def lpips(self, a, b)``), as in Python."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.lint.conftest import expected_codes, found, write_source

CONFIDENT = ("HS101", "HS102", "HS103")


@pytest.mark.usefixtures("library_site")
def test_a_library_module_shadowed_by_a_method_name(tmp_path: Path) -> None:
    path = write_source(
        tmp_path,
        "measure.py",
        """\
        import lpips


        class Measure:
            def __init__(self, net="alex"):
                self.model = lpips.LPIPS(net=net)

            def lpips(self, a, b):
                return self.model.forward(a, b).item()  # HS101
        """,
    )
    assert found(tmp_path, path, CONFIDENT) == expected_codes(path)


def test_a_plain_class_of_a_module_shadowed_by_a_method_name(tmp_path: Path) -> None:
    write_source(
        tmp_path,
        "meters.py",
        """\
        class Meter:
            def forward(self, a, b):
                return a
        """,
    )
    path = write_source(
        tmp_path,
        "measure.py",
        """\
        import meters


        class Measure:
            def __init__(self):
                self.meter = meters.Meter()

            def meters(self, a, b):
                return self.meter.forward(a, b)
        """,
    )
    assert found(tmp_path, path, CONFIDENT) == expected_codes(path) == set()
