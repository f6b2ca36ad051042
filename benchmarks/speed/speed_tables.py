"""The speed benchmark's Markdown tables (results.md and the speed page): training's and
translation's figures as ratios against transduce's own, and the systems not measured."""

from __future__ import annotations


def measured(rows: list[dict]) -> list[dict]:
    return [r for r in rows if "skipped" not in r]


def not_run(results: dict) -> list[str]:
    """A line for each system that could not be measured, and why."""
    return [
        f"- not measured: {r['system']} ({kind}, {r['max_tokens']}-token batches): {r['skipped']}"
        for kind in ("training", "translation")
        for r in results[kind]
        if "skipped" in r
    ]


def summarise(results: dict) -> str:
    """The Markdown tables of results.md (ratios against the peers)."""
    return "\n".join(training_table(results) + translation_table(results)) + "\n"


def training_table(results: dict) -> list[str]:
    """Training's table (ratios against transduce's own figure) and the matmul peak."""
    train = {r["system"]: r for r in measured(results["training"]) if r["max_tokens"] == 4096}
    if "transduce" not in train:
        return []
    ours = train["transduce"]
    lines = [
        "| training (4096-token batches) | target tokens/s | transduce is | MFU | loss/token "
        "| peak RSS |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, r in train.items():
        mfu = r["model_flops_per_s"] / r["peak_flops_per_s"]
        lines.append(
            f"| {name} ({r['precision']}) | {r['tokens_per_s']:,} | "
            f"{ours['tokens_per_s'] / r['tokens_per_s']:.2f}× | {mfu:.{0 if mfu >= 0.1 else 1}%} | "
            f"{r.get('loss_per_token', '')} | {r['peak_rss_mb']:,.0f} MB |"
        )
    lines.append(
        f"\nmatmul peak measured in the same run: "
        f"{ours['peak_flops_per_s'] / 1e12:.2f} TFLOP/s ({ours['precision']})\n"
    )
    return lines


def translation_table(results: dict) -> list[str]:
    """Translation's tables (against transduce-fp32), and the systems not run."""
    tr = {
        r["system"]: r
        for r in measured(results["translation"])
        if r["max_tokens"] == results["settings"]["translate_tokens"]
    }
    skips = not_run(results)
    if "transduce-fp32" not in tr:
        return [""] + skips if skips else []
    base = tr["transduce-fp32"]
    lines = [
        "| translation (beam 5, 1000 sentences) | sentences/s | target tokens/s | "
        "vs transduce-fp32 | warm sentences/s | p50 ms | p95 ms | BLEU | peak RSS |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, r in tr.items():
        lines.append(
            f"| {name} | {r['sentences_per_s']} | {r['target_tokens_per_s']:,} | "
            f"{r['sentences_per_s'] / base['sentences_per_s']:.2f}× | "
            f"{r.get('warm_sentences_per_s') or ''} | "
            f"{r.get('latency_p50_ms', '')} | {r.get('latency_p95_ms', '')} | "
            f"{r['bleu']} | {r['peak_rss_mb']:,.0f} MB |"
        )
    lines += batch_table(results)
    return lines + ([""] + skips if skips else [])


def batch_table(results: dict) -> list[str]:
    """Sentences/s (first pass) of each system at each batch size measured, when more than
    one was: where each system is fastest."""
    done = measured(results["translation"])
    sizes = sorted({r["max_tokens"] for r in done})
    if len(sizes) < 2:
        return []
    at = {(r["system"], r["max_tokens"]): r["sentences_per_s"] for r in done}
    lines = [
        "",
        "| sentences/s at a batch of (source tokens × beam) | "
        + " | ".join(f"{n:,}" for n in sizes)
        + " |",
        "|---|" + "---:|" * len(sizes),
    ]
    for system in dict.fromkeys(r["system"] for r in done):
        lines.append(
            f"| {system} | " + " | ".join(f"{at.get((system, n), '')}" for n in sizes) + " |"
        )
    return lines
