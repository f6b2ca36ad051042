import pytest
import torch

from transduce.nn import TransformerConfig, build_transformer, padding_mask

PAD = 0


def model_and_batch(norm="post"):
    model = build_transformer(
        TransformerConfig(
            src_vocab_size=31,
            d_model=32,
            d_ff=64,
            num_heads=4,
            num_encoder_layers=2,
            num_decoder_layers=3,
            norm=norm,
        )
    ).eval()
    src = torch.randint(4, 31, (3, 7))
    src[1, 4:] = PAD
    return model, src, torch.randint(4, 31, (3, 9))


@pytest.mark.parametrize("norm", ["post", "pre"])
@torch.no_grad()
def test_incremental_decoding_equals_full_recomputation_step_by_step(norm):
    model, src, tgt = model_and_batch(norm)
    mask = padding_mask(src, PAD)
    full = model(src, tgt, mask)  # (B, T, V)
    state = model.start(src, mask)
    for t in range(tgt.shape[1]):
        logits, state = model.step(tgt[:, t : t + 1], state)
        assert state.length == t + 1
        torch.testing.assert_close(logits[:, 0], full[:, t], atol=1e-5, rtol=1e-5)


@torch.no_grad()
def test_decoding_several_positions_at_once_after_a_cache():
    model, src, tgt = model_and_batch()
    mask = padding_mask(src, PAD)
    full = model(src, tgt, mask)
    state = model.start(src, mask)
    first, state = model.step(tgt[:, :4], state)
    rest, state = model.step(tgt[:, 4:], state)
    torch.testing.assert_close(torch.cat([first, rest], 1), full, atol=1e-5, rtol=1e-5)


@torch.no_grad()
def test_reorder_selects_batch_rows():
    model, src, tgt = model_and_batch()
    mask = padding_mask(src, PAD)
    state = model.start(src, mask)
    _, state = model.step(tgt[:, :3], state)
    order = torch.tensor([2, 0, 0])
    reordered_logits, _ = model.step(tgt[order, 3:4], state.reorder(order))
    fresh = model.start(src[order], mask[order])
    _, fresh = model.step(tgt[order, :3], fresh)
    expected, _ = model.step(tgt[order, 3:4], fresh)
    torch.testing.assert_close(reordered_logits, expected, atol=1e-6, rtol=1e-6)


@torch.no_grad()
def test_cross_attention_keys_and_values_are_projected_once_per_source():
    model, src, tgt = model_and_batch()
    calls = []
    for layer in model.decoder.layers:
        layer.cross_attn.k_proj.register_forward_hook(lambda *_: calls.append(1))
    state = model.start(src, padding_mask(src, PAD))
    first = state.layers[0].cross_keys
    for t in range(5):
        _, state = model.step(tgt[:, t : t + 1], state)
    assert len(calls) == len(model.decoder.layers)
    assert state.layers[0].cross_keys is first


@torch.no_grad()
def test_cache_is_not_mutated_by_a_step():
    model, src, tgt = model_and_batch()
    state = model.start(src, padding_mask(src, PAD))
    _, after_one = model.step(tgt[:, :1], state)
    _, after_two = model.step(tgt[:, 1:2], after_one)
    assert state.length == 0 and after_one.length == 1 and after_two.length == 2


@pytest.mark.parametrize("need_weights", [False, True])
@torch.no_grad()
def test_beams_sharing_cross_attention_equal_copied_rows(need_weights):
    """expand_beams keeps one copy of the cross keys/values per sentence; stepping, reordering
    beams within their sentences and dropping a sentence give the logits (and weights) of a
    cache whose rows were copied out per beam."""
    model, src, tgt = model_and_batch()
    mask, K = padding_mask(src, PAD), 2
    rows = torch.arange(3).repeat_interleave(K)  # (6,)
    grouped = model.start(src, mask).expand_beams(K)
    copied = model.start(src, mask).reorder(rows)
    assert grouped.layers[0].cross_keys.shape[0] == 3 and copied.layers[0].cross_keys.shape[0] == 6

    def step(tokens, state):
        out = model.decode(tokens, cache=state, need_weights=need_weights)
        return model.generator(out.hidden), out.cache, out.cross_weights

    a, grouped, wa = step(tgt[rows, :2], grouped)
    b, copied, wb = step(tgt[rows, :2], copied)
    torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)
    if need_weights:
        torch.testing.assert_close(wa[-1], wb[-1], atol=1e-6, rtol=1e-6)
    # swap the beams of sentence 0, keep sentence 2 with its second beam twice, drop sentence 1
    order = torch.tensor([1, 0, 5, 5])
    grouped = grouped.reorder(order, torch.tensor([0, 2]))
    copied = copied.reorder(order)
    a, _, wa = step(tgt[rows[order], 2:3], grouped)
    b, _, wb = step(tgt[rows[order], 2:3], copied)
    torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)
    if need_weights:
        assert wa[0].shape == (4, 4, 1, 7)
        torch.testing.assert_close(wa[0], wb[0], atol=1e-6, rtol=1e-6)


@torch.no_grad()
def test_steps_that_branch_from_one_cache_never_see_each_other():
    """Once keys live in preallocated room, two steps from the same cache (and a reorder of
    an older one) must each give the logits of their own prefix."""
    model, src, tgt = model_and_batch()
    mask = padding_mask(src, PAD)
    state = model.start(src, mask)
    for t in range(3):  # past the first steps: the keys are in a slab now
        _, state = model.step(tgt[:, t : t + 1], state)
    kept = state.layers[0].self_keys.clone()
    other = torch.randint(4, 31, (3, 1))
    _, branch_a = model.step(tgt[:, 3:4], state)
    _, branch_b = model.step(other, state)  # writes where branch_a wrote, if it shared room
    a, _ = model.step(tgt[:, 4:5], branch_a)
    b, _ = model.step(tgt[:, 4:5], branch_b)
    full_a = model(src, tgt[:, :5], mask)[:, 4]
    full_b = model(src, torch.cat([tgt[:, :3], other, tgt[:, 4:5]], 1), mask)[:, 4]
    torch.testing.assert_close(a[:, 0], full_a, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(b[:, 0], full_b, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(state.layers[0].self_keys, kept)  # the older cache is intact
    order = torch.tensor([2, 2, 0])
    c, _ = model.step(tgt[order, 3:4], state.reorder(order))  # a reorder of the older cache
    torch.testing.assert_close(c[:, 0], model(src[order], tgt[order, :4], mask[order])[:, 3],
                               atol=1e-5, rtol=1e-5)  # fmt: skip
