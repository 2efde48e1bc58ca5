"""Trainer integrations: one line to monitor a Hugging Face, Lightning or accelerate run.

- `hookscope.integrations.transformers.HookscopeCallback` for ``transformers.Trainer``
  (extra ``hookscope[transformers]``);
- `hookscope.integrations.lightning.HookscopeCallback` for ``lightning.Trainer``
  (extra ``hookscope[lightning]``);
- `hookscope.integrations.accelerate.sync_step` for hand-written accelerate loops.

They sit on top of the package: they use `hookscope.Monitor` and
`hookscope.doctor` through the public API, and nothing else in hookscope
imports them, so ``import hookscope`` never imports a trainer.
"""
