"""Training speed of the systems step against step in one process: for each batch every
system takes its training step in turn, so that each ratio compares two steps on the same
batch a second apart, whatever the machine is doing that minute.

    python benchmarks/speed/paired_train.py --data data/multi30k --run-dir runs/tok \\
        --systems transduce,marian,torch --out benchmarks/speed/paired_zen5

run.py gives each system a process of its own and takes the median of rounds in turns; on
a VM whose speed moved by a third from one minute to the next (a Zen 5's Marian rounds
gave 3,645 to 4,756 target tokens a second in one run), the medians of separate rounds
mixed fast and slow spells. Here the models of every system (run.py's, on the same
batches of 4,096 target tokens) live in one process, which keeps freed memory
as ``transduce train`` does (Marian's rounds with and without it were alike); the order of
the systems rotates from batch to batch. Per system: its target tokens a second (median
over its steps), and "transduce is": the median over batches of the ratio of its step's
time to transduce's on the same batch. MFU divides by the matmul peak measured in the same
process before and after the steps (the higher). Writes OUT.json and OUT.md.

Two ablations of transduce's step, each a gain measured against the step it stands in for:
  transduce-loss-ops    the fused loss turning its logits into gradients with PyTorch's
                        operations instead of the C kernel nn/csrc/smoothed_ce.c
  transduce-adam-loop   Adam a parameter at a time, as PyTorch does on a CPU unless fused
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from plot import machine
from train_speed import (
    CONFIG,
    build_for_training,
    load_setup,
    matmul_peak,
    model_flops,
    train_loss,
    training_batches,
)

HERE = Path(__file__).parent
ABLATIONS = ("transduce-loss-ops", "transduce-adam-loop")


def measure(args) -> dict:
    import torch

    from transduce.device import autocast, resolve_precision, retain_freed_memory
    from transduce.nn import native
    from transduce.training.schedule import paper_adam

    torch.set_num_threads(args.threads)
    retain_freed_memory()
    cfg, tokenizer, src, tgt = load_setup(args)
    device = torch.device("cpu")
    precision = resolve_precision(args.precision, device)
    batches = training_batches(src, tgt, tokenizer, 4096, args.warmup_steps + args.steps)
    systems = args.systems.split(",")
    models, optimizers = {}, {}
    for system in systems:
        models[system] = build_for_training(system, cfg, tokenizer).train()
        optimizers[system] = paper_adam(models[system].parameters())
        for group in optimizers[system].param_groups:
            group["lr"] = 1e-4
            group["fused"] = group["fused"] and system != "transduce-adam-loop"
    kernel = native.library("smoothed_ce")

    def step(system, s, t) -> tuple[float, float]:
        model, optimizer = models[system], optimizers[system]
        native._loaded["smoothed_ce"] = None if system == "transduce-loss-ops" else kernel
        plain = "transduce" if system in ABLATIONS else system
        start = time.perf_counter()
        with autocast(device, precision):
            loss = train_loss(plain, model, s, t, tokenizer.pad_id, cfg.label_smoothing)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return time.perf_counter() - start, float(loss.detach())

    peaks = [matmul_peak("bfloat16" if precision == "bf16" else "float32")]
    seconds = {system: [] for system in systems}  # per measured (round, batch)
    losses = {system: [0.0, 0] for system in systems}  # the first round's sum and tokens
    counts, flops = [], []
    for rnd in range(args.rounds):
        for i, (s, t) in enumerate(batches):
            turn = (rnd * len(batches) + i) % len(systems)
            measured = rnd > 0 or i >= args.warmup_steps
            for system in systems[turn:] + systems[:turn]:
                took, loss = step(system, s, t)
                if measured:
                    seconds[system].append(took)
                if measured and rnd == 0:
                    losses[system][0] += loss
                    losses[system][1] += int((t[:, 1:] != tokenizer.pad_id).sum())
            if measured:
                counts.append(int((t[:, 1:] != tokenizer.pad_id).sum()))
                flops.append(model_flops(cfg, len(tokenizer), s, t, tokenizer.pad_id))
    peaks.append(matmul_peak("bfloat16" if precision == "bf16" else "float32"))
    rows = paired_rows(seconds, counts, flops, losses)
    for row in rows:
        row["precision"] = precision
    return {"rows": rows, "peak_flops_per_s": max(peaks), "peaks": peaks}


def paired_rows(
    seconds: dict[str, list[float]], counts: list[int], flops: list[float], losses: dict
) -> list[dict]:
    """Each system's figures from its step times on the measured batches (in the order of
    ``counts``, their target tokens, and ``flops``, their matmul FLOPs), the first system
    being transduce: the ratio is the median over batches of the two steps' times, not a
    ratio of medians."""
    ours = next(iter(seconds.values()))
    rows = []
    for system, took in seconds.items():
        ratios = [x / o for x, o in zip(took, ours)]
        rows.append(
            {
                "system": system,
                "tokens_per_s": round(statistics.median(c / x for c, x in zip(counts, took))),
                "model_flops_per_s": statistics.median(f / x for f, x in zip(flops, took)),
                "ratio": statistics.median(ratios),
                "ratio_quartiles": quartiles(ratios),
                "loss_per_token": round(losses[system][0] / losses[system][1], 4),
                "steps": len(took),
            }
        )
    return rows


def quartiles(values: list[float]) -> list[float]:
    """The three quartiles (the one value thrice where there is one)."""
    cuts = statistics.quantiles(values) if len(values) > 1 else values * 3
    return [round(q, 3) for q in cuts]


def summarise(results: dict) -> str:
    """The Markdown table of one paired run."""
    s = results["settings"]
    lines = [
        f"`python benchmarks/speed/paired_train.py --systems {s['systems']} --rounds "
        f"{s['rounds']} --steps {s['steps']} --threads {s['threads']}` on "
        f"{results['machine']}: every system's step on each 4,096-token batch in turn, in "
        "one process; ratios are medians over batches (quartiles beside them).",
        "",
        "| training, step against step | target tokens/s | transduce is | quartiles | MFU "
        "| loss/token |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    peak = results["peak_flops_per_s"]
    for r in results["rows"]:
        low, _, high = r["ratio_quartiles"]
        lines.append(
            f"| {r['system']} ({r['precision']}) | {r['tokens_per_s']:,} | {r['ratio']:.2f}× | "
            f"{low:.2f}–{high:.2f} | {r['model_flops_per_s'] / peak:.0%} | "
            f"{r['loss_per_token']} |"
        )
    lines.append(
        f"\nmatmul peak measured in the same process: {peak / 1e12:.2f} TFLOP/s (the higher "
        f"of {', '.join(f'{p / 1e12:.2f}' for p in results['peaks'])}, before and after)\n"
    )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="folder with the Multi30k raw files")
    parser.add_argument("--run-dir", required=True, help="a run whose tokenizer is used")
    parser.add_argument("--config", default=str(CONFIG), help="the config measured")
    parser.add_argument("--systems", default="transduce,marian,torch", help="transduce first")
    parser.add_argument("--rounds", type=int, default=3, help="passes over the batches")
    parser.add_argument("--steps", type=int, default=12, help="measured batches a round")
    parser.add_argument("--warmup-steps", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--precision", default="auto", choices=["auto", "bf16", "fp32"])
    parser.add_argument("--out", default=str(HERE / "paired"), help="results path stem")
    args = parser.parse_args()
    if not args.systems.startswith("transduce,"):
        parser.error("--systems: transduce first, then the systems it is compared with")
    from transduce.io import recorded_path

    root = HERE.parents[1]
    settings = {k: v for k, v in vars(args).items() if k not in ("data", "run_dir", "out")}
    results = {
        "settings": {**settings, "config": recorded_path(args.config, root)},
        "machine": machine("cpu"),
        **measure(args),
    }
    out = Path(args.out)
    out.with_suffix(".json").write_text(json.dumps(results, indent=2) + "\n")
    out.with_suffix(".md").write_text(summarise(results))
    print(out.with_suffix(".md").read_text())


if __name__ == "__main__":
    main()
