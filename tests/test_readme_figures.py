"""The README is short, and its figures are those of the benchmarks' results files."""

import importlib.util
import re

from tests.helpers.docs import README, ROOT
from transduce.decoding.translator import MAX_TOKENS


def test_readme_is_a_short_page():
    assert len(README.splitlines()) <= 250


def _pages_generator():
    spec = importlib.util.spec_from_file_location("gen_pages", ROOT / "docs" / "gen_pages.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # defines only: the pages are written at build time
    return module


def _table(heading_words: str) -> dict[str, list[str]]:
    """The README table after the paragraph that starts with ``heading_words``: its first
    cell → its other cells, bold marks dropped."""
    after = README[README.index(heading_words) :]
    rows = re.findall(
        r"^\|(.+)\|$", after.split("\n\n|", 1)[1].split("\n\n")[0].join(["|", ""]), flags=re.M
    )
    cells = [[c.strip().replace("**", "") for c in row.split("|")] for row in rows]
    return {row[0]: row[1:] for row in cells[2:]}


def test_readme_translation_table_is_the_results_file():
    bleu = _pages_generator().headline_bleu()
    table = _table("**Translation**")
    shown = {
        label: float(cells[-1]) for label, cells in table.items() if not label.startswith("anchor")
    }
    assert shown and set(shown) <= set(bleu), set(shown) - set(bleu)
    assert shown == {label: bleu[label] for label in shown}


def test_readme_m4_figures_are_the_results_file():
    import json

    data = json.loads((ROOT / "benchmarks/forecasting/m4.json").read_text())
    chosen = data["rows"][data["chosen"]]
    line = README[README.index("**Many series, one model**") :].split("\n\n")[0]
    test = chosen["test"]
    for figure in (
        f"OWA {test['owa']:.3f}",
        f"sMAPE {test['smape']:.2f}",
        f"MASE {test['mase']:.3f}",
        f"{test['rho_0.5']:.3f} / {test['rho_0.9']:.3f}",
        f"AutoETS ({data['rows']['AutoETS (StatsForecast)']['test']['owa']:.3f})",
        f"AutoTheta ({data['rows']['AutoTheta (StatsForecast)']['test']['owa']:.3f})",
        f"trained {chosen['training_minutes']} minutes",
    ):
        assert figure in " ".join(line.split()), figure


def test_readme_text_figures_are_the_results_file():
    import json

    data = json.loads((ROOT / "benchmarks/text/results.json").read_text())
    line = " ".join(README[README.index("**Text, the encoder alone**") :].split("\n\n")[0].split())
    for key, name in (("trec", "TREC-6"), ("upos", "UPOS"), ("wnut", "entity F1")):
        assert f"{data[key]['test']:.2f}" in line, (name, data[key]["test"])
        assert f"{data[key]['target']:g}" in line
    upos = data["upos"]["candidates"][data["upos"]["chosen"]]
    assert f"{upos['minutes']:.0f} minutes in all" in line
    assert upos["averaged"] == 4 and "last four checkpoints averaged" in line
    rows = data["wnut"]["candidates"].values()
    for kind in {r["pretrained"] for r in rows}:  # the best on validation of each pre-training
        best = max((r for r in rows if r["pretrained"] == kind), key=lambda r: r["validation"])
        assert f"{best['test']:.2f}" in line, kind or "not pre-trained"


def test_readme_forecasting_table_is_the_results_file():
    means = _pages_generator().forecasting_means()
    table = _table("**Forecasting**")
    datasets = ["ETTh1", "ETTh2", "exchange_rate", "ILI"]
    for label, model in (("transduce `patch`", "patch"), ("transduce `channel`", "channel")):
        assert table[label] == [f"{means[d, model]:.3f}" for d in datasets], label
    [chosen] = [cells for label, cells in table.items() if "chosen on validation" in label]
    assert chosen == [
        f"{means[d, 'chosen']:.3f}" if (d, "chosen") in means else "–" for d in datasets
    ]


def test_readme_zen5_speed_ratios_are_those_of_its_results_files():
    import json

    speed = ROOT / "benchmarks/speed"
    results = json.loads((speed / "results_zen5.json").read_text())
    cold = json.loads((speed / "cold_zen5.json").read_text())
    text = " ".join(README[README.index("**Speed**") :].split("On a Sapphire Rapids")[0].split())
    assert "On a Zen 5" in text
    sent = {(r["system"], r["max_tokens"]): r for r in results["translation"]}
    ct2 = sent["ct2-int8", 6000]["sentences_per_s"]
    early = sent["transduce-bf16-early", 6000]
    bf16, int8 = sent["transduce-bf16", 6000], sent["transduce-int8", 6000]
    fp32 = sent["transduce-fp32", 6000]
    assert f"in bf16 at {bf16['sentences_per_s'] / ct2:.2f}× the sentences a second" in text
    assert f"float32 path ({bf16['bleu']:.2f} and {fp32['bleu']:.2f})" in text
    assert f"at {early['sentences_per_s'] / ct2:.2f}× with `--early-exit`" in text
    assert f"int8 {int8['sentences_per_s'] / ct2:.2f}×" in text
    assert f"BLEU {early['bleu']:.2f} against {bf16['bleu']:.2f} without it" in text
    fastest = {
        system: max(r["sentences_per_s"] for (s, _), r in sent.items() if s == system)
        for system in ("transduce-bf16-early", "ct2-int8")
    }
    ratio = fastest["transduce-bf16-early"] / fastest["ct2-int8"]
    assert f"each at its fastest batch, {ratio:.2f}×" in text
    seconds = {r["system"]: r["seconds"] for r in cold["rows"]}
    whole = seconds["ct2-int8"] / seconds["transduce-bf16-early"]
    assert f"start-up included: {whole:.2f}×" in text
    first = {r["system"]: r["one_sentence_seconds"] for r in cold["rows"]}
    assert f"{first['transduce-bf16-early']:.2f} s to its first sentence" in text
    assert f"CTranslate2 {first['ct2-int8']:.2f}" in text
    train = {r["system"]: r["tokens_per_s"] for r in results["training"] if r["max_tokens"] == 4096}
    assert f"{train['transduce'] / train['torch']:.2f}× the target tokens" in text
    assert f"{train['transduce'] / train['marian']:.2f}× Hugging Face Marian's" in text
    [ours] = [
        r for r in results["training"] if (r["system"], r["max_tokens"]) == ("transduce", 4096)
    ]
    assert (
        f"at {ours['model_flops_per_s'] / ours['peak_flops_per_s']:.0%} of the matmul peak" in text
    )


def test_readme_paired_training_ratios_are_those_of_its_results_file():
    """The README's step-against-step sentence gives paired_zen5.json's ratios."""
    import json

    paired = json.loads((ROOT / "benchmarks/speed/paired_zen5.json").read_text())
    rows = {r["system"]: r for r in paired["rows"]}
    text = " ".join(README[README.index("Measured step against step") :].split())
    text = text.split("On a Sapphire Rapids")[0]
    low, _, high = rows["marian"]["ratio_quartiles"]
    assert f"at {rows['marian']['ratio']:.2f}× Marian's" in text
    assert f"(quartiles over batches {low:.2f}–{high:.2f})" in text
    assert f"and {rows['torch']['ratio']:.2f}× the `nn.Transformer`" in text
    mfu = rows["transduce"]["model_flops_per_s"] / paired["peak_flops_per_s"]
    assert f"at {mfu:.0%} of the matmul peak" in text
    assert f"C kernel gives {rows['transduce-loss-ops']['ratio']:.2f}×" in text
    assert f"fused Adam {rows['transduce-adam-loop']['ratio']:.2f}×" in text
    again = json.loads((ROOT / "benchmarks/speed/paired_zen5_again.json").read_text())
    rows = {r["system"]: r for r in again["rows"]}
    low, _, high = rows["marian"]["ratio_quartiles"]
    text = text.split("The same command again")[1]
    assert f"{rows['marian']['ratio']:.2f}× Marian (quartiles {low:.2f}–{high:.2f})" in text
    assert f"{rows['torch']['ratio']:.2f}× the script" in text
    mfu = rows["transduce"]["model_flops_per_s"] / again["peak_flops_per_s"]
    assert f"at {mfu:.0%} of the peak" in text


def test_readme_avx2_speed_ratios_are_those_of_its_results_files():
    import json
    import re

    speed = ROOT / "benchmarks/speed"
    results = json.loads((speed / "results_avx2.json").read_text())
    cold = json.loads((speed / "cold_avx2.json").read_text())
    text = " ".join(README[README.index("On an AVX2-only EPYC") :].split("On one H200")[0].split())
    rows = results["translation"]
    sent = {r["system"]: r for r in rows if r["max_tokens"] == 6000}
    ours = [s for s in sent if s.startswith("transduce")]
    assert max(ours, key=lambda s: sent[s]["sentences_per_s"]) == "transduce-fp32-early"
    early, fp32 = sent["transduce-fp32-early"], sent["transduce-fp32"]
    ratio = early["sentences_per_s"] / sent["ct2-int8"]["sentences_per_s"]
    assert "fastest path, fp32 with `--early-exit`," in text
    assert f"at {ratio:.2f}× CTranslate2 int8 in process" in text
    assert f"BLEU {early['bleu']:.2f} against {fp32['bleu']:.2f} without early exit" in text

    def fastest(system):
        return max(r["sentences_per_s"] for r in rows if r["system"] == system)

    best = fastest("transduce-fp32-early") / fastest("ct2-int8")
    assert f"each at its fastest batch, {best:.2f}×" in text
    seconds = {r["system"]: r["seconds"] for r in cold["rows"]}
    assert f"{seconds['ct2-int8'] / seconds['transduce-fp32-early']:.2f}× as a whole" in text
    table = (speed / "packed_fp32_avx2.md").read_text(encoding="utf-8")
    packed = re.search(r"\| packed \| [\d.]+ \| ([\d.]+)× \| (\d+) \| ([\d.]+)× \|", table)
    mkl = re.search(r"\| mkl \| [\d.]+ \| [\d.]+× \| (\d+) \|", table)
    batches, alone_ms, alone = packed.groups()
    assert f"alone {alone}× as fast as on MKL's sgemm ({alone_ms} ms against {mkl[1]})" in text
    assert f"batches {batches}× as fast" in text
    train = {r["system"]: r for r in results["training"] if r["max_tokens"] == 4096}
    mine = train["transduce"]
    assert f"{mine['tokens_per_s'] / train['marian']['tokens_per_s']:.2f}× Marian's" in text
    assert f"at {mine['model_flops_per_s'] / mine['peak_flops_per_s']:.0%} of the" in text
    guide = " ".join((ROOT / "docs/guides/serving.md").read_text(encoding="utf-8").split())
    int8 = sent["transduce-int8-early"]["sentences_per_s"] / early["sentences_per_s"]
    assert f"with `--early-exit` beam search in int8 ran at {int8:.2f}× float32" in guide
    assert f"alone {alone}× as fast" in guide and f"batches {batches}× as fast" in guide
    rss = [round(sent[s]["peak_rss_mb"]) for s in ("transduce-fp32", "transduce-fp32-mkl")]
    assert "peaked at {} MB against {} MB on MKL".format(*rss) in guide


def test_readme_speed_ratios_are_those_of_the_results_file():
    import json

    results = json.loads((ROOT / "benchmarks/speed/results_spr.json").read_text())
    train = {r["system"]: r["tokens_per_s"] for r in results["training"] if r["max_tokens"] == 4096}
    sent = {
        r["system"]: r["sentences_per_s"] for r in results["translation"] if r["max_tokens"] == 6000
    }
    text = " ".join(README[README.index("**Speed**") :].split("**Serving**")[0].split())
    for ratio in (
        train["transduce"] / train["torch"],
        train["transduce"] / train["marian"],
        sent["transduce-bf16"] / sent["ct2-int8"],
        sent["transduce-int8"] / sent["ct2-int8"],
        sent["transduce-bf16-early"] / sent["ct2-int8"],
    ):
        assert f"{ratio:.2f}×" in text, f"{ratio:.2f}×"
    rows = {r["system"]: r for r in results["translation"] if r["max_tokens"] == 6000}
    early, bf16 = rows["transduce-bf16-early"], rows["transduce-bf16"]
    assert f"BLEU {early['bleu']:.2f} against {bf16['bleu']:.2f}" in text
    warm = early["warm_sentences_per_s"] / rows["ct2-int8"]["warm_sentences_per_s"]
    assert f"{warm:.2f}× once every shape has been met" in text
    sweep = {(r["system"], r["max_tokens"]): r["sentences_per_s"] for r in results["translation"]}
    fastest_ct2 = max(v for (system, _), v in sweep.items() if system == "ct2-int8")
    default = sweep["transduce-bf16-early", MAX_TOKENS] / fastest_ct2
    assert f"at its default {MAX_TOKENS:,}, {default:.2f}× CTranslate2 int8" in text
    gpu = json.loads((ROOT / "benchmarks/speed/results_h200.json").read_text())
    train = {r["system"]: r["tokens_per_s"] for r in gpu["training"]}
    sent = {r["system"]: r["sentences_per_s"] for r in gpu["translation"]}
    assert f"trained at {train['transduce'] / train['marian']:.2f}× Marian's" in text
    assert f"translated at {sent['transduce-fp32'] / sent['ct2-float32']:.2f}× CTranslate2" in text


def test_the_forecasting_guides_logsparse_speed_is_its_results_file():
    """The guide's LogSparse sentence gives the bf16 figures of logsparse_speed.json."""
    import json

    data = json.loads((ROOT / "benchmarks/forecasting/logsparse_speed.json").read_text())
    bf16 = data["values_per_s"]["bf16"]
    guide = " ".join((ROOT / "docs/guides/forecasting.md").read_text().split())
    sentence = guide[guide.index("With M4 Hourly's recipe") :].split("): ")[0]
    for figure in (
        f"{bf16['fused']:,}",
        f"{bf16['fused_over_gathered']:.2f}×",
        f"operations: {bf16['shifted_over_gathered']:.2f}×",
        f"{bf16['none']:,}",
        f"({bf16['none_over_gathered']:.2f}×",
    ):
        assert figure in sentence, figure
