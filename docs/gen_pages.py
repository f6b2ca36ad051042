"""The documentation's generated pages, written by mkdocs-gen-files when the site is built.

- reference/cli.md: every command's ``--help``, from the argparse parsers themselves;
- reference/configuration.md: every setting of every run config, its default and meaning,
  from the config declarations (the same rows ``--help`` prints);
- results/*.md: one page per task, rendered from the benchmark result files in
  benchmarks/ by the harnesses' own renderers where they have one.

Nothing here is typed by hand: a number on a results page is a number in a results file.
A results file that names an absolute path (meaningless on another machine) stops the build.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "benchmarks"


def write(path: str, text: str) -> None:
    import mkdocs_gen_files  # only when the site is built (tests import this file)

    with mkdocs_gen_files.open(path, "w") as f:
        f.write(text.rstrip("\n") + "\n")


def harness(relative: str):
    """A benchmark script, imported as a module (its renderers only; nothing runs)."""
    path = BENCH / relative
    sys.path.insert(0, str(path.parent))
    try:
        spec = importlib.util.spec_from_file_location(f"bench_{path.stem}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(path.parent))
    return module


def load(relative: str):
    data = json.loads((BENCH / relative).read_text(encoding="utf-8"))
    absolute = sorted(_absolute_paths(data))
    if absolute:
        raise SystemExit(
            f"benchmarks/{relative} records absolute paths {absolute[:3]}: write "
            "them through transduce.io.recorded_path"
        )
    return data


def _absolute_paths(value, key: str = "") -> set[str]:
    """Values of path-like keys (run, run_dir, data, config) that are absolute."""
    if isinstance(value, dict):
        return set().union(*(_absolute_paths(v, k) for k, v in value.items()), set())
    if isinstance(value, list):
        return set().union(*(_absolute_paths(v, key) for v in value), set())
    if key in ("run", "run_dir", "data", "config") and isinstance(value, str):
        return {value} if Path(value).is_absolute() else set()
    return set()


def included(relative: str, demote: int = 1) -> str:
    """A markdown file a harness wrote, its headings moved ``demote`` levels down."""
    lines = (BENCH / relative).read_text(encoding="utf-8").splitlines()
    return "\n".join("#" * demote + line if line.startswith("#") else line for line in lines)


# ---------------------------------------------------------------- reference: the CLI


def subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:  # argparse keeps them nowhere public
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def cli_page() -> str:
    from transduce.cli.main import build_parser, commands

    parser = build_parser()
    lines = [
        "# Command line",
        "",
        "Generated from the argparse parsers of `transduce` (`docs/gen_pages.py`): what "
        "`transduce COMMAND --help` prints. Settings of a run are given as `key=value` "
        "anywhere on the line; their meanings and defaults are also in "
        "[the configuration reference](configuration.md).",
        "",
        "| command | what it does |",
        "|---|---|",
    ]
    lines += [f"| [`{name}`](#{name}) | {c.summary} |" for name, c in commands().items()]
    lines += ["", "```text", parser.format_help().rstrip(), "```"]
    for name, sub in subparsers(parser).items():
        lines += ["", f"## {name}", "", "```text", sub.format_help().rstrip(), "```"]
        for inner, subsub in subparsers(sub).items():
            lines += [
                "",
                f"### {name} {inner}",
                "",
                "```text",
                subsub.format_help().rstrip(),
                "```",
            ]
    return "\n".join(lines)


# ------------------------------------------------------- reference: the configuration


def config_rows(config) -> list[tuple[str, str, str]]:
    """(key, default, meaning) of every setting of ``config``, its union members' too."""
    from transduce.cli.settings_help import other_members, setting_meanings
    from transduce.config import flatten

    meanings = setting_meanings(config)
    rows = [
        (key, value, meanings[key] or "")
        for key, value in flatten(config).items()
        if not (meanings[key] or "").startswith("unused")
    ]
    others = other_members(config, {key for key, _, _ in rows})
    return rows + [
        (path, value, f"({', '.join(tags)} only) {meaning}")
        for path, (value, tags, meaning) in others.items()
    ]


