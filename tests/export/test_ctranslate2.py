import json

import ctranslate2
import pytest
import torch

from transduce.api.loading import load as load_translator
from transduce.cli.main import main
from transduce.data.tokenizer import SubwordTokenizer
from transduce.errors import UserError
from transduce.export.ctranslate2 import (
    CTranslate2Translator,  # noqa: E402
    export_ctranslate2,
)
from transduce.nn import TransformerConfig, build_transformer
from transduce.runs import find_checkpoint, load_checkpoint, save_checkpoint

LINES = ["four hundred and twelve", "", "ninety-nine thousand and one", "seven"]


def random_run(trained_run, tmp_path, **overrides):
    """A run directory holding a random model of the trained run's shape (weights far from
    their initial values make a sharper test than a 12-step model)."""
    checkpoint, _ = find_checkpoint(trained_run)
    state = load_checkpoint(checkpoint)
    config = {**state["model_config"], **overrides}
    torch.manual_seed(1)
    model = build_transformer(TransformerConfig(**config))
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.1)
    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    (run / "spm.model").write_bytes((trained_run / "spm.model").read_bytes())
    save_checkpoint(
        run / "checkpoints" / "step_1.pt",
        {"model": model.state_dict(), "model_config": config, "tokenizer": state["tokenizer"]},
    )
    return run, model.eval()


@pytest.mark.parametrize("norm", ["post", "pre"])
def test_exported_model_scores_targets_as_ours(trained_run, tmp_path, norm):
    """Per-token log-probabilities from CTranslate2 equal our model's: same function."""
    run, model = random_run(trained_run, tmp_path, norm=norm)
    out = export_ctranslate2(run, tmp_path / "ct2")
    tok = SubwordTokenizer(run / "spm.model")
    src_ids = tok.encode(["four hundred and twelve", "seven"])
    tgt_ids = tok.encode(["vierhundertzwölf", "sieben"])
    scorer = ctranslate2.Translator(str(out), device="cpu")
    pieces = lambda ids: [tok.sp.id_to_piece(i) for i in ids]  # noqa: E731
    theirs = scorer.score_batch([pieces(s) for s in src_ids], [pieces(t) for t in tgt_ids])
    for s, t, result in zip(src_ids, tgt_ids, theirs):
        src = torch.tensor([s + [tok.eos_id]])
        tgt = torch.tensor([[tok.bos_id] + t])
        with torch.no_grad():
            log_probs = model(src, tgt, None).log_softmax(-1)[0]  # (T + 1, V)
        ours = log_probs.gather(-1, torch.tensor(t + [tok.eos_id]).unsqueeze(-1)).squeeze(-1)
        torch.testing.assert_close(torch.tensor(result.log_probs), ours, atol=1e-4, rtol=1e-4)


def test_ctranslate2_greedy_search_translates_as_ours(trained_run, tmp_path):
    """Greedy outputs agree token for token. (Beam outputs of a random model run to the
    length limit, where CTranslate2 stops without EOS and we force one; the speed benchmark
    compares beam search on a trained model, by BLEU.)"""
    run, _ = random_run(trained_run, tmp_path)
    out = export_ctranslate2(run, tmp_path / "ct2")
    ours = load_translator(run, "cpu", "fp32")
    theirs = CTranslate2Translator(model_dir=out, device="cpu", threads=1)
    want = [h[0][0] for h in ours.search(LINES, 1)]
    got = [h[0][0] for h in theirs.search(LINES, 1, 0.0)]
    assert got == want and got[1] == "" and got[0]
    beams = theirs.search(LINES, 4, 0.6, nbest=2)
    assert [len(h) for h in beams] == [2] * len(LINES) and beams[1] == [("", 0.0)] * 2
    with pytest.raises(UserError, match="length\\^alpha only"):
        theirs.search(LINES, 4, 0.6, lenpen_style="wu")


def test_export_and_translate_commands(trained_run, tmp_path, capsys):
    out = tmp_path / "served"
    assert main(["export", str(trained_run), str(out), "--quantization", "int8"]) == 0
    info = json.loads((out / "transduce.json").read_text())
    assert info["quantization"] == "int8" and info["max_positions"] > 0
    source = tmp_path / "in.txt"
    source.write_text("".join(line + "\n" for line in LINES), encoding="utf-8")
    capsys.readouterr()
    assert (
        main(
            [
                "translate",
                "--engine",
                "ctranslate2",
                str(out),
                "--input",
                str(source),
                "--threads",
                "1",
            ]
        )
        == 0
    )
    lines = capsys.readouterr().out.split("\n")
    assert len(lines) == len(LINES) + 1 and lines[1] == "" and lines[-1] == ""


