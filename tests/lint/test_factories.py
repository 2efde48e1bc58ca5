"""Modules built by tables, base classes and subclasses, and handed on (#15): what the
calls of a table's entries build, callers that import a function under another name,
constructors inherited by subclasses, attributes bound only by subclasses, items of a
class's ``__getitem__``, and attributes named at run time. Each has a plain-class twin
that must give no finding."""

from __future__ import annotations

from pathlib import Path

from hookscope.lint import lint
from tests.lint.conftest import expected_codes, found, write_source

CONFIDENT = ("HS101", "HS102", "HS103")


def _alone(path: Path) -> set[tuple[int, str]]:
    """The findings of ``path`` linted on its own (the pre-commit hook's way)."""
    return {(f.line, f.code) for f in lint(path, select=list(CONFIDENT), config=False)}


def _nets(root: Path) -> None:
    write_source(
        root,
        "pkg/nets.py",
        """\
        from torch import nn


        class GCNNet(nn.Module):
            def forward(self, x):
                return x


        class GATNet(nn.Module):
            def forward(self, x):
                return x


        class Node:
            def forward(self, x):
                return x


        class Step:
            def forward(self, x):
                return x


        def GIN(params):
            return GATNet()
        """,
    )


def test_a_registry_table_builds_modules_and_aliased_imports_pass_them(tmp_path: Path) -> None:
    _nets(tmp_path)
    write_source(
        tmp_path,
        "pkg/load.py",
        """\
        from pkg.nets import GIN, GATNet, GCNNet, Node, Step


        def build_net(name, params):
            models = {"gcn": GCNNet, "gat": GATNet, "gin": GIN}
            return models[name](params)


        def build_step(name):
            steps = {"node": Node, "step": Step}
            return steps[name]()


        def build_any(name):
            table = {"gcn": GCNNet, "node": Node}
            return table.get(name)()
        """,
    )
    train = write_source(
        tmp_path,
        "pkg/train.py",
        """\
        def train_dense(model, x):
            return model.forward(x)  # HS101


        def train_sparse(model, x):
            return model.forward(x)  # HS101


        def run_steps(step, x):
            return step.forward(x)


        def run_any(thing, x):
            return thing.forward(x)
        """,
    )
    # A namesake in another module, imported under the same alias with a plain object.
    other = write_source(
        tmp_path,
        "pkg/other_train.py",
        """\
        def train_dense(model, x):
            return model.forward(x)
        """,
    )
    write_source(
        tmp_path,
        "main.py",
        """\
        from pkg.load import build_any, build_net, build_step
        from pkg.nets import Node


        def main(kind, name):
            model = build_net(name, {})
            model = model.to("cpu")
            if kind == "dense":
                from pkg.train import train_dense as train_epoch
            else:
                from pkg.train import train_sparse as train_epoch
            train_epoch(model, 1)
            from pkg.train import run_any, run_steps

            run_steps(build_step(name), 2)
            run_any(build_any(name), 3)


        def other():
            from pkg.other_train import train_dense as train_epoch

            train_epoch(Node(), 1)
        """,
    )
    assert found(tmp_path, train, CONFIDENT) == expected_codes(train)
    assert found(tmp_path, other, CONFIDENT) == set()
    assert _alone(train) == expected_codes(train)


