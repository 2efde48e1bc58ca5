"""Monitor a Hugging Face Trainer run with one callback (tiny GPT-2 from a config, CPU, offline).

Run: python examples/trainer_transformers.py
Results: the run store runs/trainer_transformers/hookscope/monitor/ and doctor.json.
"""

from __future__ import annotations

import torch
import transformers

from hookscope.integrations.transformers import HookscopeCallback

config = transformers.GPT2Config(
    vocab_size=128, n_positions=32, n_embd=32, n_layer=2, n_head=2, bos_token_id=0, eos_token_id=0
)
model = transformers.GPT2LMHeadModel(config)
ids = torch.randint(0, 128, (64, 16))
data = [{"input_ids": row, "labels": row} for row in ids]
args = transformers.TrainingArguments(
    output_dir="runs/trainer_transformers",
    max_steps=10,
    per_device_train_batch_size=4,
    gradient_accumulation_steps=2,
    logging_steps=5,
    report_to=[],  # e.g. ["tensorboard"]: the hookscope/* values go there too
    save_strategy="no",
    use_cpu=True,
)
callback = HookscopeCallback(log_stats=["param/norm"])
trainer = transformers.Trainer(model=model, args=args, train_dataset=data, callbacks=[callback])
trainer.train()

assert callback.monitor is not None
print(f"steps recorded: {[r.step for r in callback.monitor.results]}")  # 1..10, one per update
for logs in trainer.state.log_history:
    if "grad_norm" in logs:
        print(f"step {logs['step']}: Trainer grad_norm {logs['grad_norm']:.4f}, "
              f"hookscope {logs['hookscope/grad_norm']:.4f}")  # fmt: skip
print("doctor:", "clean" if callback.doctor_report.ok else callback.doctor_report)
