"""The run store: written by a real Monitor, read by hookscope, pandas, DuckDB and polars."""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path

import pytest
import torch
from torch import nn

import hookscope
from hookscope.errors import HookscopeWarning, UsageError
from hookscope.sinks.store import StoreSink
from hookscope.store import StoreWriter, open_run, read_run
from hookscope.store.layout import parts
from hookscope.viz import write_report

pd = pytest.importorskip("pandas")


def _model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 2))


def _train(folder: Path, steps: int, **sink_options: object) -> hookscope.Monitor:
    model = _model()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(4, 8)
    sink = StoreSink(folder, **sink_options)  # type: ignore[arg-type]
    with hookscope.Monitor(model, sinks=[sink]) as mon:
        for _ in range(steps):
            model(x).sum().backward()
            opt.step()
            opt.zero_grad()
            mon.step()
        frame = mon.to_pandas()
    mon.frame = frame  # type: ignore[attr-defined]
    return mon


def test_the_store_holds_what_the_monitor_recorded(tmp_path: Path) -> None:
    mon = _train(tmp_path / "monitor", 5)
    got = read_run(tmp_path)
    want = mon.frame  # type: ignore[attr-defined]
    assert list(got.columns) == list(want.columns)
    key = ["step", "phase", "module", "tensor", "stat"]
    merged = want.merge(got, on=key, suffixes=("_mon", "_store"))
    assert len(merged) == len(want) == len(got)
    assert (merged.value_mon == merged.value_store).all()


def test_read_run_filters_by_module_stat_and_step_range(tmp_path: Path) -> None:
    _train(tmp_path / "monitor", 6)
    frame = read_run(tmp_path, modules=["0"], stats="mean", steps=(2, 4))
    assert sorted(frame.step.unique()) == [2, 3, 4]
    assert set(frame.module) == {"0"} and set(frame.stat) == {"mean"}
    assert set(read_run(tmp_path, phases="param").module) == {
        "0.weight",
        "0.bias",
        "2.weight",
        "2.bias",
    }
    assert read_run(tmp_path, steps=(None, 0)).step.max() == 0
    with pytest.raises(UsageError, match="steps must be a"):
        read_run(tmp_path, steps=3)  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="holds no monitor results"):
        read_run(tmp_path / "monitor" / "records")


def test_pandas_duckdb_and_polars_read_the_store_without_hookscope(tmp_path: Path) -> None:
    _train(tmp_path / "monitor", 4)
    want = len(read_run(tmp_path))
    assert len(pd.read_parquet(tmp_path / "monitor" / "records")) == want
    duckdb = pytest.importorskip("duckdb")
    glob = str(tmp_path / "monitor" / "records" / "*.parquet")
    con = duckdb.connect()
    count = con.execute(f"SELECT count(*) FROM read_parquet('{glob}')").fetchall()
    assert count == [(want,)]
    top = con.execute(
        f"SELECT module, max(value) AS v FROM read_parquet('{glob}') "
        "WHERE phase = 'param' AND stat = 'norm' GROUP BY module ORDER BY v DESC LIMIT 1"
    ).fetchall()
    assert top[0][0].endswith(("weight", "bias"))
    con.close()
    pl = pytest.importorskip("polars")
    assert pl.scan_parquet(glob).select(pl.len()).collect().item() == want


def test_parts_are_compacted_and_a_reader_skips_what_a_compaction_replaced(tmp_path: Path) -> None:
    _train(tmp_path / "monitor", 9, flush_seconds=1e-9, compact_every=4)
    names = sorted(p.path.name for p in parts(tmp_path / "monitor" / "records"))
    # 9 flushes: 1-4 and 5-8 compacted while writing; 9 alone is left as it is at close
    assert names == [
        "main-000001-000004.parquet",
        "main-000005-000008.parquet",
        "main-000009.parquet",
    ]
    assert sorted(read_run(tmp_path).step.unique()) == list(range(9))
    # a crash between a compaction's rename and the deletion of its parts: no double rows
    records = tmp_path / "monitor" / "records"
    frame = read_run(tmp_path)
    (records / "main-000003.parquet").write_bytes((records / names[0]).read_bytes())
    assert len(read_run(tmp_path)) == len(frame)


def test_the_first_nonfinite_step_is_flushed_at_once(tmp_path: Path) -> None:
    model = _model()
    x = torch.randn(4, 8)
    sink = StoreSink(tmp_path / "monitor", flush_seconds=3600)
    with hookscope.Monitor(model, sinks=[sink]) as mon:
        model(x)
        mon.step()
        assert read_run(tmp_path).empty if _has_parts(tmp_path) else True
        with torch.no_grad():
            model[0].weight[0, 0] = math.nan
        model(x)
        mon.step()
        # nothing closed, the hour not over: the NaN step (and the one before) are on disk
        frame = read_run(tmp_path)
        assert sorted(frame.step.unique()) == [0, 1]
        first = open_run(tmp_path).first_nonfinite()  # type: ignore[union-attr]
        assert first is not None and (first["step"], first["module"]) == (1, "0")


