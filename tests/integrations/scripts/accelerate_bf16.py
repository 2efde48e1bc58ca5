"""An accelerate bf16 training loop on a tiny GPT-2, run by the tests under ``hookscope run``.

Flag: ``--plant`` (one direct ``.forward()`` call on the final layer norm per batch after the first).
"""

from __future__ import annotations

import sys

import accelerate
import torch
import transformers


def main() -> None:
    torch.manual_seed(0)
    accelerator = accelerate.Accelerator(
        cpu=True, mixed_precision="bf16", gradient_accumulation_steps=2
    )
    config = transformers.GPT2Config(
        vocab_size=64, n_positions=16, n_embd=16, n_layer=2, n_head=2,
        bos_token_id=0, eos_token_id=0,
    )  # fmt: skip
    model = transformers.GPT2LMHeadModel(config)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    ids = torch.randint(0, 64, (12, 8))
    loader = torch.utils.data.DataLoader(ids, batch_size=2)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    for i, batch in enumerate(loader):
        if "--plant" in sys.argv and i > 0:  # once the model has run (see --monitor)
            with torch.no_grad():
                model.transformer.ln_f.forward(torch.zeros(1, 16))  # noqa: HS101  PLANTED
        with accelerator.accumulate(model):
            loss = model(input_ids=batch, labels=batch).loss
            accelerator.backward(loss)
            optimizer.step()
            optimizer.zero_grad()


if __name__ == "__main__":
    main()
