"""Every compile test starts from an empty dynamo cache and leaves one behind."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch._dynamo as dynamo


@pytest.fixture(autouse=True)
def _fresh_dynamo() -> Iterator[None]:
    dynamo.reset()
    yield
    dynamo.reset()
