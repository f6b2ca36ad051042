"""Where a training step goes: torch.profiler over transduce's bf16 training steps, beside
the matmul peak measured in the same process.

    python benchmarks/speed/profile_train.py --data data/multi30k --run-dir runs/bench/en-de-2h

The model of ``--config`` (by default the d_model 256 recipe run.py measures), fresh
weights, 4,096-token batches of Multi30k train; the step is run.py's (autocast forward,
loss, backward, clipping, Adam). Warm-up steps, then the profiled ones; operators by self
CPU time go to benchmarks/speed/profile_train.md.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch
from profile_beam import operator_table
from torch.profiler import ProfilerActivity, profile
from train_speed import (
    CONFIG,
    build_for_training,
    load_setup,
    matmul_peak,
    train_loss,
    training_batches,
)

HERE = Path(__file__).parent


def main() -> None:
    from transduce.device import autocast
    from transduce.training.schedule import paper_adam

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="folder with the Multi30k raw files")
    parser.add_argument("--run-dir", required=True, help="a run whose tokenizer is used")
    parser.add_argument("--config", default=str(CONFIG))
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--warmup-steps", type=int, default=4)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", default=str(HERE / "profile_train.md"))
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    cfg, tokenizer, src, tgt = load_setup(args)
    batches = training_batches(src, tgt, tokenizer, 4096, args.warmup_steps + args.steps)
    model = build_for_training("transduce", cfg, tokenizer).train()
    optimizer = paper_adam(model.parameters())
    device = torch.device("cpu")

    def step(s, t) -> None:
        with autocast(device, "bf16"):
            loss = train_loss("transduce", model, s, t, tokenizer.pad_id, cfg.label_smoothing)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    for s, t in batches[: args.warmup_steps]:
        step(s, t)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for s, t in batches[args.warmup_steps :]:
            step(s, t)
    peak = matmul_peak("bfloat16")
    events = sorted(prof.key_averages(), key=lambda e: -e.self_cpu_time_total)
    total = sum(e.self_cpu_time_total for e in events)
    matmuls = sum(e.self_cpu_time_total for e in events if e.key in ("aten::mm", "aten::addmm",
                                                                      "aten::bmm"))  # fmt: skip
    lines = [
        f"`python benchmarks/speed/profile_train.py --steps {args.steps} --threads "
        f"{args.threads}`: {args.steps} bf16 training steps of 4,096-token batches, the "
        f"operators' own time {total / 1000 / args.steps:.0f} ms a step; matrix products "
        f"(mm, addmm, bmm) {100 * matmuls / total:.0f}% of it. The bf16 matmul peak "
        f"measured in the same process: {peak / 1e12:.2f} TFLOP/s.\n",
    ]
    lines += operator_table(events, total, per=args.steps)
    Path(args.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