def test_a_base_class_constructor_inherited_by_subclasses(tmp_path: Path) -> None:
    _nets(tmp_path)
    trainer = write_source(
        tmp_path,
        "pkg/trainer.py",
        """\
        class Trainer:
            def __init__(self, model, optimizer=None):
                self.model = model
                self.optimizer = optimizer


        class Runner:
            def __init__(self, job):
                self.job = job


        class Holder:
            def __init__(self, model):
                self.model = model


        class Loop:
            def __init__(self, net):
                self.net = net


        class StepLoop(Loop):
            def step(self, x):
                return self.net.forward(x)  # HS101


        class Box:
            def __init__(self, item):
                self.item = item


        class StepBox(Box):
            def go(self, x):
                return self.item.forward(x)
        """,
    )
    act = write_source(
        tmp_path,
        "pkg/act.py",
        """\
        from pkg.nets import Node
        from pkg.trainer import Holder, Runner, Trainer


        class ActTrainer(Trainer):
            def train_step(self, x):
                return self.model.forward(x)  # HS101


        class StepRunner(Runner):
            def go(self, x):
                return self.job.forward(x)


        # A subclass's own __init__ hands Holder a plain object through super(): what
        # Holder's holds is not one kind, though every call here passes a module.
        class Plain(Holder):
            def train_step(self, x):
                return self.model.forward(x)


        class OwnInit(Holder):
            def __init__(self, model):
                super().__init__(Node())
                self.net = model
        """,
    )
    # Another class named Trainer, built with a plain object: a namesake, left out.
    write_source(
        tmp_path,
        "atari/trainer.py",
        """\
        class Trainer:
            def __init__(self, model):
                self.model = model
        """,
    )
    write_source(
        tmp_path,
        "run.py",
        """\
        from atari.trainer import Trainer
        from pkg.act import ActTrainer, OwnInit, Plain, StepRunner
        from pkg.nets import GCNNet, Node, Step
        from pkg.trainer import StepBox, StepLoop


        def main():
            ActTrainer(model=GCNNet(), optimizer=None)
            StepRunner(Step())
            Trainer(Node())
            Plain(GCNNet())
            OwnInit(GCNNet())
            StepLoop(GCNNet())
            StepBox(Step())
        """,
    )
    assert found(tmp_path, act, CONFIDENT) == expected_codes(act)
    assert found(tmp_path, trainer, CONFIDENT) == expected_codes(trainer)
    assert _alone(act) == expected_codes(act)


def test_attributes_bound_only_by_subclasses_in_other_files(tmp_path: Path) -> None:
    _nets(tmp_path)
    write_source(
        tmp_path,
        "pkg/feature.py",
        """\
        from torch import nn


        class OutputFeature(nn.Module):
            def make_decoder(self) -> nn.Module:
                return nn.Linear(2, 2)


        class Stage:
            pass


        class MixedBase:
            pass
        """,
    )
    write_source(
        tmp_path,
        "pkg/features.py",
        """\
        from torch import nn

        from pkg.feature import MixedBase, OutputFeature, Stage
        from pkg.nets import Node, Step


        class Binary(OutputFeature):
            def __init__(self):
                super().__init__()
                self.decoder_obj = self.make_decoder()


        class Category(OutputFeature):
            def __init__(self):
                super().__init__()
                self.decoder_obj = nn.Linear(3, 3)


        class First(Stage):
            def __init__(self):
                self.step = Step()


        class Second(Stage):
            def __init__(self):
                self.step = Node()


        class Half(MixedBase):
            def __init__(self):
                self.part = nn.Linear(2, 2)


        class Other(MixedBase):
            def __init__(self):
                self.part = Step()
        """,
    )
    use = write_source(
        tmp_path,
        "pkg/use.py",
        """\
        from pkg.feature import MixedBase, OutputFeature, Stage


        def decode(feature: OutputFeature, stage: Stage, mixed: MixedBase, x):
            a = feature.decoder_obj.forward(x)  # HS101
            b = stage.step.forward(x)
            return a, b, mixed.part.forward(x)
        """,
    )
    assert found(tmp_path, use, CONFIDENT) == expected_codes(use)


def test_items_attributes_settled_in_init_and_names_built_at_run_time(tmp_path: Path) -> None:
    _nets(tmp_path)
    path = write_source(
        tmp_path,
        "pkg/heads.py",
        """\
        from torch import nn

        from pkg.nets import Step


        class Ensemble(nn.Module):
            def __init__(self, n):
                super().__init__()
                self.members = []
                for _ in range(n):
                    self.members.append(make_member())
                self.members = nn.ModuleList(self.members)

            def __getitem__(self, i):
                return self.members[i]


        class Queue:
            def __init__(self):
                self.items = [Step()]

            def __getitem__(self, i):
                return self.items[i]


        class Discriminators(nn.Module):
            def __init__(self, names, scales):
                super().__init__()
                for name in names:
                    setattr(self, "net_D_" + name, nn.Linear(2, 2))
                for n in range(scales):
                    setattr(self, "net_DT%d" % n, nn.Linear(2, 2))
                    setattr(self, "step_{}".format(n), Step())

            def run(self, name, n, x):
                a = getattr(self, "net_D_" + name).forward(x)  # HS101
                b = getattr(self, "net_DT%d" % n).forward(x)  # HS101
                return a, b, getattr(self, "step_{}".format(n)).forward(x)


        def make_member():
            return object()


        def check(x):
            ensemble = Ensemble(2)
            queue = Queue()
            return ensemble[0].forward(x), queue[0].forward(x)  # HS101
        """,
    )
    assert found(tmp_path, path, CONFIDENT) == expected_codes(path)


