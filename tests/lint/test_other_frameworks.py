"""Files of frameworks whose layers copy torch's method names (#15): ``self.net.eval()``
in a PaddlePaddle file shows nothing (``paddle.nn.Layer`` has ``eval``), so
``self.net.forward(x)`` there is no confident finding; the same class in a torch file is."""

from __future__ import annotations

from pathlib import Path

from tests.lint.conftest import expected_codes, found, write_source

CONFIDENT = ("HS101", "HS102", "HS103")

_PREDICTOR = """\
    import {framework}


    class Predictor:
        def __init__(self, net, device):
            self.net = net
            self.net.to(device)
            self.net.eval()

        def predict(self, images):
            return self.net.forward(images){expect}
    """


def test_use_in_a_torch_file_shows_a_module(tmp_path: Path) -> None:
    source = _PREDICTOR.format(framework="torch", expect="  # HS101")
    path = write_source(tmp_path, "torch_predictor.py", source)
    assert found(tmp_path, path, CONFIDENT) == expected_codes(path) == {(11, "HS101")}


def test_use_in_a_paddle_file_shows_nothing(tmp_path: Path) -> None:
    for framework in ("paddle", "oneflow", "mindspore"):
        path = write_source(
            tmp_path, f"{framework}_predictor.py", _PREDICTOR.format(framework=framework, expect="")
        )
        assert found(tmp_path, path, CONFIDENT) == set()