def _cell(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def config_page() -> str:
    from transduce.tasks.forecasting.config import ForecastConfig
    from transduce.tasks.numbers.task import DemoConfig
    from transduce.tasks.text.config import TextConfig
    from transduce.tasks.translation.config import TrainConfig

    sections = [
        (
            "Translation: `transduce train`",
            TrainConfig(),
            "The settings of a translation run: `model.*` is the Transformer "
            "(`transduce.nn.TransformerConfig`), `engine.*` the training loop.",
        ),
        (
            "Forecasting: `transduce forecast train` and `backtest`",
            ForecastConfig(),
            "The settings of a forecasting run. `model=` chooses the model; the settings of the "
            "other models are listed with the models that have them.",
        ),
        (
            "Text: `transduce text train`",
            TextConfig(),
            "The settings of a classifier or tagger on the encoder alone: `model.*` is the "
            "Transformer's config (its encoder sizes), `engine.*` the training loop.",
        ),
        ("The demo: `transduce demo`", DemoConfig(), "The settings of the number translator."),
    ]
    lines = [
        "# Configuration",
        "",
        "Every setting of a run, generated from the config declarations "
        "(`docs/gen_pages.py`). Give one as `key=value` on the command line or as a "
        "key of a YAML file (`transduce train CONFIG.yaml`); a key inside a section may "
        "be given bare (`d_model` for `model.d_model`) where it is unambiguous. An "
        "unknown key or an out-of-range value is an error that names it.",
    ]
    for title, config, intro in sections:
        lines += ["", f"## {title}", "", intro, "", "| key | default | meaning |", "|---|---|---|"]
        lines += [
            f"| `{key}` | `{_cell(value)}` | {_cell(meaning)} |"
            for key, value, meaning in config_rows(config)
        ]
    return "\n".join(lines)


# ------------------------------------------------------------------- results pages

MULTI30K_HEADLINE = [  # (row label, the entry of results_runs.json, the config trained)
    (
        "En→De, 30 min: two runs side by side, one ensemble",
        "30min-recipe-side-by-side-pair-ensemble-of-2-seeds-1thread-each-zen5",
        "configs/multi30k_en_de_30min.yaml",
    ),
    (
        "En→De, 2 h: two runs side by side, one ensemble (lowercased text)",
        "tiny-recipe-120min-bpe8k-cooldown03-wd01-lowercase-ensemble-of-2-seeds-1thread-each-zen5",
        "configs/multi30k_en_de_tiny.yaml",
    ),
    (
        "En→De, 2 h: the same keeping case",
        "tiny-recipe-120min-bpe8k-cooldown03-wd01-ensemble-of-2-seeds-1thread-each-zen5",
        "configs/multi30k_en_de_tiny.yaml",
    ),
    (
        "De→En, 30 min: two runs, one ensemble",
        "30min-recipe-de-en-side-by-side-pair-ensemble-of-2-seeds-1thread-each-zen5",
        "configs/multi30k_de_en_30min.yaml",
    ),
    (
        "De→En, 2 h: two runs, one ensemble (lowercased text)",
        "tiny-recipe-de-en-120min-bpe8k-cooldown03-wd01-lowercase-"
        "ensemble-of-2-seeds-1thread-each-zen5",
        "configs/multi30k_de_en_tiny.yaml",
    ),
    (
        "En→Fr, 30 min: two runs, one ensemble",
        "30min-recipe-en-fr-side-by-side-pair-ensemble-of-2-seeds-1thread-each-zen5",
        "configs/multi30k_en_fr_30min.yaml",
    ),
    (
        "En→Fr, 2 h: two runs, one ensemble (lowercased text)",
        "tiny-recipe-en-fr-120min-bpe8k-cooldown03-wd01-lowercase-"
        "ensemble-of-2-seeds-1thread-each-zen5",
        "configs/multi30k_en_fr_tiny.yaml",
    ),
]


def headline_bleu() -> dict[str, float]:
    """Each headline recipe's BLEU (tok, lc) on test_2016_flickr (the README's table)."""
    runs = load("multi30k/results_runs.json")
    return {label: runs[key]["test_2016_flickr"]["bleu_tok"] for label, key, _ in MULTI30K_HEADLINE}


def forecasting_means() -> dict[tuple[str, str], float]:
    """Mean test MSE over the horizons of each (dataset, model) of the benchmark's rows, and
    the figure the searches of chosen.json ended with (model "chosen": a dataset's last
    entry there, which replaced the earlier ones by the searches' rules; the README's
    table)."""
    rows = load("forecasting/results.json")["results"]
    sums: dict[tuple[str, str], list[float]] = {}
    for row in rows:
        sums.setdefault((row["dataset"], row["model"]), []).append(row["mse"])
    means = {key: sum(v) / len(v) for key, v in sums.items()}
    for row in load("forecasting/chosen.json")["rows"]:
        means[row["dataset"], "chosen"] = row["mean_test_mse"]
    return means


def _choice(chosen: dict | None) -> str:
    if not chosen:
        return ""
    parts = [
        f"last {chosen['last']}" if chosen.get("last") else "",
        f"α {chosen['lenpen']}" if "lenpen" in chosen else "",
        f"{chosen['no_repeat_ngram']}-gram block" if chosen.get("no_repeat_ngram") else "",
    ]
    return ", ".join(p for p in parts if p)


def translation_page() -> str:
    runs = load("multi30k/results_runs.json")
    table = load("multi30k/results.json")
    lines = [
        "# Results: translation (Multi30k)",
        "",
        "Generated from `benchmarks/multi30k/results_runs.json` and `results.json` "
        "(`docs/gen_pages.py`). test_2016_flickr, beam 5, decoding chosen on `val` "
        "(checkpoint averaging, length penalty α, n-gram block) by `transduce tune`, "
        "then test translated once. **BLEU (tok, lc)** is the figure published Multi30k "
        "results use: lowercased, Moses-tokenised, scored word for word "
        "(`transduce evaluate` prints it). Training on 2 cores; the machine is in each "
        "entry's name (Zen 5: bf16).",
        "",
        "Anchor: fairseq's transformer_tiny, the best text-only Transformer in the "
        "literature, reports **41.02** BLEU (tok, lc) on test_2016_flickr En→De "
        "(LividWo/Revisit-MMT, `README-baseline.md`).",
        "",
        "## Headline recipes",
        "",
        "| recipe | config | chosen on val | BLEU (tok, lc) | cased sacreBLEU | chrF2 |",
        "|---|---|---|---:|---:|---:|",
    ]
    for label, key, config in MULTI30K_HEADLINE:
        row = runs[key]
        test = row["test_2016_flickr"]
        lines.append(
            f"| {label} | `{config}` | {_choice(row.get('chosen_on_val'))} | "
            f"**{test['bleu_tok']:.2f}** | {test['bleu']:.2f} | {test['chrf']:.2f} |"
        )
    lines += [
        "",
        "Scored with `python benchmarks/multi30k/evaluate_run.py RUN --data "
        "PATH/TO/multi30k --pair en-de --name NAME` (an ensemble: several RUNs).",
        "",
        "## Every scored run",
        "",
        "Each run `evaluate_run.py` scored, in the order they were made (the name says "
        "the recipe, the budget, the layout and the machine).",
        "",
        "| name | pair | chosen on val | BLEU (tok, lc) | cased sacreBLEU | chrF2 | looping |",
        "|---|---|---|---:|---:|---:|---:|",
    ]
    for name, row in runs.items():
        test = row.get("test_2016_flickr")
        if not test:
            continue
        lines.append(
            f"| {name} | {row.get('pair', '')} | {_choice(row.get('chosen_on_val'))} "
            f"| {test.get('bleu_tok', float('nan')):.2f} | {test['bleu']:.2f} | "
            f"{test['chrf']:.2f} | {100 * test.get('looping_rate', 0):.1f}% |"
        )
    lines += [
        "",
        "## Training runs of `benchmarks/multi30k/run.py`",
        "",
        "`python benchmarks/multi30k/run.py PAIR --data PATH/TO/multi30k [key=value ...]`"
        " trains a shipped config, averages its last checkpoints and scores test with "
        "beam 5 (α 0.6, last 5 unless tuned).",
        "",
        "| name | pair | decoding | cased sacreBLEU | lowercased BLEU | chrF2 | updates "
        "(epochs) | training minutes | target tokens/s |",
        "|---|---|---|---:|---:|---:|---|---:|---:|",
    ]
    for name, row in table.items():
        lines.append(
            f"| {name} | {row['pair']} | last {row['averaged_checkpoints']}, α {row['lenpen']} "
            f"| {row['bleu']:.2f} | {row['bleu_lc']:.2f} | {row['chrf']:.2f} | "
            f"{row['steps']} ({row['epochs']}) | {row['training_seconds'] / 60:.1f} | "
            f"{row['train_tokens_per_s']:,} |"
        )
    return "\n".join(lines)


def forecasting_page() -> str:
    report = harness("forecasting/report.py")
    blend = harness("forecasting/blend.py")
    results = load("forecasting/results.json")
    chosen = load("forecasting/chosen.json")
    lines = [
        "# Results: forecasting (the long-horizon protocol)",
        "",
        "Generated from `benchmarks/forecasting/results.json`, `blend/*.json` and "
        "`chosen.json` by the benchmark's own renderers (`docs/gen_pages.py`). Test MSE "
        "and MAE on the z-scored series (training rows' mean and deviation), windows "
        "stepping by one, ETT's fixed borders, 70/10/20 elsewhere. Every choice "
        "(input length, ensemble members, blend weights) was made on validation.",
        "",
        "Command: `python benchmarks/forecasting/run.py --data PATH/TO/timeseries "
        "--plan benchmarks/forecasting/plan.yaml --jobs 2` (about 117 minutes on 2 "
        "cores).",
        "",
        "## What the searches chose",
        "",
        f"{chosen['note']} (commit `{chosen['commit']}`).",
        "",
        "| dataset | how | test MSE by horizon | mean test MSE | details |",
        "|---|---|---|---:|---|",
    ]
    for row in chosen["rows"]:
        by = ", ".join(f"{h}: {v:.3f}" for h, v in row["horizons"].items())
        lines.append(
            f"| {row['dataset']} | {row['label']} | {by} | "
            f"**{row['mean_test_mse']:.3f}** | `{row['details']}` |"
        )
    lines += ["", "## Every model, every horizon", "", report.table(results["results"])]
    for path in sorted((BENCH / "forecasting" / "blend").glob("blend_*.json")):
        saved = load(f"forecasting/blend/{path.name}")
        lines += [
            "",
            f"## Blend: {path.stem.removeprefix('blend_').replace('+', ', ')}",
            "",
            blend.markdown(saved["results"], saved["command"], saved["seconds"]),
        ]
    lines += m4_section()
    lines += [
        "",
        "## Backtests in parallel",
        "",
        included("forecasting/backtest_jobs.md", 2),
        "",
        "## Seeds",
        "",
        included("forecasting/seeds.md", 2),
        "",
        "## On a GPU",
        "",
        included("forecasting/gpu_h200.md", 2),
    ]
    return "\n".join(lines)


DEFAULT_M4 = "python benchmarks/forecasting/m4.py --data PATH/TO/m4"


def m4_commands(data: dict) -> list[str]:
    """The commands behind the M4 table: the latest, which measured the peers, and those
    that trained the rows it did not."""
    latest = data.get("command", DEFAULT_M4)
    earlier = {
        row["command"]: []
        for row in data.get("rows", {}).values()
        if row.get("command", latest) != latest
    }
    for name, row in data.get("rows", {}).items():
        if row.get("command", latest) != latest:
            earlier[row["command"]].append(name)
    if not earlier:
        return [f"Command: `{latest}`"]
    return [
        "Commands: "
        + "; ".join(
            [f"`{command}` ({', '.join(names)})" for command, names in earlier.items()]
            + [f"`{latest}` (the peers and the other rows)"]
        )
    ]


def m4_section() -> list[str]:
    """The M4 Hourly benchmark's table, from benchmarks/forecasting/m4.json."""
    if not (BENCH / "forecasting" / "m4.json").is_file():
        return []
    data = load("forecasting/m4.json")
    lines = [
        "",
        "## M4 Hourly: many series, one model",
        "",
        "414 series of 700 or 960 hours, the next 48 hours of each forecast by one global "
        "model (`layout=long`), scored as the competition scores: sMAPE, MASE "
        "(seasonality 24) and OWA against the competition's Naive2, with the ρ0.5 and "
        "ρ0.9 risks of LogSparse and DeepAR. The peers ran in the same run on the same "
        f"machine ({data.get('machine', '')}). Validation: the last 48 hours of each "
        "training series, forecast from the rest; the recipe of best validation OWA is "
        f"transduce's (**{data.get('chosen', '–')}**); test scored once per row. The "
        "rows after the first four are a second round whose plan, written before its "
        "runs, opens `benchmarks/forecasting/m4.py`.",
        "",
        *m4_commands(data),
        "",
        "| model | test sMAPE | test MASE | test OWA | test ρ0.5 | test ρ0.9 | "
        "validation OWA | training minutes |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]

    def cell(row, split, key):
        value = row.get(split, {}).get(key)
        return "–" if value is None else f"{value:.3f}"

    for name, row in data.get("rows", {}).items():
        label = f"transduce: {row['what']}" if row["kind"] == "transduce" else name
        if name == data.get("chosen"):
            label = f"**{label}**"
        lines.append(
            f"| {label} | {cell(row, 'test', 'smape')} | {cell(row, 'test', 'mase')} "
            f"| {cell(row, 'test', 'owa')} | {cell(row, 'test', 'rho_0.5')} | "
            f"{cell(row, 'test', 'rho_0.9')} | {cell(row, 'validation', 'owa')} | "
            f"{row.get('training_minutes', '–')} |"
        )
    dash = " – |"
    lines += [
        "| ES-RNN (Smyl, the M4 winner; published) | 9.328 | 0.893 | 0.440 |" + dash * 4,
        "| FFORMA (second; published) | 11.506 | 0.819 | 0.484 |" + dash * 4,
        "| LogSparse Transformer (published, Li et al. 2019) |"
        + dash * 3
        + " 0.067 | 0.025 |"
        + dash * 2,
        "| DeepAR (published in the LogSparse paper) |" + dash * 3 + " 0.090 | 0.030 |" + dash * 2,
    ]
    memory = data.get("memory", {})
    if memory:
        lines += [
            "",
            "Attention memory of one layer (4 heads, d_model 64, one sequence): the "
            "score cells it computes and the growth of the process's peak memory over "
            "one forward pass, measured in a fresh process.",
            "",
            "| L | LogSparse cells | full cells | LogSparse peak MB | full peak MB | "
            "LogSparse keys per step |",
            "|---:|---:|---:|---:|---:|---:|",
        ]
        for L, row in memory.items():
            lines.append(
                f"| {L} | {row['logsparse']['score_cells']:,} | "
                f"{row['full']['score_cells']:,} | "
                f"{row['logsparse']['peak_growth_mb']} | "
                f"{row['full']['peak_growth_mb']} | "
                f"{row['logsparse']['keys_per_step']} |"
            )
    return lines


def speed_page() -> str:
    speed = harness("speed/run.py")
    lines = [
        "# Results: speed",
        "",
        "Generated from `benchmarks/speed/results*.json` by `benchmarks/speed/run.py`'s "
        "own summary (`docs/gen_pages.py`). Every figure of one table was measured side "
        "by side in one run on one machine: compare ratios, not figures of two tables.",
    ]
    for stem, title in (
        (
            "results_spr",
            "The d_model 256 model on a Sapphire Rapids (AMX), with int8 (the 2-hour "
            "config trained 30 minutes: max_minutes=30 cooldown=0.3, then transduce "
            "average --last 3; training measured again at 08db115 on another such VM, "
            "translation at 6abba30)",
        ),
        (
            "results_zen5",
            "The same recipe on a Zen 5 (AVX-512 BF16 and VNNI, no AMX), with int8: its own "
            "30-minute run, trained on that machine (training measured at 78d867b, "
            "translation at f34c63b)",
        ),
        ("results_tiny", "The 2-hour En→De model (4+4 layers, d_model 128)"),
        ("results", "The d_model 256 model"),
        ("results_zen3", "The d_model 256 model on a Zen 3 (fp32)"),
        (
            "results_avx2",
            "The same recipe on an AVX2-only EPYC (no AVX-512, VNNI or native bf16), with "
            "int8 on 63 input levels a side: its own 50-minute run, trained on that machine",
        ),
        (
            "compile_zen5",
            "Training through torch.compile on a Zen 5: the unfused model and loss compiled "
            "by Inductor (dynamic shapes, compiled in the warm-up steps), beside the eager "
            "step with transduce's C kernels and Marian",
        ),
    ):
        data = load(f"speed/{stem}.json")
        lines += [
            "",
            f"## {title}",
            "",
            f"`benchmarks/speed/{stem}.json`",
            "",
            speed.summarise(data).replace("\n# ", "\n### ").replace("\n## ", "\n### "),
        ]
    paired = harness("speed/paired_train.py")
    for stem, where in (
        ("paired_zen5", "Zen 5, at db86d82"),
        ("paired_zen5_again", "Zen 5, again at df1354a, in a faster spell of the VM"),
    ):
        lines += ["", f"## Training step against step, in one process ({where})", ""]
        lines.append(paired.summarise(load(f"speed/{stem}.json")))
    cold = harness("speed/cold.py")
    for stem, where in (
        ("cold", "Sapphire Rapids"),
        ("cold_zen5", "Zen 5"),
        ("cold_avx2", "AVX2-only EPYC"),
    ):
        if (BENCH / f"speed/{stem}.json").exists():
            lines += ["", f"## Whole process, started cold ({where})", ""]
            lines.append(cold.summarise(load(f"speed/{stem}.json")))
    names = (
        "int8",
        "int8_zen5",
        "int8_avx2",
        "packed_fp32_avx2",
        "attention_decoding",
        "profile_train",
        "profile_train_zen5",
        "profile_train_spr",
        "attention",
        "dropout",
        "allocator",
        "profile_beam",
        "gpu_h200",
        "gpu_h100",
    )
    for name in names:
        lines += [
            "",
            f"## {name.replace('_', ' ').capitalize()}",
            "",
            included(f"speed/{name}.md", 2),
        ]
    lines += ["", "## One process or one per core", "", included("processes/results.md", 2)]
    if (BENCH / "forecasting/logsparse_speed.json").exists():
        logsparse = harness("forecasting/logsparse_speed.py")
        lines += ["", "## LogSparse: shifted keys, not gathered ones", ""]
        lines.append(logsparse.summarise(load("forecasting/logsparse_speed.json")))
    return "\n".join(lines)


def serving_page() -> str:
    data = load("serve/results.json")
    lines = [
        "# Results: serving",
        "",
        "Generated from `benchmarks/serve/results.json` (`docs/gen_pages.py`): "
        "`transduce serve` under one client and under concurrent clients, every answer "
        "checked against the expected translation.",
        "",
        f"Command: `python benchmarks/serve/run.py RUN --beam {data['beam']}` on "
        f"{data['machine']} (2 cores), the demo's model (`{data['run']}`).",
        "",
        "| clients | requests | sentences/s | p50 latency (ms) | p95 latency (ms) | "
        "failed or wrong |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for row in data["results"].values():
        lines.append(
            f"| {row['clients']} | {row['requests']} | "
            f"{row['sentences_per_s']:.1f} | {row['latency_p50_ms']:.0f} | "
            f"{row['latency_p95_ms']:.0f} | {row['errors'] + row['mixed_up']} |"
        )
    lines += [
        "",
        f"Concurrent clients served **{data['concurrent_speedup']:.1f}×** as many "
        "sentences a second as one client alone (requests are batched by the server).",
    ]
    return "\n".join(lines)


def demo_page() -> str:
    stability = harness("demo/stability.py")
    data = load("demo/stability.json")
    lines = [
        "# Results: the demo",
        "",
        "Generated from `benchmarks/demo/stability.json` by "
        "`benchmarks/demo/stability.py`'s own table (`docs/gen_pages.py`): `transduce "
        "demo` for seeds 1–5 in fp32 and bf16, each run's validation curve judged by the "
        "rule in `benchmarks/demo/README.md`, and held-out exact match of `best.pt` and "
        "of the last checkpoint.",
        "",
        stability.table(data["runs"], data["command"], data["machine"]),
        "",
        "![validation exact match of each run](demo_stability.png)",
        "",
        "## What the training-outcome tests measure",
        "",
        included("outcomes/spread.md", 2),
        "",
        included("outcomes/spread_zen5.md", 2),
    ]
    return "\n".join(lines)


TEXT_TASKS = {  # results.json's key -> (what, the measure, the published figures)
    "trec": (
        "TREC-6 question classification",
        "test accuracy (%)",
        "Kim 2014 CNN from scratch 91.2, with pretrained word2vec 93.6; ULMFiT 96.4",
    ),
    "upos": (
        "UD English-EWT part of speech (UPOS, gold tokens)",
        "test UPOS accuracy (%)",
        "Stanza from raw text 95.40; UDPipe 2 with pretrained contextual embeddings 97.50",
    ),
    "wnut": (
        "WNUT-17 emerging entities",
        "test entity F1 (micro, %)",
        "the shared task's best (UH-RiTUAL, with word embeddings and gazetteers) 41.86",
    ),
}


PRETRAINED = {  # a candidate's pre-training (results.json's "pretrained") -> its column
    "": "no",
    "mlm": "MLM, half the time",
    "upos": "EWT UPOS tagger, half the time",
    "xpos": "EWT XPOS tagger, half the time",
}


def text_page() -> str:
    data = load("text/results.json")
    lines = [
        "# Results: text",
        "",
        "Generated from `benchmarks/text/results.json`, written by `benchmarks/text/run.py` "
        "(`docs/gen_pages.py`). Every model is the encoder alone, trained on one core of "
        "two (two candidates side by side) for 20 epochs or the task's minutes, whichever "
        "comes first (minutes below are wall-clock, validations included); a task's "
        "candidates are fixed in that script "
        "before its runs, and among those whose run took no longer than the task's limit "
        "(wall-clock minutes), the one of best validation score is chosen (a tie goes to "
        "the one listed first, as TREC's mean_chars and mean_chars_relative tied); only "
        "then is the test file scored. A candidate marked pre-trained is the BERT recipe at equal "
        "total time: a masked language model trained for half the minutes on unlabeled "
        "English (the three tasks' training sentences and Multi30k's training captions), "
        "then fine-tuned for the other half. One pre-trained by a tagger does the same "
        "with a tagger of UD English-EWT's training sentences (their UPOS, or the Penn "
        "Treebank's finer XPOS), validated on EWT's dev: labels of another task, no "
        "weights from elsewhere. A candidate named `_chars` adds a character "
        "model of each word (`chars=64` for TREC, 128 for the taggers); `chars_recall` adds "
        "it with `outside_weight=0.1` and `token_dropout=0.1`; `_relative` adds relative "
        "positions (`relative=16`); `_16k` tags over 16,000 subwords rather than 8,000; "
        "`_membersN` trains N such encoders side by side and labels by the mean of their "
        "probabilities (`members=N`). An entity tagger's validation F1 is read at the "
        "bias of O it chose on validation (`calibrate`, see the text guide). "
        "Every candidate's settings are in the results file.",
    ]
    for key, (what, measure, published) in TEXT_TASKS.items():
        if key not in data:
            continue
        task = data[key]
        lines += [
            "",
            f"## {what}",
            "",
            f"`{task['command']}` at {task['commit']}, {task['minutes']} min in all, "
            f"up to {task['minutes_each']:g} training minutes a candidate. "
            f"Published: {published}. Target: {task['target']} in at most "
            f"{task.get('limit_minutes', '?')} minutes; a candidate over them is marked "
            "and not chosen.",
            "",
            f"| candidate | pre-trained | validation | {measure} | minutes |",
            "|---|---|---:|---:|---:|",
        ]
        for name, row in task["candidates"].items():
            chosen = " (chosen)" if name == task["chosen"] else ""
            if row["minutes"] > task.get("limit_minutes", row["minutes"]):
                chosen += " (over the limit)"
            if row.get("commit", task["commit"]) != task["commit"]:  # kept from a run before
                chosen += f" (at {row['commit']})"
            pre = PRETRAINED[row["pretrained"]]
            lines.append(
                f"| {name}{chosen} | {pre} | {row['validation']:.2f} | {row['test']:.2f} | "
                f"{row['minutes']} |"
            )
    if (BENCH / "text/step_speed.md").exists():
        lines += ["", "## The training step, and what each speed-up gains", ""]
        lines.append(included("text/step_speed.md", 2))
    return "\n".join(lines)


def main() -> None:
    with contextlib.redirect_stdout(io.StringIO()):  # a harness that prints on import
        pages = {
            "reference/cli.md": cli_page(),
            "reference/configuration.md": config_page(),
            "results/translation.md": translation_page(),
            "results/forecasting.md": forecasting_page(),
            "results/speed.md": speed_page(),
            "results/serving.md": serving_page(),
            "results/demo.md": demo_page(),
            "results/text.md": text_page(),
        }
    for path, text in pages.items():
        write(path, text)
    write("changelog.md", (ROOT / "CHANGELOG.md").read_text(encoding="utf-8"))


if __name__ in ("__main__", "<run_path>"):  # mkdocs-gen-files runs it as <run_path>
    main()
