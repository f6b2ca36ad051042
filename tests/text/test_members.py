"""Text runs of several encoders (members=): the ensemble's probabilities are the mean of
its members', each member learns from its own error, and a run of them trains, loads,
labels, explains and fine-tunes as one encoder's run does."""

import pytest
import torch

import transduce
from tests.helpers.text import (
    TEXT_SETTINGS,
    labelled_sentences,
    plain_sentences,
    tagged_sentences,
    train_text,
)
from transduce.cli.main import main
from transduce.data.labelled import Sentences
from transduce.nn.builders import TransformerConfig
from transduce.nn.encoder_only import EncoderEnsemble, build_encoder_only
from transduce.tasks.text.config import TextConfig
from transduce.tasks.text.data import Encoded, TextData
from transduce.tasks.text.task import TextTask, batch_of, build_text_model, load_init

SIZES = dict(d_model=16, d_ff=32, num_heads=2, num_encoder_layers=1, dropout=0.0, max_len=64)
TOKENS = torch.tensor([[1, 5, 6, 7, 0, 0], [1, 8, 9, 4, 2, 3]])  # 0 pads the first


def ensemble(per_token: bool, members: int = 3) -> EncoderEnsemble:
    torch.manual_seed(0)
    config = TransformerConfig(src_vocab_size=10, **SIZES)
    return EncoderEnsemble(
        [build_encoder_only(config, 4, per_token, "mean") for _ in range(members)]
    )


@pytest.mark.parametrize("per_token", [False, True], ids=["sequence", "token"])
def test_an_ensemble_labels_by_its_members_mean_probability(per_token):
    model = ensemble(per_token).eval()
    own = [member(TOKENS, need_weights=True) for member in model.members]
    assert not torch.equal(own[0].logits, own[1].logits)  # drawn apart
    out = model(TOKENS, need_weights=True)
    mean = torch.stack([o.logits.softmax(-1) for o in own]).mean(0)
    torch.testing.assert_close(out.logits.softmax(-1), mean)
    assert out.logits.shape == own[0].logits.shape
    for ours, first in zip(out.weights, own[0].weights):  # the first member's heads
        assert torch.equal(ours, first)
    assert torch.equal(out.real, own[0].real)


def test_in_training_every_member_answers_on_its_own():
    model = ensemble(per_token=True).train()
    out = model(TOKENS)
    assert out.logits.shape == (3, 2, 6, 4)
    for k, member in enumerate(model.members):
        torch.testing.assert_close(out.logits[k], member(TOKENS).logits)
    with pytest.raises(ValueError, match="at least two members"):
        EncoderEnsemble(list(model.members)[:1])


def test_the_loss_is_the_mean_of_each_members_own_loss():
    """Each member is trained on its error alone: the ensemble's loss over its tag count
    is the mean over members of each one's loss over its own."""
    cfg = TextConfig(task="tag", format="conll", train="t", members=3)
    encoded = Encoded([[1, 5, 6, 7], [1, 8, 9]], [[-100, 0, 1, 2], [-100, 3, 0]], [])
    tokenizer = type("T", (), {"unk_id": 3, "__len__": lambda self: 10})()
    data = TextData(tokenizer, ["A", "B", "C", "D"], encoded, encoded)
    task = TextTask(cfg, data, type("S", (), {"device": torch.device("cpu")})())
    model = ensemble(per_token=True).train()
    loss, count = task.loss(model, torch.tensor([0, 1]))
    each = [task.loss(member, torch.tensor([0, 1])) for member in model.members]
    assert count == 3 * 5 and all(n == 5 for _, n in each)
    assert (loss / count).item() == pytest.approx(sum(v / n for v, n in each).item() / 3)


