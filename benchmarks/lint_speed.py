"""Lint speed and precision: hookscope vs flake8 + flake8-no-module-forward-call.

Both run on the installed sources of ``transformers`` and ``torch`` in the same
process tree, interleaved; medians are reported. flake8 gets the same ``--jobs``.
hookscope's own flake8 plugin (entry point ``HS``) is removed from that flake8 run
so that flake8 does only its usual work plus the ``.forward(`` plugin.

``--quality`` also scores HS101/HS102 against hand labels of every non-``super()``
``.forward(...)`` call in those trees (transformers 5.24.0, torch 2.13.0), and
scores the flake8 plugin, which flags every ``.forward(...)`` call, the same way.

Usage::

    python benchmarks/lint_speed.py --jobs 2 --repeat 3 --flake8-repeat 1 --quality
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

FLAKE8_WITHOUT_HOOKSCOPE = (
    "import sys\n"
    "import flake8.plugins.finder as finder\n"
    "_orig = finder._find_importlib_plugins\n"
    "finder._find_importlib_plugins = lambda: (p for p in _orig() if p.package != 'hookscope')\n"
    "from flake8.main.cli import main\n"
    "sys.exit(main())\n"
)

# Hand labels: True = the receiver is a hookable torch module and the call skips its
# hooks (HS101), or `self.forward` in a module method other than forward/__call__ (HS102).
LABELS: dict[str, tuple[bool, str]] = {
    "transformers/activations.py:304": (False, "compiled CUDA extension object"),
    "transformers/cli/serving/systemone.py:118": (False, "Pipeline, not a module"),
    "transformers/integrations/executorch.py:242": (True, "self.model is a PreTrainedModel"),
    "transformers/integrations/executorch.py:623": (
        True,
        "ExportedProgram.module() is a GraphModule",
    ),
    "transformers/integrations/executorch.py:633": (
        True,
        "ExportedProgram.module() is a GraphModule",
    ),
    "transformers/models/bark/modeling_bark.py:1203": (True, "HS102 in generate()"),
    "transformers/models/eomt/modeling_eomt.py:627": (
        False,
        "self.forward inside forward (recursion)",
    ),
    "transformers/models/eomt_dinov3/modeling_eomt_dinov3.py:996": (
        False,
        "self.forward inside forward",
    ),
    "transformers/models/esm/modeling_esmfold.py:2253": (True, "HS102 in infer()"),
    "transformers/models/gemma3n/modeling_gemma3n.py:1072": (
        True,
        "HS102 in scale_corrected_output()",
    ),
    "transformers/models/gemma3n/modular_gemma3n.py:1421": (
        True,
        "HS102 in scale_corrected_output()",
    ),
    "transformers/models/mask2former/modeling_mask2former.py:781": (
        False,
        "self.forward inside forward",
    ),
    "transformers/models/maskformer/modeling_maskformer.py:1313": (
        False,
        "self.forward inside forward",
    ),
    "transformers/models/maskformer/modular_maskformer.py:778": (
        False,
        "self.forward inside forward",
    ),
    "transformers/models/oneformer/modeling_oneformer.py:713": (
        False,
        "self.forward inside forward",
    ),
    "transformers/models/squeezebert/modeling_squeezebert.py:117": (
        False,
        "unbound base call on self",
    ),
    "transformers/models/squeezebert/modeling_squeezebert.py:321": (True, "layer of a ModuleList"),
    "transformers/models/timm_wrapper/modeling_timm_wrapper.py:248": (
        True,
        "timm model (nn.Module)",
    ),
    "transformers/models/videomt/modeling_videomt.py:901": (False, "self.forward inside forward"),
    "transformers/models/vjepa2/modeling_vjepa2.py:966": (True, "HS102 in get_vision_features()"),
    "transformers/pipelines/base.py:1326": (False, "Pipeline.forward, not a module"),
    "transformers/pipelines/base.py:1342": (False, "Pipeline.forward, not a module"),
    "torch/_dynamo/aot_compile_types.py:134": (True, "GraphModule"),
    "torch/_dynamo/backends/debugging.py:87": (True, "GraphModule"),
    "torch/_dynamo/backends/debugging.py:280": (True, "GraphModule"),
    "torch/_dynamo/output_graph.py:387": (True, "GraphModule"),
    "torch/_dynamo/profiler.py:174": (True, "GraphModule"),
    "torch/_prims/executor.py:28": (True, "GraphModule"),
    "torch/export/unflatten.py:189": (False, "unbound call type(...).forward(self, ...)"),
    "torch/export/unflatten.py:707": (False, "unbound call type(...).forward(self, ...)"),
    "torch/jit/mobile/__init__.py:63": (False, "C++ lite-interpreter object"),
    "torch/jit/mobile/__init__.py:69": (False, "C++ lite-interpreter object"),
    "torch/nn/modules/module.py:1757": (False, "inside nn.Module's call machinery"),
    "torch/nn/modules/module.py:1768": (False, "inside nn.Module's call machinery"),
    "torch/nn/parallel/distributed.py:1888": (True, "DDP's wrapped module"),
    "torch/testing/_internal/common_quantization.py:1468": (False, "lite-interpreter module"),
    "torch/testing/_internal/distributed/ddp_under_dist_autograd_test.py:269": (True, "DDP module"),
    "torch/testing/_internal/distributed/distributed_test.py:8138": (True, "DDP module"),
    "torch/testing/_internal/distributed/rpc/jit/rpc_test.py:397": (
        False,
        "TorchScript interface: only .forward() compiles",
    ),
    "torch/testing/_internal/distributed/rpc/jit/rpc_test.py:418": (
        True,
        "ScriptModule called from Python (debatable)",
    ),
    "torch/testing/_internal/distributed/rpc/jit/rpc_test.py:838": (
        False,
        "TorchScript interface: only .forward() compiles",
    ),
    "torch/testing/_internal/distributed/rpc/jit/rpc_test.py:987": (False, "RPC proxy"),
    "torch/testing/_internal/distributed/rpc/dist_autograd_test.py:2683": (False, "RPC proxy"),
    "torch/testing/_internal/distributed/rpc/dist_autograd_test.py:2756": (False, "RPC proxy"),
    "torch/testing/_internal/distributed/rpc/dist_optimizer_test.py:156": (False, "plain class"),
    "torch/testing/_internal/distributed/rpc/dist_optimizer_test.py:157": (False, "plain class"),
    "torch/testing/_internal/distributed/rpc/dist_optimizer_test.py:229": (False, "plain class"),
    "torch/testing/_internal/distributed/rpc/dist_optimizer_test.py:230": (False, "plain class"),
    "torch/testing/_internal/distributed/rpc/dist_optimizer_test.py:257": (False, "RPC proxy"),
    "torch/testing/_internal/distributed/rpc/dist_optimizer_test.py:258": (False, "RPC proxy"),
    **{
        f"torch/testing/_internal/distributed/rpc/rpc_test.py:{n}": (False, "RPC proxy")
        for n in (5831, 5832, 5883, 5884, 5958, 5962, 5996)
    },
    **{
        f"torch/testing/_internal/distributed/nn/api/remote_module_test.py:{n}": (
            False,
            "RemoteModule refuses hooks",
        )
        for n in (38, 147, 153, 195, 212, 234, 622, 640, 649, 658, 670, 682, 694, 725, 747)
    },
}


# Held-out labels: wheels unpacked into one folder (see benchmarks/README.md), scored
# once before any change prompted by them and once after.
HELDOUT_LABELS: dict[str, tuple[bool, str]] = {
    "diffusers/hooks/hooks.py:217": (False, "saved original forward function"),
    "diffusers/guiders/guider_utils.py:184": (False, "guider is not a module"),
    "diffusers/pipelines/ledits_pp/pipeline_leditspp_stable_diffusion.py:82": (
        False,
        "plain class",
    ),
    "diffusers/pipelines/ledits_pp/pipeline_leditspp_stable_diffusion_xl.py:112": (
        False,
        "plain class",
    ),
    "peft/peft_model.py:759": (True, "super(cls, prompt_encoder).forward (HS103)"),
    "peft/tuners/adalora/model.py:230": (True, "wrapped base model"),
    "peft/tuners/boft/layer.py:133": (False, "CUDA extension"),
    "peft/tuners/xlora/classifier.py:151": (True, "nn.Sequential"),
    "peft/tuners/xlora/model.py:367": (True, "wrapped base model"),
    "timm/models/hrnet.py:828": (True, "element of a ModuleList"),
    **{
        f"peft/tuners/lora/{name}:{n}": (False, "LoraVariant: plain class with a static forward")
        for name, lines in (
            ("layer.py", (887, 1104, 1528, 1826)),
            ("gptq.py", (98,)),
            ("bnb.py", (223, 271, 499, 554)),
            ("hqq.py", (218,)),
        )
        for n in lines
    },
}


def package_dir(name: str) -> str:
    """Where an installed package lives, without importing it."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(f"{name} is not installed")
    return list(spec.submodule_search_locations)[0]


