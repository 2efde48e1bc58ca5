"""Lint a small TorchSharp (C#) project: HS201 where the receiver is a module, HS202 guesses.

Needs the ``csharp`` extra (``pip install 'hookscope[csharp]'``).
Run: python examples/lint_torchsharp.py   (writes under runs/lint_torchsharp/)
"""

from __future__ import annotations

from pathlib import Path

from hookscope.lint import fix, lint, lint_run, render

BLOCKS = """\
using static TorchSharp.torch;
using static TorchSharp.torch.nn;

public class Block : Module<Tensor, Tensor>
{
    public Block() : base("block") { }
    public override Tensor forward(Tensor x) => x;
}

public class Stage  // a pipeline stage with a forward method: not a module
{
    public Tensor forward(Tensor x) => x;
}
"""

MODEL = """\
using static TorchSharp.torch;
using static TorchSharp.torch.nn;

public class Net : Module<Tensor, Tensor>
{
    private Block[] blocks = { new Block(), new Block() };
    private Stage stage = new Stage();
    private torch.distributions.transforms.Transform transform;

    public Net() : base("net") { RegisterComponents(); }

    public override Tensor forward(Tensor x)
    {
        foreach (var block in blocks) x = block.forward(x);  // HS201: skips block's hooks
        x = stage.forward(x);                                 // Stage is no module: fine
        x = transform.forward(x);                             // a distributions transform: fine
        return x;
    }

    public Tensor Run(Tensor x, SomeLibrary.Model external) => external.forward(x);  // HS202
}
"""


def main() -> None:
    folder = Path("runs") / "lint_torchsharp"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "Blocks.cs").write_text(BLOCKS, encoding="utf-8")
    (folder / "Net.cs").write_text(MODEL, encoding="utf-8")

    # HS202 (a guess: the type of `external` is not resolved) runs only when selected.
    print(render(lint(folder, config=False, select=["HS201", "HS202"]), "text"))

    for file_fix in fix(lint_run(folder, config=False, select=["HS201", "HS202"])):
        print(file_fix.diff())  # only the resolved HS201 call is rewritten to .call(...)
        Path(file_fix.path).write_text(file_fix.fixed, encoding="utf-8")
    print(
        "after --fix:",
        [f"{f.code}@{f.line}" for f in lint(folder, config=False, select=["HS201", "HS202"])],
    )


if __name__ == "__main__":
    main()