class GpuWithoutCublas:
    """ctranslate2.Translator on a machine whose GPU CTranslate2 sees but cannot use: its CUDA
    libraries are of another version (as on a CUDA 13 image with CTranslate2 4.x), which
    only shows at the first translation."""

    real = ctranslate2.Translator

    def __init__(self, path, device="cpu", device_index=0, **kwargs):
        self.device = device
        self.inner = self.real(path, device="cpu", **kwargs)

    def translate_batch(self, *args, **kwargs):
        if self.device == "cuda":
            raise RuntimeError("Library libcublas.so.12 is not found or cannot be loaded")
        return self.inner.translate_batch(*args, **kwargs)


def test_a_gpu_ctranslate2_cannot_use_is_left_for_the_cpu_or_named(
    trained_run, tmp_path, capsys, monkeypatch
):
    out = tmp_path / "served"
    assert main(["export", str(trained_run), str(out)]) == 0
    source = tmp_path / "in.txt"
    source.write_text("".join(line + "\n" for line in LINES), encoding="utf-8")
    monkeypatch.setattr(ctranslate2, "get_cuda_device_count", lambda: 1)
    monkeypatch.setattr(ctranslate2, "Translator", GpuWithoutCublas)
    capsys.readouterr()
    # auto: the GPU is tried, then the CPU translates, and the user is told why
    assert (
        main(
            [
                "translate",
                "--engine",
                "ctranslate2",
                str(out),
                "--input",
                str(source),
                "--output",
                str(tmp_path / "auto.txt"),
                "--threads",
                "1",
            ]
        )
        == 0
    )
    err = capsys.readouterr().err
    assert "cannot run on the GPU here (Library libcublas.so.12" in err
    assert "translating on the CPU" in err
    assert len((tmp_path / "auto.txt").read_text(encoding="utf-8").split("\n")) == len(LINES) + 1
    # asked for by name: one line that says what to do, and no output
    assert (
        main(
            [
                "translate",
                "--engine",
                "ctranslate2",
                str(out),
                "--device",
                "cuda",
                "--input",
                str(source),
                "--output",
                str(tmp_path / "cuda.txt"),
            ]
        )
        == 2
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--device cuda: CTranslate2 cannot run on the GPU" in err[0]
    assert "use --device cpu" in err[0] and not (tmp_path / "cuda.txt").exists()
    assert CTranslate2Translator(model_dir=out, device="auto", threads=1).device == "cpu"


def test_export_refuses_an_existing_directory_and_leaves_nothing(trained_run, tmp_path, capsys):
    taken = tmp_path / "taken"
    taken.mkdir()
    assert main(["export", str(trained_run), str(taken)]) == 2
    assert "already exists" in capsys.readouterr().err
    assert list(taken.iterdir()) == [] and sorted(p.name for p in tmp_path.iterdir()) == ["taken"]


def test_export_of_a_checkpoint_with_another_tokenizer_is_refused(trained_run, tmp_path):
    run, _ = random_run(trained_run, tmp_path)
    state = load_checkpoint(run / "checkpoints" / "step_1.pt")
    save_checkpoint(run / "checkpoints" / "step_1.pt", {**state, "tokenizer": "other"})
    with pytest.raises(UserError, match="another tokenizer"):
        export_ctranslate2(run, tmp_path / "ct2")
    assert not (tmp_path / "ct2").exists()


def test_a_demo_run_is_refused_in_one_line_and_nothing_is_written(demo_run, tmp_path, capsys):
    assert main(["export", str(demo_run), str(tmp_path / "ct2")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].endswith(
        "a demo run, whose words are no SentencePiece model; export "
        "takes runs that transduce train wrote"
    )
    assert list(tmp_path.iterdir()) == []


def test_ctranslate2_engine_needs_an_export(trained_run, capsys):
    assert main(["translate", "--engine", "ctranslate2", str(trained_run)]) == 2
    assert "not a CTranslate2 export" in capsys.readouterr().err


PLAIN = """
import sys, ctranslate2, sentencepiece as spm
sp = spm.SentencePieceProcessor(model_file="spm.model")
translator = ctranslate2.Translator(".", device="cpu", intra_threads=1)
sources = [sp.encode(line, out_type=str) for line in sys.argv[1:]]
results = translator.translate_batch(sources, beam_size=1)  # CTranslate2's own defaults
print(len(results[0].hypotheses[0]))
assert not [m for m in sys.modules if m.startswith("transduce")]
"""


def test_plain_ctranslate2_decodes_past_the_trained_positions(trained_run, tmp_path):
    """A random model never writes EOS, so CTranslate2's default max_decoding_length (256)
    runs past the model's 192 positions: the exported table must cover it."""
    import subprocess
    import sys

    run, model = random_run(trained_run, tmp_path)
    assert model.positions.table.shape[0] < 256
    out = export_ctranslate2(run, tmp_path / "ct2")
    done = subprocess.run(
        [sys.executable, "-c", PLAIN, "seven"], cwd=out, text=True, capture_output=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) == 256  # it decoded to CTranslate2's limit, past position 192
    info = json.loads((out / "transduce.json").read_text())
    assert info["encoded_positions"] >= 256 > info["max_positions"]


def test_the_export_readme_is_all_a_ctranslate2_user_needs(trained_run, tmp_path):
    """The folder's README.md code, run with nothing of transduce importable, translates as
    our CTranslate2 engine does with the run's chosen decoding."""
    import re
    import subprocess
    import sys

    run = tmp_path / "run"
    import shutil

    shutil.copytree(trained_run, run)
    (run / "decoding.json").write_text(
        json.dumps({"beam": 3, "lenpen": 1.0, "no_repeat_ngram": 2, "last": 1})
    )
    out = export_ctranslate2(run, tmp_path / "ct2")
    readme = (out / "README.md").read_text(encoding="utf-8")
    code = re.search(r"```python\n(.*?)```", readme, re.S).group(1)
    assert "beam_size=3," in code and "length_penalty=1," in code
    assert "no_repeat_ngram_size=2" in code
    lines = [LINES[2]]  # one at a time: transduce limits each output by its own source
    code = code.replace('["A man rides a bike."]', repr(lines))
    code += "\nimport sys\nassert not [m for m in sys.modules if m.startswith('transduce')]\n"
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=out, text=True, capture_output=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    ours = CTranslate2Translator(model_dir=out, device="cpu", threads=1)
    assert ours.decoding.beam == 3 and ours.decoding.no_repeat_ngram == 2
    import ast

    assert ast.literal_eval(done.stdout.splitlines()[0]) == ours.translate(lines)


def test_force_replaces_an_earlier_export_and_nothing_else(trained_run, tmp_path, capsys):
    out = tmp_path / "ct2"
    assert main(["export", str(trained_run), str(out), "--quantization", "int8"]) == 0
    assert main(["export", str(trained_run), str(out)]) == 2
    assert "give --force" in capsys.readouterr().err
    assert main(["export", str(trained_run), str(out), "--force"]) == 0
    assert json.loads((out / "transduce.json").read_text())["quantization"] == "float32"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ct2"]  # no staging left
    other = tmp_path / "notes"
    other.mkdir()
    (other / "keep.txt").write_text("mine")
    assert main(["export", str(trained_run), str(other), "--force"]) == 2
    assert "not a transduce export" in capsys.readouterr().err
    assert (other / "keep.txt").read_text() == "mine"


def test_a_served_export_answers_early_exit_with_its_searchs_refusal(trained_run, tmp_path):
    from fastapi.testclient import TestClient

    from transduce.api.describe import describe
    from transduce.serve.app import create_app

    run, _ = random_run(trained_run, tmp_path)
    out = export_ctranslate2(run, tmp_path / "ct2")
    model = load_translator(out, "cpu")
    with TestClient(create_app(model, describe(str(out), model))) as c:
        refused = c.post("/translate", json={"sentences": ["seven"], "early_exit": True})
        served = c.post("/translate", json={"sentences": ["seven"], "beam": 1})
    assert refused.status_code == 422
    assert refused.json() == {
        "error": "early_exit is for our engine; CTranslate2 ends its search its own way"
    }
    assert served.status_code == 200  # and the server goes on
