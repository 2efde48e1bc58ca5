"""Submodules picked by name (#15): ``tagger = getattr(self, "_tagger_%s" % task)`` in a
module whose ``_tagger_*`` attributes are library objects the lint cannot type is one of
its submodules; the same code in a plain class, or with a plain object among the
attributes the prefix matches, is no module."""

from __future__ import annotations

from pathlib import Path

from tests.lint.conftest import expected_codes, findings_of, found, write_source

CONFIDENT = ("HS101", "HS102", "HS103")

_HEADS = """\
    import torch
    from zoo.taggers import CrfTagger, SpanTagger


    class MultiTask(torch.nn.Module):
        def __init__(self, vocab):
            super().__init__()
            self._tagger_ner = CrfTagger(vocab)
            self._tagger_pos = SpanTagger(vocab)
            self._tagger_chunk = torch.nn.Linear(4, 4)

        def forward(self, batch, task="ner"):
            tagger = getattr(self, "_tagger_%s" % task)
            return tagger.forward(**batch)  # HS101

        def score(self, batch, task="ner"):
            return getattr(self, "_tagger_" + task).forward(**batch)  # HS101
    """

_PLAIN_HEADS = """\
    import torch
    from zoo.taggers import CrfTagger


    class Labeller:
        def forward(self, batch):
            return batch


    class MultiTask(torch.nn.Module):
        def __init__(self, vocab):
            super().__init__()
            self._tagger_ner = CrfTagger(vocab)
            self._tagger_pos = Labeller()

        def forward(self, batch, task="ner"):
            tagger = getattr(self, "_tagger_%s" % task)
            return tagger.forward(**batch)


    class Router:
        def __init__(self, vocab):
            self._route_ner = CrfTagger(vocab)

        def run(self, batch, task="ner"):
            route = getattr(self, "_route_%s" % task)
            return route.forward(**batch)
    """


def test_heads_picked_by_name_are_submodules(tmp_path: Path) -> None:
    path = write_source(tmp_path, "heads.py", _HEADS)
    assert found(tmp_path, path, CONFIDENT) == expected_codes(path)
    assert len(expected_codes(path)) == 2
    messages = {f.line: f.message for f in findings_of(tmp_path, path, CONFIDENT)}
    assert (
        "is one of _tagger_chunk, _tagger_ner, _tagger_pos: submodules of `self`" in (messages[14])
    )


def test_heads_picked_by_name_among_plain_objects(tmp_path: Path) -> None:
    path = write_source(tmp_path, "plain_heads.py", _PLAIN_HEADS)
    assert found(tmp_path, path, CONFIDENT) == set()
