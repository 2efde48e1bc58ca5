"""Results of library calls that the library documents as torch modules (#15): element 0
of ``deepspeed.initialize(...)`` (a ``DeepSpeedEngine``) and the ``policy`` of a
stable-baselines3 algorithm; ``make()[0]`` and ``first, *_ = make()`` read like
``first, second = make()``."""

from __future__ import annotations

from pathlib import Path

from tests.lint.conftest import expected_codes, found, write_source

CONFIDENT = ("HS101", "HS102", "HS103")


def test_a_deepspeed_engine_and_a_stable_baselines3_policy(tmp_path: Path) -> None:
    path = write_source(
        tmp_path,
        "train.py",
        """\
        import deepspeed
        from stable_baselines3 import PPO
        from sb3_contrib import RecurrentPPO


        def train(model, conf, batch):
            engine, optimizer, _, _ = deepspeed.initialize(config=conf, model=model)
            return engine.forward(batch)  # HS101


        def train_starred(model, batch):
            engine, *_ = deepspeed.initialize(model=model)
            return engine.forward(batch)  # HS101


        def train_indexed(model, batch):
            engine = deepspeed.initialize(model=model)[0]
            return engine.forward(batch)  # HS101


        def rollout(env, obs):
            model = PPO("MlpPolicy", env)
            return model.policy.forward(obs)  # HS101


        def rollout_loaded(obs):
            policy = RecurrentPPO.load("agent.zip").policy
            return policy.forward(obs)  # HS101
        """,
    )
    assert found(tmp_path, path, CONFIDENT) == expected_codes(path)


def test_other_elements_and_plain_classes_so_named_stay_unflagged(tmp_path: Path) -> None:
    path = write_source(
        tmp_path,
        "train.py",
        """\
        import deepspeed


        class Policy:
            def forward(self, x):
                return x


        class PPO:  # the project's own, a plain class
            def __init__(self):
                self.policy = Policy()


        def train(model, batch):
            _, optimizer, *_ = deepspeed.initialize(model=model)
            return optimizer.forward(batch)


        def rollout(obs):
            model = PPO()
            return model.policy.forward(obs)
        """,
    )
    assert found(tmp_path, path, CONFIDENT) == expected_codes(path) == set()


def test_an_element_of_what_a_project_function_returns(tmp_path: Path) -> None:
    path = write_source(
        tmp_path,
        "build.py",
        """\
        from torch import nn


        class Scorer:
            def forward(self, x):
                return x


        def make():
            return nn.Linear(2, 2), Scorer(), 3


        def run(x):
            first, *rest = make()
            net = make()[0]
            scorer = make()[1]
            return first.forward(x), net.forward(x), scorer.forward(x)  # HS101 HS101
        """,
    )
    assert found(tmp_path, path, CONFIDENT) == expected_codes(path)
