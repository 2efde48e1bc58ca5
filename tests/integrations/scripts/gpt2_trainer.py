"""A transformers 5.x GPT-2 training script, run by the tests under ``hookscope run``.

Flags: ``--checkpointing`` (gradient checkpointing on), ``--plant`` (one direct
``.forward()`` call on a decoder layer at the start of the 2nd and 3rd optimizer steps).
"""

from __future__ import annotations

import sys
import tempfile
from typing import Any

import torch
import transformers

PLANT = "--plant" in sys.argv


class Planted(transformers.TrainerCallback):
    def on_step_begin(self, args: Any, state: Any, control: Any, model: Any, **kw: Any) -> None:
        if state.global_step == 0:
            return  # once the model has run: its layers are then part of it for --monitor
        with torch.no_grad():
            model.transformer.h[0].forward(torch.zeros(1, 4, 16))  # noqa: HS101  PLANTED


def main() -> None:
    torch.manual_seed(0)
    config = transformers.GPT2Config(
        vocab_size=64, n_positions=16, n_embd=16, n_layer=2, n_head=2,
        bos_token_id=0, eos_token_id=0,
    )  # fmt: skip
    model = transformers.GPT2LMHeadModel(config)
    if "--checkpointing" in sys.argv:
        model.gradient_checkpointing_enable()
    ids = torch.randint(0, 64, (12, 8))
    data = [{"input_ids": row, "labels": row} for row in ids]
    with tempfile.TemporaryDirectory() as out:
        args = transformers.TrainingArguments(
            output_dir=out,
            max_steps=3,
            per_device_train_batch_size=2,
            gradient_accumulation_steps=2,
            report_to=[],
            save_strategy="no",
            use_cpu=True,
            disable_tqdm=True,
        )
        callbacks = [Planted()] if PLANT else []
        transformers.Trainer(
            model=model, args=args, train_dataset=data, callbacks=callbacks
        ).train()


if __name__ == "__main__":
    main()