def test_a_forward_parameter_that_some_calls_leave_at_none(tmp_path: Path) -> None:
    path = write_source(
        tmp_path,
        "vit.py",
        """\
        from torch import nn


        class Prompt(nn.Module):
            def forward(self, q, x):
                return x


        class Hint:
            def forward(self, q, x):
                return x


        class ViT(nn.Module):
            def forward(self, x, prompt=None, q=None):
                if prompt is not None:
                    x = prompt.forward(q, x)  # HS101
                return x


        class Tagger(nn.Module):
            def forward(self, x, hint=None):
                if hint is not None:
                    x = hint.forward(None, x)
                return x


        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.feat = ViT()
                self.tag = Tagger()
                self.prompt = Prompt()

            def forward(self, x):
                q = self.feat(x)
                x = self.tag(x)
                x = self.tag(x, hint=Hint())
                return self.feat(x, prompt=self.prompt, q=q)
        """,
    )
    assert found(tmp_path, path, CONFIDENT) == expected_codes(path)


def test_an_argument_that_the_callee_uses_as_a_module(tmp_path: Path) -> None:
    write_source(
        tmp_path,
        "pkg/hooks.py",
        """\
        def register_hooks(model, hook):
            handles = []
            for name, module in model.named_modules():
                handles.append(module.register_forward_hook(hook))
            return handles


        def maybe_hooks(model, hook):
            if hasattr(model, "named_modules"):
                return [m.register_forward_hook(hook) for _, m in model.named_modules()]
            return []


        def rebound(model, hook):
            model = model.inner
            return list(model.named_modules())
        """,
    )
    path = write_source(
        tmp_path,
        "pkg/calibrate.py",
        """\
        import torch

        from pkg.hooks import maybe_hooks, rebound, register_hooks


        def calibrate(model, batches, hook):
            handles = register_hooks(model, hook)
            for batch in batches:
                model.forward(batch)  # HS101
            return handles


        def probe(runner, batches, hook):
            maybe_hooks(runner, hook)
            rebound(runner, hook)
            return [runner.forward(b) for b in batches]
        """,
    )
    assert found(tmp_path, path, CONFIDENT) == expected_codes(path)


def test_a_name_rebound_in_a_loop_body_holds_its_last_value(tmp_path: Path) -> None:
    _nets(tmp_path)
    path = write_source(
        tmp_path,
        "pkg/kernels.py",
        """\
        from pkg.nets import GATNet, GCNNet, Node, Step


        def score(xs, nu):
            for x in xs:
                kernel = {0.5: GCNNet, 1.5: GATNet}[nu]
                kernel = kernel()
                kernel = kernel.forward(x) + 1  # HS101


        def steps(xs, nu):
            for x in xs:
                step = {0.5: Node, 1.5: Step}[nu]
                step = step()
                step = step.forward(x) + 1
        """,
    )
    assert found(tmp_path, path, CONFIDENT) == expected_codes(path)


def test_a_table_of_functions_is_not_its_first_function(tmp_path: Path) -> None:
    path = write_source(
        tmp_path,
        "builders.py",
        """\
        from torch import nn


        class Schedule:
            def forward(self, step):
                return step


        def make_net(cfg):
            return nn.Linear(2, 2)


        def make_head(cfg):
            return nn.Linear(2, 1)


        def make_schedule(cfg):
            return Schedule()


        NETS = {"net": make_net, "head": make_head}
        PARTS = {"net": make_net, "schedule": make_schedule}


        def run(name, cfg, x):
            make = NETS[name]
            a = make(cfg).forward(x)  # HS101
            b = PARTS[name](cfg).forward(x)
            build = PARTS.get(name)
            return a, b, build(cfg).forward(x)
        """,
    )
    assert found(tmp_path, path, CONFIDENT) == expected_codes(path)
