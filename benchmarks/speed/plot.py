"""The speed benchmark's figure and machine description (see run.py)."""

from __future__ import annotations

import os
from pathlib import Path


def machine(device: str = "cpu") -> str:
    """The CPU model, its cores and the threads used, for the figure and results.json (and
    the GPU first, for ``device="cuda"``)."""
    import platform

    name = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                name = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    cpu = f"{name}, {os.cpu_count()} cores, torch {torch_version()}"
    if device == "cuda":
        import torch

        return f"{torch.cuda.get_device_name(0)} (with {cpu})"
    return cpu


def model_shape(settings: dict) -> str:
    """ "4+4 layers, d_model 128" for the config the results were measured with."""
    from transduce.config_files import load_config
    from transduce.tasks.translation.config import TrainConfig

    config = settings.get("config")
    path = Path(__file__).parents[2] / config if config else None
    if path is None or not path.is_file():
        return "model not recorded"
    model = load_config(TrainConfig, path, []).model
    return f"{model.num_encoder_layers}+{model.num_decoder_layers} layers, d_model {model.d_model}"


def torch_version() -> str:
    import torch

    return torch.__version__


LABELS = {
    "torch": "PyTorch nn.Transformer",
    "marian": "Hugging Face Marian",
    "transduce-unfused": "transduce, plain output layer + loss",
    "transduce-torch-dropout": "transduce, with F.dropout",
    "transduce-separate-qkv": "transduce, separate Q/K/V projections",
    "marian-generate": "Hugging Face Marian generate()",
    "ct2-float32": "CTranslate2 float32",
    "ct2-int8": "CTranslate2 int8",
    "ct2-float16": "CTranslate2 float16",
    "ct2-int8_float16": "CTranslate2 int8_float16",
}


def plot(results: dict, path: Path) -> None:
    """Top: every system of the speed results' tables at their batch size, as bars; bottom:
    throughput against batch size for the systems measured at several sizes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FixedLocator, NullLocator

    settings = results["settings"]
    fig, axes = plt.subplots(2, 2, figsize=(12, 8.5), height_ratios=(1.1, 1))
    panels = (
        (
            "training",
            "tokens_per_s",
            4096,
            "target tokens/s",
            "training, 4096-token batches",
            "batch (target tokens)",
        ),
        (
            "translation",
            "sentences_per_s",
            settings["translate_tokens"],
            "sentences/s",
            f"translation, beam {settings['beam']}, "
            f"{settings['translate_tokens']} source tokens × beam per batch",
            "batch (source tokens × beam)",
        ),
    )
    for column, (kind, rate, size, unit, title, xlabel) in enumerate(panels):
        done = [r for r in results[kind] if "skipped" not in r]  # a skip has no figure
        rows = [r for r in done if r["max_tokens"] == size]
        bars, curves = axes[0, column], axes[1, column]
        names = [
            LABELS.get(r["system"], r["system"])
            + (f" ({r['precision']})" if "precision" in r else "")
            for r in rows
        ]
        values = [r[rate] for r in rows]
        colours = ["tab:blue" if r["system"].startswith("transduce") else "tab:gray" for r in rows]
        bars.barh(range(len(rows)), values, color=colours)
        bars.set_yticks(range(len(rows)), names, fontsize=9)
        bars.invert_yaxis()
        for i, v in enumerate(values):
            bars.text(v, i, f" {v:,.0f}" if v >= 100 else f" {v:.1f}", va="center", fontsize=8)
        missing = sorted(
            {LABELS.get(r["system"], r["system"]) for r in results[kind]}
            - set(LABELS.get(r["system"], r["system"]) for r in done)
        )
        bars.set(
            xlabel=unit, title=title + (f"\nnot measured: {', '.join(missing)}" * bool(missing))
        )
        bars.set_xlim(right=max(values) * 1.15)
        bars.grid(axis="x", alpha=0.3)
        sizes = sorted({r["max_tokens"] for r in done})
        if len(sizes) < 2:  # no curve to draw
            curves.axis("off")
            curves.text(0.5, 0.5, f"{kind}: measured at one batch size only", ha="center")
            continue
        for system in sorted({r["system"] for r in done}):
            points = sorted((r["max_tokens"], r[rate]) for r in done if r["system"] == system)
            if len(points) > 1:
                curves.plot(*zip(*points), marker="o", label=LABELS.get(system, system))
        curves.set(
            xscale="log", xlabel=xlabel, ylabel=unit, title=f"{kind} throughput against batch size"
        )
        curves.xaxis.set_major_locator(FixedLocator(sizes))
        curves.xaxis.set_minor_locator(NullLocator())
        curves.set_xticks(sizes, [f"{n:,}" for n in sizes])
        curves.set_ylim(bottom=0)
        curves.grid(alpha=0.3)
        curves.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, frameon=False)
    where = results.get("machine") or "machine not recorded"
    fig.suptitle(
        f"Multi30k En→De, {model_shape(settings)} · {where} · {settings['threads']} threads",
        fontsize=11,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
