"""The text guide's and the changelog's figures for the text tasks are those of the text
benchmarks' results files (benchmarks/text/results.json, step_speed.json)."""

from tests.helpers.docs import ROOT

REGULARISED = "last_subword_chars_relative_16k_regularised"
LENGTH_FAST = REGULARISED + "_members2_xpos_2threads_length_fast"
CLOCK = REGULARISED + "_members2_xpos_clock_average4"  # UPOS's recipe on the fixed clock
FUSED = CLOCK + "_fused"  # the same again on the faster engine: UPOS's choice


def test_the_text_guides_tagger_start_figures_are_the_results_file():
    import json

    data = json.loads((ROOT / "benchmarks/text/results.json").read_text())
    guide = " ".join((ROOT / "docs/guides/text.md").read_text().split())
    section = guide[guide.index("### Starting from a tagger") :].split(" #")[0]
    trec, wnut = data["trec"]["candidates"], data["wnut"]["candidates"]
    start, scratch = trec[data["trec"]["chosen"]], trec["max_chars_members4"]
    assert data["trec"]["chosen"] == "max_chars_xpos_members4" and start["commit"] in section
    figures = [start["pretraining_validation"], start["validation"], scratch["validation"]]
    figures += [start["test"], scratch["test"], trec["max_chars_xpos"]["validation"]]
    figures += [trec["max_chars_xpos"]["test"]]
    longer = [trec["max_chars_xpos_members4_10_5"], trec["max_chars_xpos_members4_even15_30ep"]]
    longer.append(trec["max_chars_xpos_members4_2threads"])  # alone, on both cores
    assert all(row["commit"] in section for row in longer)
    figures += [row["validation"] for row in longer]
    chosen = wnut[data["wnut"]["chosen"]]
    assert chosen["pretrained"] == "upos"
    best = {  # the best on dev of each kind of start
        kind: max(
            (r for r in wnut.values() if r["pretrained"] == kind), key=lambda r: r["validation"]
        )
        for kind in ("", "mlm")
    }
    figures += [chosen["pretraining_validation"], chosen["validation"], chosen["test"]]
    figures += [best[k][f] for k in ("", "mlm") for f in ("validation", "test")]
    for figure in figures:
        assert f"{figure:.2f}" in section, figure
    assert f"{start['minutes']} minutes" in section
    upos = data["upos"]["candidates"]
    # the tagger start the section tells of: the recipe before its minutes were on time
    tagger, scratch = upos[LENGTH_FAST], upos[REGULARISED + "_members2"]
    assert tagger["pretrained"] == "xpos" and tagger["commit"] in section
    figures = [tagger["pretraining_validation"], tagger["validation"], tagger["test"]]
    figures += [scratch["validation"], scratch["test"], upos[REGULARISED + "_xpos"]["validation"]]
    for figure in figures:
        assert f"{figure:.2f}" in section, figure
    first = ", ".join(f"{v:.2f}" for v in chosen["validation_by_epoch"][:5])
    assert f"start's: {first} over its first five" in section


def test_the_text_guides_batches_by_length_figures_are_the_results_file():
    import json

    data = json.loads((ROOT / "benchmarks/text/results.json").read_text())
    guide = " ".join((ROOT / "docs/guides/text.md").read_text().split())
    section = guide[guide.index("### Batches by length, measured") :].split(" #")[0]
    upos = data["upos"]["candidates"]
    arm = REGULARISED + "_members2_xpos_2threads"
    plain, length, before = upos[arm + "_again"], upos[arm + "_length"], upos[arm]
    fast = upos[arm + "_length_fast"]  # the length arm on a machine as fast as before's
    assert all("batch_tokens=768" in row["settings"] for row in (length, fast))
    scored = ("pretraining_validation", "validation", "test")
    figures = [row[k] for row in (plain, length, fast, before) for k in scored]
    figures += [length["validation"] - plain["validation"]]
    figures += fast["validation_by_epoch"][-4:]
    for figure in figures:
        assert f"{figure:.2f}" in section, figure
    assert all(row["commit"] in section for row in (plain, length, fast, before))
    trec = data["trec"]["candidates"]
    pairs = [trec["max_chars_xpos_members4_2threads" + k] for k in ("_length_start", "_again")]
    pairs += [trec["max_chars_xpos_members4" + k] for k in ("_length_start", "_again")]
    for row in pairs:
        for key in scored:
            assert f"{row[key]:.2f}" in section, (key, row[key])
        assert row["commit"] in section
    wnut = data["wnut"]["candidates"]
    length, plain = wnut["chars_recall_upos_length"], wnut["chars_recall_upos_again"]
    assert data["wnut"]["chosen"] == "chars_recall_upos_again"  # the recipe, run again
    assert "batch_tokens=1280" in length["settings"] and length["commit"] in section
    for row in (length, plain):
        assert f"{row['validation']:.2f}" in section and f"{row['test']:.2f}" in section
    epochs = (len(length["validation_by_epoch"]), len(plain["validation_by_epoch"]))
    assert f"its fine-tuning {epochs[0]} epochs against {epochs[1]}" in section
    assert data["trec"]["chosen"] == "max_chars_xpos_members4"
    assert f"{trec['max_chars_xpos_members4']['validation']:.2f}" in section