def test_a_run_of_members_trains_loads_labels_and_explains(tmp_path):
    train_file = labelled_sentences(tmp_path / "train.tsv", 200, 1)
    run = train_text(tmp_path, "run", f"train={train_file}", "pooling=mean", "members=2")
    model = transduce.load(run)
    assert isinstance(model.model, EncoderEnsemble) and len(model.model.members) == 2
    texts = ["red cat", "big dog runs"]
    found = model.classify(texts)
    encoded = model._encode(Sentences(texts, model.labels[:1] * 2, [1, 2]))  # as classify()
    ids, _, _ = batch_of(encoded, [0, 1], False)
    with torch.no_grad():
        mean = torch.stack([m(ids).logits.softmax(-1) for m in model.model.members]).mean(0)
    for row, answer in zip(mean, found):
        assert [answer["probabilities"][n] for n in model.labels] == pytest.approx(
            row.tolist(), abs=1e-5
        )
    seen = model.attention("red cat")
    assert seen["model"].endswith("2 encoders (attention: the first's)")  # as the page says
    assert len(seen["weights"]) == 2 and abs(sum(seen["weights"][0][0]) - 1) < 1e-4


def test_every_member_starts_from_the_pretrained_encoder_and_mlm_trains_one(tmp_path, capsys):
    text = plain_sentences(tmp_path / "text.txt", 200, 5)
    pre = train_text(tmp_path, "pre", "task=mlm", "format=lines", f"train={text}")
    learned = torch.load(pre / "checkpoints" / "best.pt", map_location="cpu", weights_only=True)[
        "model"
    ]
    train_file = tagged_sentences(tmp_path / "train.conll", 100, 1)
    tuned = transduce.load(
        train_text(
            tmp_path,
            "tuned",
            "task=tag",
            "format=conll",
            f"train={train_file}",
            f"init={pre}",
            "members=2",
        )
    )
    fresh = build_text_model(tuned.cfg, len(tuned.tokenizer), len(tuned.labels))
    begun = load_init(fresh, str(pre))
    key = "encoder.layers.0.self_attn.q_proj.weight"
    for member in begun.members:
        assert torch.equal(member.state_dict()[key], learned[key])
    heads = [member.head.weight for member in begun.members]
    assert not torch.equal(heads[0], heads[1])  # a head of its own each
    argv = ["text", "train", "task=mlm", "format=lines", f"train={text}", "members=2"]
    assert main([*argv, *TEXT_SETTINGS, "--run-dir", str(tmp_path / "m")]) == 2
    assert "members is for the labelled tasks" in capsys.readouterr().err
    assert not (tmp_path / "m" / "config.yaml").exists()


def test_a_run_of_other_labels_starts_a_tagger_but_an_ensemble_does_not(tmp_path, capsys):
    """init= takes a classifier's (or tagger's) tokenizer and encoder, not its head; an
    ensemble's encoders differ, so it is refused in one line."""
    train_file = labelled_sentences(tmp_path / "train.tsv", 200, 1)
    pre = train_text(tmp_path, "pre", f"train={train_file}")  # two labels
    learned = torch.load(pre / "checkpoints" / "best.pt", map_location="cpu", weights_only=True)[
        "model"
    ]
    tags = tagged_sentences(tmp_path / "tags.conll", 100, 1)
    tuned = transduce.load(
        train_text(
            tmp_path, "tuned", "task=entities", "format=conll", f"train={tags}", f"init={pre}"
        )
    )
    assert (tuned.run_dir / "spm.model").read_bytes() == (pre / "spm.model").read_bytes()
    begun = load_init(build_text_model(tuned.cfg, len(tuned.tokenizer), 3), str(pre)).state_dict()
    for key in ("embed.embedding.weight", "encoder.layers.0.self_attn.q_proj.weight"):
        assert torch.equal(begun[key], learned[key])
    assert begun["head.weight"].shape[0] == 3 != learned["head.weight"].shape[0]
    ensemble = train_text(tmp_path, "ensemble", f"train={train_file}", "members=2")
    argv = ["text", "train", "task=entities", "format=conll", f"train={tags}", f"init={ensemble}"]
    assert main([*argv, *TEXT_SETTINGS, "--run-dir", str(tmp_path / "from_ensemble")]) == 2
    assert "the pre-trained run is an ensemble" in capsys.readouterr().err
    assert not (tmp_path / "from_ensemble" / "checkpoints").exists()
