"""Bypass detection (``hookscope run --doctor``) on a transformers 5.x GPT-2 whose decoder layers
are wrapped by ``GradientCheckpointingLayer.__init_subclass__`` (CPU, fp32, forward).

As under ``hookscope run --doctor``, every class is watched *before* transformers
is imported, so each ``GPT2Block`` forward reaches the probe through the
wrapper and the probe has to walk up to the layer's own ``__call__``
(`hookscope.hooks.probe._wrapped_call`). Compared, interleaved in one run:
  watched   the forward while the detector watches every class
  detached  the same forward after ``detach()`` (what remains is the pass-through
            the wrapper keeps calling: the closest thing to a plain forward here)

Usage: .venv/bin/python benchmarks/bypass_wrappers.py [--reps 9] [--threads 1]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from hookscope.hooks.bypass import BypassDetector
from hookscope.hooks.probe import ORIG_ATTR


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=9)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: default)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    detector = BypassDetector(None)
    detector.attach_all()
    import transformers  # defined while watched, as in a script under run --doctor

    config = transformers.GPT2Config(
        n_layer=6, n_embd=256, n_head=4, vocab_size=1000, bos_token_id=0, eos_token_id=0
    )
    model = transformers.GPT2LMHeadModel(config).eval()
    wrapper = type(model.transformer.h[0]).forward
    assert hasattr(wrapper.__wrapped__, ORIG_ATTR), "the layer's wrapper should wrap the probe"
    ids = torch.randint(0, 1000, (4, 128))

    def forward() -> float:
        start = time.process_time()
        with torch.no_grad():
            model(ids)
        return time.process_time() - start

    forward()
    watched, detached = [], []
    for _ in range(args.reps):
        watched.append(forward())
        detector.detach()
        detached.append(forward())
        detector = BypassDetector(None)
        detector.attach_all()
    detector.detach()
    assert detector.records == [], detector.records
    w, d = statistics.median(watched), statistics.median(detached)
    ratios = sorted(a / b for a, b in zip(watched, detached, strict=True))
    print(f"GPT-2 (6 layers, 256 wide, batch 4 x 128 tokens), {args.reps} paired reps")
    print(f"detached {d * 1e3:.1f} ms, watched {w * 1e3:.1f} ms: {w / d:.3f}x (median)")
    print(f"paired ratios: min {ratios[0]:.3f}x, max {ratios[-1]:.3f}x; bypasses reported: 0")


if __name__ == "__main__":
    main()
