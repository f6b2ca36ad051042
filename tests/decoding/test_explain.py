"""The explainer's numbers are the model's: the traced beam is the search the translator
runs, and one head opened up computes what the attention module itself computes."""

import numpy as np
import pytest
import torch

import transduce
from transduce.decoding.beam import beam_search
from transduce.decoding.inspect import translated_ids
from transduce.errors import UserError
from transduce.nn import padding_mask

SENTENCE = "seven hundred forty-two thousand one hundred nine"


@pytest.fixture(scope="module")
def model(trained_run):
    return transduce.load(trained_run, device="cpu", precision="fp32", verbose=False)


def test_the_traced_beam_is_the_search_that_translates(model):
    found = model.explain(SENTENCE, beam=4, lenpen=0.6)
    assert found.nbest[0]["text"] == model.translate(SENTENCE, beam=4, lenpen=0.6)
    assert [h["score"] for h in found.nbest] == sorted(
        (h["score"] for h in found.nbest), reverse=True
    )
    assert len(found.steps[0]["hypotheses"]) == 1  # all beams start as one: <s>
    for before, after in zip(found.steps, found.steps[1:]):
        continuing = sorted(
            (c for c in before["candidates"] if c["status"] == "continues"), key=lambda c: c["slot"]
        )
        assert len(continuing) == 4 == len(after["hypotheses"])
        for c, h in zip(continuing, after["hypotheses"]):  # slot j of the next step
            parent = before["hypotheses"][c["parent"]]
            assert h["tokens"] == parent["tokens"] + [c["token"]]
            assert h["log_prob"] == pytest.approx(c["log_prob"], abs=1e-4)
        for c in before["candidates"]:
            parent = before["hypotheses"][c["parent"]]
            step_prob = np.exp(c["log_prob"] - parent["log_prob"])
            shown = {n["token"]: n["prob"] for n in parent["next"]}
            if c["token"] in shown:  # the top-k list agrees with the candidate's own step
                assert shown[c["token"]] == pytest.approx(step_prob, abs=2e-3)
            if c["status"] == "finished":
                assert c["token"] == "</s>"
                assert c["score"] == pytest.approx(c["log_prob"] / before["penalty"], abs=1e-3)
    finished = [
        c["score"] for s in found.steps for c in s["candidates"] if c["status"] == "finished"
    ]
    assert max(finished) == pytest.approx(found.nbest[0]["score"], abs=1e-4)


def test_its_attention_is_the_apis(model):
    found = model.explain(SENTENCE, beam=5)
    maps = model.attention(SENTENCE, beam=5)
    assert found.maps.target == maps.target and found.maps.source == maps.source
    for kind in ("cross", "encoder", "decoder"):
        for mine, theirs in zip(found.maps.weights(kind), maps.weights(kind)):
            np.testing.assert_allclose(mine, theirs, atol=1e-6)
    table = found.positions["table"]
    position = np.arange(table.shape[0])[:, None]
    np.testing.assert_allclose(
        table[:, 0::2],
        np.sin(position / 10000 ** (np.arange(0, table.shape[1], 2) / table.shape[1])),
        atol=1e-5,
    )


def _module_output(model, kind, layer):
    """The attention module and what it returns itself, (Q, D), when the model reads the
    source and its translation (the pass the explainer reads)."""
    net, tok = model.model, model.tokenizer
    layers = net.encoder.layers if kind == "encoder" else net.decoder.layers
    module = layers[layer].cross_attn if kind == "cross" else layers[layer].self_attn
    src_ids, out_ids = translated_ids(model, SENTENCE, 5)
    src = torch.tensor([src_ids])
    mask = padding_mask(src, tok.pad_id)
    seen, original = {}, module.attend

    def attend(*args, **kwargs):
        seen["out"], weights = original(*args, **kwargs)
        return seen["out"], weights

    module.attend = attend
    try:
        with torch.no_grad():
            memory, _ = net.encode_with_weights(src, mask)
            if kind != "encoder":
                net.decode(torch.tensor([[tok.bos_id] + out_ids]), memory, mask)
    finally:
        del module.attend
    return module, seen["out"][0]


@pytest.mark.parametrize("kind", ["cross", "encoder", "decoder"])
def test_one_head_opened_up_computes_what_the_module_computes(model, kind):
    maps = model.attention(SENTENCE, beam=5)
    layer = len(maps.cross) - 1
    query = len(maps.labels(kind)[0]) // 2
    module, output = _module_output(model, kind, layer)
    heads = [model.head(SENTENCE, kind, layer, h, query) for h in range(module.num_heads)]
    for h, numbers in enumerate(heads):
        # the softmax is the weights the model reports
        np.testing.assert_allclose(numbers.weights, maps.weights(kind)[layer][h][query], atol=1e-5)
        np.testing.assert_allclose(
            numbers.scores, numbers.k @ numbers.q / np.sqrt(numbers.d_k), rtol=1e-5, atol=1e-5
        )
        assert numbers.weights.sum() == pytest.approx(1, abs=1e-5)
        assert numbers.query_token == maps.labels(kind)[0][query]
    # the heads' weighted sums, joined and projected, are the module's own output
    joined = torch.tensor(np.concatenate([n.output for n in heads]))
    with torch.no_grad():
        np.testing.assert_allclose(
            module.out_proj(joined).numpy(), output[query].numpy(), atol=1e-5
        )
    if kind == "decoder":  # the causal mask: no later token is seen
        assert not heads[0].mask[query + 1 :].any() and heads[0].mask[: query + 1].all()
        assert np.all(heads[0].weights[query + 1 :] == 0)


def test_tracing_changes_nothing(model):
    tok, net = model.tokenizer, model.model
    src = torch.tensor([[5, 6, 7, 8, tok.eos_id], [9, 10, tok.eos_id, 0, 0]])
    mask = padding_mask(src, tok.pad_id)
    plain = beam_search(net, src, mask, tok.bos_id, tok.eos_id, 3, nbest=2)
    steps = []
    traced = beam_search(net, src, mask, tok.bos_id, tok.eos_id, 3, nbest=2, trace=steps.append)
    assert plain == traced and steps and steps[0].alive == [0, 1]


def test_bad_requests_are_named(model):
    with pytest.raises(UserError, match="layer must be between 0 and"):
        model.head(SENTENCE, "cross", 99, 0, 0)
    with pytest.raises(UserError, match="kind must be one of"):
        model.head(SENTENCE, "sideways", 0, 0, 0)
    with pytest.raises(UserError, match="query must be between"):
        model.head(SENTENCE, "cross", 0, 0, 999)
    with pytest.raises(UserError, match="empty"):
        model.explain("   ")
    with pytest.raises(ValueError, match="top_k"):
        model.explain(SENTENCE, top_k=0)