def _has_parts(root: Path) -> bool:
    return bool(parts(root / "monitor" / "records"))


KILLED = textwrap.dedent(
    """
    import sys, torch
    from torch import nn
    import hookscope
    from hookscope.sinks.store import StoreSink
    model = nn.Sequential(*[nn.Linear(16, 16) for _ in range(8)])
    x = torch.randn(4, 16)
    with hookscope.Monitor(model, sinks=[StoreSink(sys.argv[1], flush_seconds=0.05)]) as mon:
        step = 0
        while True:
            model(x).sum().backward()
            mon.step()
            step += 1
            if step == 30:
                print("running", flush=True)
    """
)


def test_kill_9_while_writing_leaves_a_readable_store_and_report(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(KILLED)
    proc = subprocess.Popen(
        [sys.executable, str(script), str(tmp_path / "run" / "monitor")],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "running"
        time.sleep(0.5)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait(timeout=60)
        if proc.stdout is not None:
            proc.stdout.close()
    frame = read_run(tmp_path / "run")
    steps = sorted(frame.step.unique())
    assert len(steps) >= 30 and steps == list(range(len(steps)))  # every flushed step, whole
    assert (frame.groupby("step").size() == frame.groupby("step").size().iloc[0]).all()
    result = write_report(tmp_path / "run")
    assert result.path.stat().st_size > 0
    assert not [n for n in result.notes if "unreadable" in n]


FULL_DISK = textwrap.dedent(
    """
    import resource, signal, sys, warnings, torch
    from torch import nn
    import hookscope
    from hookscope.sinks.store import StoreSink
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
    model = nn.Sequential(*[nn.Linear(16, 16) for _ in range(32)])
    x = torch.randn(4, 16)
    sink = StoreSink(sys.argv[1], flush_seconds=1e-9, compact_every=8)
    resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv[2]), resource.RLIM_INFINITY))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with hookscope.Monitor(model, sinks=[sink]) as mon:
            for _ in range(12):
                model(x).sum().backward()
                mon.step()
    print(len(caught), sink.written_steps, mon.step_index)
    print(caught[0].message if caught else "")
    """
)


def test_a_full_disk_warns_once_training_goes_on_and_counts_only_what_was_written(
    tmp_path: Path,
) -> None:
    script = tmp_path / "train.py"
    script.write_text(FULL_DISK)
    folder = tmp_path / "run" / "monitor"
    # one step's part (~7.5 KB) fits under the file-size limit; the compaction of eight does not
    proc = subprocess.run(
        [sys.executable, str(script), str(folder), "10000"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    count, written, taken = proc.stdout.splitlines()[0].split()
    assert count == "1" and taken == "12"
    assert int(written) == len(read_run(tmp_path / "run").step.unique()) < 12
    assert "cannot write" in proc.stdout and "training goes on" in proc.stdout


def test_a_second_writer_of_one_store_writes_beside_the_first(tmp_path: Path) -> None:
    first = StoreWriter(tmp_path / "monitor")
    with pytest.warns(HookscopeWarning, match="writing as 'pid"):
        second = StoreWriter(tmp_path / "monitor")
    assert second.writer == f"pid{os.getpid()}"
    first.close()
    second.close()


def test_options_are_checked_once(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="flush_seconds must be > 0, got 0"):
        StoreWriter(tmp_path / "a", flush_seconds=0)
    with pytest.raises(UsageError, match="compact_every must be >= 2, got 1"):
        StoreWriter(tmp_path / "b", compact_every=1)
    (tmp_path / "file").write_text("")
    with pytest.raises(UsageError, match="is a file"):
        StoreWriter(tmp_path / "file")


def test_old_jsonl_runs_open_through_the_same_reader(tmp_path: Path) -> None:
    from hookscope.sinks import JsonlSink

    model = _model()
    with hookscope.Monitor(model, sinks=[JsonlSink(tmp_path / "monitor.jsonl")]) as mon:
        for _ in range(3):
            model(torch.randn(2, 8))
            mon.step()
        want = mon.to_pandas()
    got = read_run(tmp_path, stats="mean")
    assert len(got) == (want.stat == "mean").sum()
    assert set(got.columns) == set(want.columns)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert read_run(tmp_path, table="alerts").empty
