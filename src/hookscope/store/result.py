"""What the writer needs of a step's result: a narrow interface, so the store never imports the Monitor.

`hookscope.monitor.records.StepResult` satisfies it; so does any object with
these attributes (a test's own results, a replay of another format).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Protocol


class StepLike(Protocol):
    """One step's results, as `StoreWriter.write` reads them.

    ``groups()`` yields ``((phase, module, tensor), {stat: value})`` per tensor;
    ``alerts`` have ``step, phase, module, tensor, rule, value``; ``tensors``
    have ``phase, module, tensor, shape, dtype``; ``first_nonfinite`` has
    ``step, phase, module, tensor, rank`` or is None.
    """

    @property
    def step(self) -> int: ...

    @property
    def rank(self) -> int: ...

    @property
    def world_size(self) -> int: ...

    @property
    def ranks(self) -> str: ...

    @property
    def alerts(self) -> Sequence[Any]: ...

    @property
    def tensors(self) -> Sequence[Any]: ...

    @property
    def first_nonfinite(self) -> Any: ...

    def groups(self) -> Iterator[tuple[tuple[str, str, str], Mapping[str, float]]]: ...
