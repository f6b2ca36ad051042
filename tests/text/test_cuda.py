"""The encoder's tasks on a CUDA GPU: a classifier (several encoders, characters, relative
positions), an entity tagger and the masked-LM recipe train there in bf16, their runs are
tested and used on the CPU from the checkpoint, and a forward pass on the GPU equals the
CPU's. CI has no GPU, so these skip there; run them on a machine with one
(`python -m pytest tests/text/test_cuda.py`)."""

import json

import pytest
import torch

import transduce
from tests.helpers.text import labelled_sentences, plain_sentences, tagged_sentences, train_text
from transduce.cli.main import main
from transduce.nn.builders import TransformerConfig
from transduce.nn.encoder_only import build_encoder_only

pytestmark = pytest.mark.skipif(
    not torch.cuda.is_available(), reason="needs a CUDA GPU; none is visible here"
)

RICH = ["chars=16", "relative=4"]  # the parts with code of their own on a device


def _started_on_the_gpu(run):
    line = next(s for s in (run / "train.log").read_text().splitlines() if "parameters;" in s)
    wanted = "bf16" if torch.cuda.is_bf16_supported() else "fp16"  # auto on a GPU
    assert "cuda" in line and wanted in line, line


def test_a_classifier_of_two_encoders_trains_on_the_gpu_and_is_used_on_the_cpu(tmp_path):
    train = labelled_sentences(tmp_path / "train.tsv", 400, 1)
    test = labelled_sentences(tmp_path / "test.tsv", 100, 2)
    settings = ["pooling=mean", "members=2", *RICH, "device=cuda"]
    run = train_text(tmp_path, "run", f"train={train}", f"test={test}", *settings)
    _started_on_the_gpu(run)
    assert main(["text", "test", str(run)]) == 0
    result = json.loads((run / "test_results.json").read_text())
    assert result["accuracy"] >= 90, result  # the colour rule is learnt
    model = transduce.load(run)
    assert model.classify("red cat")["label"] == "colour"
    assert model.attention("owl red fox")["rows"][0].startswith("mean")


def test_an_entity_tagger_trains_on_the_gpu_and_finds_spans_on_the_cpu(tmp_path):
    train = tagged_sentences(tmp_path / "train.conll", 300, 1)
    settings = ["task=entities", "format=conll", *RICH, "device=cuda", "max_epochs=6"]
    run = train_text(tmp_path, "run", f"train={train}", *settings)
    _started_on_the_gpu(run)
    found = transduce.load(run).entities("red big cat blue")
    assert [(e["text"], e["type"]) for e in found] == [("big cat", "ANIMAL")], found


def test_masked_lm_pretraining_and_fine_tuning_run_on_the_gpu(tmp_path):
    text = plain_sentences(tmp_path / "text.txt", 300, 5)
    pre = train_text(tmp_path, "pre", "task=mlm", "format=lines", f"train={text}", "device=cuda")
    _started_on_the_gpu(pre)
    train = labelled_sentences(tmp_path / "train.tsv", 200, 1)
    tuned = train_text(tmp_path, "tuned", f"train={train}", f"init={pre}", "device=cuda")
    _started_on_the_gpu(tuned)
    assert set(transduce.load(tuned).classify("blue owl")["probabilities"]) == {
        "colour",
        "plain",
    }


@pytest.mark.parametrize("per_token", [False, True], ids=["sequence", "token"])
def test_a_forward_pass_on_the_gpu_equals_the_cpus(per_token, monkeypatch):
    """The same weights in fp32 (TF32 off) give the same logits on both devices, padding
    included in the batch."""
    monkeypatch.setattr(torch.backends.cuda.matmul, "allow_tf32", False)
    monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", False)
    torch.manual_seed(0)
    config = TransformerConfig(
        src_vocab_size=30, d_model=32, d_ff=64, num_heads=4, num_encoder_layers=2, dropout=0.0
    )
    net = build_encoder_only(config, 5, per_token, "mean", chars=16, relative=4).eval()
    ids = torch.tensor([[1, 5, 6, 7, 0, 0], [1, 8, 9, 4, 2, 3]])
    chars = torch.randint(1, 20, (2, 6, 7))
    with torch.no_grad():
        on_cpu = net(ids, chars=chars).logits
        on_gpu = net.cuda()(ids.cuda(), chars=chars.cuda()).logits
    assert on_gpu.device.type == "cuda"
    torch.testing.assert_close(on_gpu.cpu(), on_cpu, atol=1e-4, rtol=1e-4)