def test_the_text_guides_minutes_on_the_clock_are_the_results_file():
    import json

    data = json.loads((ROOT / "benchmarks/text/results.json").read_text())
    guide = " ".join((ROOT / "docs/guides/text.md").read_text().split())
    section = guide[guide.index("### Minutes on the clock, measured") :].split(" #")[0]
    upos = data["upos"]["candidates"]
    again, clock = upos[REGULARISED + "_members2_xpos_2threads_length_again"], upos[CLOCK]
    assert data["upos"]["chosen"] == FUSED and data["upos"]["limit_minutes"] == 30
    assert clock["minutes"] <= 30 < upos[LENGTH_FAST]["minutes"]
    for row in (again, clock):
        assert row["commit"] in section and f"took {row['minutes']:.1f} minutes" in section
        for key in ("pretraining_validation", "validation", "test"):
            assert f"{row[key]:.2f}" in section, (key, row[key])
    assert f"{clock['validation_best_checkpoint']:.2f} from its best" in section
    fused = upos[FUSED]
    assert fused["validation"] > clock["validation"]  # why it is the choice
    assert fused["commit"] in section and f"took {fused['minutes']:.1f}:" in section
    assert f"start {fused['pretraining_validation']:.2f}" in section
    assert f"dev {fused['validation']:.2f} averaged" in section
    assert f"({fused['validation_best_checkpoint']:.2f} from its best" in section
    assert f"test {fused['test']:.2f}" in section
    longer = upos[REGULARISED + "_members2_xpos_clock_longer_average4"]  # not chosen
    assert longer["commit"] in section and f"took {longer['minutes']:.1f}:" in section
    assert (
        f"dev {longer['validation']:.2f} averaged ({longer['validation_best_checkpoint']:.2f}"
        in section
    )
    assert f"test {longer['test']:.2f}" in section
    over = [r["minutes"] for r in upos.values() if r["minutes"] > 30]
    assert f"{min(over):.1f} to {max(over):.1f}" in section
    on_clock = (CLOCK, FUSED, REGULARISED + "_members2_xpos_clock_longer_average4")
    [fits] = [r for n, r in upos.items() if r["minutes"] <= 30 and n not in on_clock]
    assert f"({fits['minutes']:.1f} minutes, dev {fits['validation']:.2f})" in section
    trec = data["trec"]["candidates"]  # its recorded pair again, on the current code
    for name in ("max_chars_xpos_members4_fused", "max_chars_xpos_members4_length_start_fused"):
        row = trec[name]
        assert row["commit"] in section and f"{row['minutes']:.1f}" in section
        assert f"{row['validation']:.2f}" in section and f"{row['test']:.2f}" in section
        assert f"for {len(row['validation_by_epoch'])} epochs" in section
        assert row["validation"] < trec[data["trec"]["chosen"]]["validation"]
    chosen_epochs = len(trec[data["trec"]["chosen"]]["validation_by_epoch"])
    assert f"where the chosen row had {chosen_epochs}" in section
    wnut = data["wnut"]["candidates"]
    for name in ("chars_recall_upos_fused", "chars_recall_upos_length_fused"):
        row = wnut[name]
        assert row["commit"] in section and f"{row['minutes']:.1f}" in section
        assert f"{row['validation']:.2f}" in section and f"{row['test']:.2f}" in section
        assert row["validation"] < wnut[data["wnut"]["chosen"]]["validation"]
    assert f"chosen row's {wnut[data['wnut']['chosen']]['validation']:.2f}" in section
    for task in ("trec", "wnut"):  # their choices fit their minutes
        entry = data[task]
        assert entry["candidates"][entry["chosen"]]["minutes"] <= entry["limit_minutes"]


def test_the_changelogs_text_step_figures_are_step_speeds_file():
    """The changelog's text-step sentence gives benchmarks/text/step_speed.json's figures."""
    import json

    data = json.loads((ROOT / "benchmarks/text/step_speed.json").read_text())
    rows = {r["system"]: r for r in data["rows"]}
    log = " ".join((ROOT / "CHANGELOG.md").read_text().split())
    sentence = log[log.index("On the UPOS tagger's start") :].split(" UPOS's chosen")[0]
    assert f"the step takes {rows['text']['median_step_ms']:.1f} ms" in sentence
    for system, what in (
        ("text-adamw-loop", "AdamW a parameter at a time"),
        ("text-list-batches", "batches from lists"),
        ("text-unique-dim", "`torch.unique`"),
    ):
        assert f"{rows[system]['text_is']:.2f}× ({what})" in sentence, system
