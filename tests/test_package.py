"""The public facade and the command line basics."""

from __future__ import annotations

import subprocess
import sys
import types
from pathlib import Path

import pytest

import hookscope
from hookscope.cli.main import main
from hookscope.errors import HookscopeError, MissingExtraError, require_extra


def test_all_is_sorted_and_complete() -> None:
    assert hookscope.__all__ == sorted(hookscope.__all__)
    for name in hookscope.__all__:
        assert getattr(hookscope, name) is not None
    public = {
        name
        for name, value in vars(hookscope).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    }
    assert public - {"annotations", "TYPE_CHECKING", "Any"} == set(hookscope.__all__) - {
        "__version__"
    }
    assert callable(hookscope.doctor)
    assert callable(hookscope.summary)
    assert callable(hookscope.lint)


def test_import_and_lint_command_do_not_import_torch(tmp_path: Path) -> None:
    (tmp_path / "ok.py").write_text("x = 1\n")
    code = (
        "import sys\nfrom hookscope.cli.main import main\n"
        f"rc = main(['lint', {str(tmp_path)!r}])\n"
        "print(rc, 'torch' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.split() == ["0", "False"]


def test_capture_and_monitor_do_not_import_dynamo() -> None:
    # ~0.7 s of imports, and with dynamo loaded a gloo rank that ran async
    # collectives aborts now and then at exit: only compiled models need it
    code = (
        "import sys, torch, hookscope\n"
        "model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU())\n"
        "with hookscope.capture(model), hookscope.Monitor(model) as mon:\n"
        "    model(torch.randn(2, 4))\n"
        "    mon.step()\n"
        "print('torch._dynamo' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300
    )
    assert out.stdout.split() == ["False"]


def test_every_error_is_a_hookscope_error() -> None:
    from hookscope import errors

    classes = [v for v in vars(errors).values() if isinstance(v, type) and issubclass(v, Exception)]
    warnings = [c for c in classes if issubclass(c, Warning)]
    assert all(issubclass(c, errors.HookscopeWarning) for c in warnings)
    assert all(issubclass(c, HookscopeError) for c in classes if c not in warnings)


def test_require_extra_names_the_extra() -> None:
    with pytest.raises(MissingExtraError, match=r"pip install 'hookscope\[plots\]'"):
        require_extra("no_such_module_xyz", "plots")


def test_version_and_python_dash_m() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "hookscope", "--version"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    assert out.stdout.strip() == f"hookscope {hookscope.__version__}"


def test_hooks_command_lists_hooks_as_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "pruned.py"
    spec.write_text(
        "from torch import nn\nfrom torch.nn.utils import prune\n"
        "def build(width=4):\n"
        "    m = nn.Sequential(nn.Linear(width, width))\n"
        "    prune.random_unstructured(m[0], 'weight', amount=0.5)\n"
        "    return m\n"
    )
    assert main(["hooks", f"{spec}:build", "--kwargs", '{"width": 6}', "--format", "json"]) == 0
    out = capsys.readouterr().out
    assert '"module": "0"' in out and "RandomUnstructured" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["hooks", "nosuchmodule_xyz:build"], "cannot import 'nosuchmodule_xyz'"),
        (["hooks", "hookscope.zoo"], "bad MODEL_SPEC"),
        (["hooks", "hookscope.zoo:nothing"], "has no attribute 'nothing'"),
        (["hooks", "hookscope.zoo:small_cnn", "--kwargs", "{bad"], "not valid JSON"),
        (["hooks", "missing/file.py:build"], "file not found"),
    ],
)
def test_bad_model_spec_exits_2_with_one_line(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and err.count("\n") == 1


def test_a_reader_that_goes_away_ends_the_run_quietly(tmp_path: Path) -> None:
    # `hookscope lint . | head -1`: far more output than a pipe holds, reader gone
    functions = "".join(f"def f{i}(x):\n    return model.layer.forward(x)\n" for i in range(1500))
    source = f"from torch import nn\nmodel = nn.Sequential()\n{functions}"
    (tmp_path / "many.py").write_text(source)
    with subprocess.Popen(
        [sys.executable, "-m", "hookscope", "lint", str(tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        assert b"HS10" in proc.stdout.readline()
        proc.stdout.close()
        err = proc.stderr.read().decode()
        assert proc.wait(timeout=120) == 141
    assert "Traceback" not in err and "BrokenPipe" not in err


def test_bad_arguments_exit_2_without_traceback() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "hookscope", "hooks"], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 2 and "Traceback" not in out.stderr