def _cpu() -> float:
    """CPU seconds used so far by this process and its waited-for descendants."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def _run(cmd: list[str], what: str) -> tuple[float, float, int]:
    wall, cpu = time.perf_counter(), _cpu()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    wall, cpu = time.perf_counter() - wall, _cpu() - cpu
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{what} failed: {proc.stderr[-2000:]}")
    return wall, cpu, len(proc.stdout.splitlines())


def time_flake8(trees: list[str], jobs: int) -> tuple[float, float, int]:
    """flake8 (its default checks plus NMF001, output filtered to NMF001)."""
    cmd = [
        sys.executable,
        "-c",
        FLAKE8_WITHOUT_HOOKSCOPE,
        "--isolated",
        "--select=NMF001",
        f"-j{jobs}",
        *trees,
    ]
    return _run(cmd, "flake8")


def time_hookscope_cli(trees: list[str], jobs: int) -> tuple[float, float, int]:
    """``python -m hookscope lint``: includes interpreter start and ``import hookscope`` (torch)."""
    cmd = [
        sys.executable,
        "-m",
        "hookscope",
        "lint",
        "--no-config",
        "--select=HS1",
        f"--jobs={jobs}",
        *trees,
    ]
    return _run(cmd, "hookscope")


def time_hookscope_api(trees: list[str], jobs: int) -> tuple[float, float, int]:
    from hookscope.lint import lint

    wall, cpu = time.perf_counter(), _cpu()
    findings = lint(trees, select=["HS1"], jobs=jobs, config=False)
    return time.perf_counter() - wall, _cpu() - cpu, len(findings)


def forward_calls(trees: list[str], site: str) -> tuple[list[str], int]:
    """``path:line`` of every ``.forward(...)`` call not through ``super()``, and that count."""
    from hookscope.lint import discover

    calls, super_calls = [], 0
    for path in discover(trees):
        data = Path(path).read_bytes()
        if b".forward" not in data:
            continue
        try:
            tree = ast.parse(data)
        except (SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "forward"
            ):
                value = node.func.value
                if (
                    isinstance(value, ast.Call)
                    and getattr(value.func, "id", "") == "super"
                    and not value.args
                ):
                    super_calls += 1
                else:
                    calls.append(f"{os.path.relpath(path, site)}:{node.lineno}")
    return calls, super_calls


def quality(trees: list[str], site: str, labels: dict[str, tuple[bool, str]] = LABELS) -> None:
    """Precision and recall of HS101-HS103 and of the flake8 plugin against ``labels``."""
    from hookscope.lint import lint

    flagged = {
        f"{os.path.relpath(f.path, site)}:{f.line}"
        for f in lint(trees, select=["HS101", "HS102", "HS103"], config=False)
    }
    calls, super_calls = forward_calls(trees, site)
    unlabelled = [c for c in calls if c not in labels]
    positives = {c for c in calls if labels.get(c, (False, ""))[0]}
    tp = len(flagged & positives)
    print(
        f"\n.forward(...) calls: {len(calls)} not through super() (hand-labelled: {len(calls) - len(unlabelled)}),"
        f" {super_calls} through super(); true bypasses: {len(positives)}"
    )
    if unlabelled:
        print(f"UNLABELLED (versions differ?): {unlabelled[:10]}")
    print(
        f"hookscope HS101-HS103: flagged {len(flagged)}, true {tp}: "
        f"precision {tp / max(len(flagged), 1):.3f}, recall {tp / max(len(positives), 1):.3f}"
    )
    for miss in sorted(positives - flagged):
        print(f"  missed: {miss} ({labels[miss][1]})")
    for wrong in sorted(flagged - positives):
        print(f"  false positive: {wrong} ({labels.get(wrong, (False, 'unlabelled'))[1]})")
    every = len(calls) + super_calls
    print(
        f"flake8-no-module-forward-call NMF001: flagged {every}, true {len(positives)}: "
        f"precision {len(positives) / max(every, 1):.3f}, recall 1.000"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--repeat", type=int, default=3, help="hookscope repetitions")
    parser.add_argument("--flake8-repeat", type=int, default=1, help="flake8 repetitions (slow)")
    parser.add_argument("--quality", action="store_true", help="also score precision/recall")
    parser.add_argument(
        "--quality-only", action="store_true", help="score precision/recall, time nothing"
    )
    parser.add_argument(
        "--heldout", metavar="DIR", help="only score the held-out wheels unpacked in DIR"
    )
    args = parser.parse_args()
    if args.heldout:
        folders = [
            str(p)
            for p in sorted(Path(args.heldout).iterdir())
            if p.is_dir() and "dist-info" not in p.name
        ]
        quality(folders, args.heldout, HELDOUT_LABELS)
        return
    if args.quality_only:
        trees = [package_dir("transformers"), package_dir("torch")]
        quality(trees, str(Path(trees[0]).parent))
        return
    if importlib.util.find_spec("flake8_no_module_forward_call") is None:
        raise SystemExit("needs the flake8 plugin: pip install flake8-no-module-forward-call")
    trees = [package_dir("transformers"), package_dir("torch")]
    site = str(Path(trees[0]).parent)
    n_files = sum(1 for tree in trees for _ in Path(tree).rglob("*.py"))
    print(
        f"trees: {', '.join(trees)} ({n_files} .py files); jobs={args.jobs}; cpus={os.cpu_count()}"
    )
    print(compile_bytecode())
    print("load average at the start: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))

    time_hookscope_api(trees, args.jobs)  # warm the page cache and the import
    runs: dict[str, list[tuple[float, float, int]]] = {"flake8": [], "cli": [], "api": []}
    for i in range(max(args.repeat, args.flake8_repeat)):
        if i < args.repeat:
            runs["api"].append(time_hookscope_api(trees, args.jobs))
            runs["cli"].append(time_hookscope_cli(trees, args.jobs))
        if i < args.flake8_repeat:
            runs["flake8"].append(time_flake8(trees, args.jobs))
    f8_wall = statistics.median(r[0] for r in runs["flake8"])
    f8_cpu = statistics.median(r[1] for r in runs["flake8"])
    print(
        f"{'tool':34s} {'wall s':>8s} {'CPU s':>8s} {'runs':>5s} {'findings':>9s} {'flake8/tool wall':>17s} {'CPU':>7s}"
    )
    names = {
        "flake8": "flake8 + NMF001",
        "cli": "hookscope CLI (incl. start-up)",
        "api": "hookscope API (in-process)",
    }
    for key, name in names.items():
        wall = statistics.median(r[0] for r in runs[key])
        cpu = statistics.median(r[1] for r in runs[key])
        found = runs[key][-1][2]
        print(
            f"{name:34s} {wall:8.2f} {cpu:8.2f} {len(runs[key]):5d} {found:9d} {f8_wall / wall:16.1f}x {f8_cpu / cpu:6.1f}x"
        )
    print("load average at the end: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    if args.quality:
        quality(trees, site)


def compile_bytecode() -> str:
    """Write hookscope's ``.pyc`` files, as ``pip install`` does, and say so.

    With ``PYTHONDONTWRITEBYTECODE`` set and an editable install, every CLI start
    would otherwise recompile the hookscope modules changed since their last
    ``.pyc`` was written, which no installed copy does.
    """
    import compileall

    import hookscope

    folder = Path(hookscope.__file__).parent
    compileall.compile_dir(str(folder), quiet=1)
    flag = os.environ.get("PYTHONDONTWRITEBYTECODE", "")
    return f"bytecode of {folder} compiled (PYTHONDONTWRITEBYTECODE={flag!r})"


if __name__ == "__main__":
    main()
