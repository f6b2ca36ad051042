import math

import pytest
import torch

from tests.helpers.beam import BOS, EOS, PAD, A, B, C, Uncached, V, random_model, sources
from transduce.decoding import beam_search, greedy_search, length_penalty
from transduce.nn import padding_mask


class TableState:
    def __init__(self, prefixes):
        self.prefixes = prefixes  # per row: (sentence, BOS, tokens…)

    def reorder(self, indices):
        return TableState([self.prefixes[i] for i in indices.tolist()])


class TableModel:
    """Next-token probabilities looked up by prefix, one table per sentence; a prefix not in
    the table gets ``default``. Counts its steps."""

    def __init__(self, *tables, default=None):
        self.tables, self.default, self.calls = tables, default or {EOS: 1.0}, 0
        self.rows = []  # sentences stepped at each call

    def start(self, src, src_mask):
        return TableState([(b,) for b in range(src.shape[0])])

    def step(self, tokens, state):
        self.calls += 1
        prefixes = [p + (t,) for p, t in zip(state.prefixes, tokens[:, -1].tolist())]
        self.rows.append(sorted({p[0] for p in prefixes}))
        logits = torch.full((len(prefixes), 1, V), float("-inf"))
        for row, prefix in enumerate(prefixes):
            probs = self.tables[prefix[0]].get(prefix[2:], self.default)
            for token, p in probs.items():
                logits[row, 0, token] = math.log(p)
        return logits, TableState(prefixes)


TABLE = {
    (): {A: 0.5, B: 0.4, EOS: 0.1},
    (A,): {EOS: 0.25, C: 0.65, B: 0.1},
    (B,): {EOS: 0.9, C: 0.1},
}


def search(model, sentences=1, **kwargs):
    src = torch.full((sentences, 1), A)
    kwargs.setdefault("max_len", torch.full((sentences,), 10))
    return beam_search(
        model, src, torch.ones(sentences, 1, 1, dtype=torch.bool), BOS, EOS, **kwargs
    )


def test_best_hypothesis_without_length_penalty_and_early_stop():
    model = TableModel(TABLE)
    [[best]] = search(model, beam_size=2, alpha=0.0)
    assert best.tokens == [B, EOS]
    assert best.log_prob == pytest.approx(math.log(0.4 * 0.9))
    assert best.score == pytest.approx(math.log(0.36))
    # after step 2, "A C" (0.325) can no longer beat "B EOS" (0.36): no third step is taken
    assert model.calls == 2


def test_a_finished_sentence_leaves_the_batch():
    long = {(): {A: 1.0}, (A,): {A: 1.0}, (A, A): {A: 1.0}, (A, A, A): {EOS: 1.0}}
    model = TableModel(TABLE, long, TABLE)
    hyps = search(model, sentences=3, beam_size=2, alpha=0.0)
    assert [h[0].tokens for h in hyps] == [[B, EOS], [A, A, A, EOS], [B, EOS]]
    # sentences 0 and 2 are done after step 2 (see the test above); 1 goes on alone
    assert model.rows == [[0, 1, 2], [0, 1, 2], [1], [1]]


def test_a_done_sentence_waits_for_its_group_and_finds_nothing_more():
    long = {(): {A: 1.0}, (A,): {A: 1.0}, (A, A): {A: 1.0}, (A, A, A): {EOS: 1.0}}
    alone, grouped = TableModel(TABLE, long, TABLE), TableModel(TABLE, long, TABLE)
    # early exit ends sentences 0 and 2 at "B EOS" after step 2, though under α = 1 "A C
    # EOS" (next step) would score better: sentence 0, waiting beside sentence 1 in a group
    # of two, must not take it
    kwargs = {"sentences": 3, "beam_size": 2, "alpha": 1.0, "early_exit": True}
    expected = search(alone, **kwargs)
    assert [[h.tokens for h in hyps] for hyps in expected] == [
        [[B, EOS]],
        [[A, A, A, EOS]],
        [[B, EOS]],
    ]
    assert search(grouped, group=2, **kwargs) == expected
    assert alone.rows == [[0, 1, 2], [0, 1, 2], [1], [1]]
    assert grouped.rows == [[0, 1, 2], [0, 1, 2], [0, 1], [0, 1]]


def test_length_penalty_prefers_the_longer_hypothesis():
    [[best]] = search(TableModel(TABLE), beam_size=2, alpha=1.0)
    assert best.tokens == [A, C, EOS]
    assert best.log_prob == pytest.approx(math.log(0.5 * 0.65 * 1.0))
    assert best.score == pytest.approx(math.log(0.325) / ((5 + 3) / 6))
    assert length_penalty(3, 1.0) == pytest.approx(8 / 6)


def test_nbest_order_and_scores():
    hyps = search(TableModel(TABLE), beam_size=3, alpha=0.0, nbest=3)[0]
    assert [h.tokens for h in hyps] == [[B, EOS], [A, C, EOS], [A, EOS]]
    assert [h.score for h in hyps] == pytest.approx([math.log(p) for p in (0.36, 0.325, 0.125)])


def test_eos_outside_the_top_k_is_not_finished():
    # with one beam, "EOS" (0.1) at step 1 is third best and must not become a hypothesis
    hyps = search(TableModel(TABLE), beam_size=1, alpha=0.0, nbest=1)[0]
    assert hyps[0].tokens == [A, C, EOS]


def test_maximum_length_forces_eos():
    model = TableModel({}, default={A: 0.99, EOS: 0.01})
    [[best]] = search(model, beam_size=1, alpha=0.0, max_len=torch.tensor([3]))
    assert best.tokens == [A, A, EOS]
    assert best.log_prob == pytest.approx(2 * math.log(0.99) + math.log(0.01))
    assert model.calls == 3


def test_default_maximum_is_source_length_plus_50():
    model = TableModel({}, default={A: 0.99, EOS: 0.01})
    src = torch.tensor([[A, A, EOS, PAD]])
    [[best]] = beam_search(model, src, padding_mask(src, PAD), BOS, EOS, beam_size=1)
    assert len(best.tokens) == 3 + 50


def test_sentences_in_a_batch_are_searched_independently():
    other = {(): {C: 0.7, EOS: 0.3}, (C,): {EOS: 1.0}}
    together = search(TableModel(TABLE, other), sentences=2, beam_size=2, alpha=0.0)
    assert [h[0].tokens for h in together] == [[B, EOS], [C, EOS]]
    assert together[1][0].log_prob == pytest.approx(math.log(0.7))


def test_nbest_cannot_exceed_the_beam():
    with pytest.raises(ValueError):
        search(TableModel(TABLE), beam_size=2, nbest=3)


# --- a real model -----------------------------------------------------------------------


def test_beam_of_one_equals_greedy():
    model, src = random_model(), sources()
    mask = padding_mask(src, PAD)
    greedy = greedy_search(model, src, mask, BOS, EOS, PAD, max_len=20)
    # one more position for beam search: where greedy is cut at 20, beam search forces EOS
    beams = beam_search(
        model, src, mask, BOS, EOS, beam_size=1, alpha=0.0, max_len=torch.full((4,), 21)
    )
    for row, [hyp] in zip(greedy.tolist(), beams):
        if EOS in row:
            assert hyp.tokens == row[: row.index(EOS) + 1]
        else:
            assert hyp.tokens == row + [EOS]


def test_a_batch_equals_its_sentences_one_by_one():
    model, src = random_model(), sources()
    mask = padding_mask(src, PAD)
    batch = beam_search(model, src, mask, BOS, EOS, beam_size=4, nbest=2)
    for i in range(4):
        length = int(mask[i].sum())
        alone = beam_search(
            model,
            src[i : i + 1, :length],
            mask[i : i + 1, :, :length],
            BOS,
            EOS,
            beam_size=4,
            nbest=2,
        )[0]
        assert [h.tokens for h in alone] == [h.tokens for h in batch[i]]
        assert [h.score for h in alone] == pytest.approx([h.score for h in batch[i]], abs=1e-5)


@pytest.mark.parametrize("early_exit", [False, True])
def test_a_grouped_search_equals_one_whose_sentences_leave_at_once(early_exit):
    torch.manual_seed(0)
    model, src = random_model(), sources()
    mask = padding_mask(src, PAD)
    runs = [
        beam_search(model, src, mask, BOS, EOS, beam_size=3, nbest=2, early_exit=early_exit,
                    group=group)
        for group in (1, 3)
    ]  # fmt: skip
    for a, b in zip(*runs):
        assert [h.tokens for h in a] == [h.tokens for h in b]
        assert [h.score for h in a] == pytest.approx([h.score for h in b], abs=1e-5)


def test_cached_search_equals_uncached_search():
    model, src = random_model(), sources()
    mask = padding_mask(src, PAD)
    cached = beam_search(model, src, mask, BOS, EOS, beam_size=3, nbest=3)
    with torch.no_grad():
        uncached = beam_search(Uncached(model), src, mask, BOS, EOS, beam_size=3, nbest=3)
    for a, b in zip(cached, uncached):
        assert [h.tokens for h in a] == [h.tokens for h in b]
        assert [h.score for h in a] == pytest.approx([h.score for h in b], abs=1e-5)


def test_power_length_penalty_divides_by_length_to_the_alpha():
    from transduce.decoding.beam import length_penalty

    assert length_penalty(9, 0.5, "power") == 3.0
    assert length_penalty(7, 1.0, "wu") == 2.0
    with pytest.raises(ValueError, match="style"):
        length_penalty(3, 0.6, "gnmt")


def test_no_repeat_ngram_blocks_a_loop():
    """The best path is A A A (the bigram A A twice); with bigrams blocked it cannot be."""
    loop = {
        (): {A: 1.0},
        (A,): {A: 0.9, B: 0.1},
        (A, A): {A: 0.9, B: 0.1},
        (A, A, A): {EOS: 1.0},
        (A, B): {EOS: 1.0},
        (A, A, B): {EOS: 1.0},
    }
    [[looping]] = search(TableModel(loop), beam_size=3, alpha=0.0)
    assert looping.tokens == [A, A, A, EOS]
    [[blocked]] = search(TableModel(loop), beam_size=3, alpha=0.0, no_repeat_ngram=2)
    assert blocked.tokens == [A, B, EOS]  # A A B EOS (0.09) loses to A B EOS (0.1)
    [[trigram]] = search(TableModel(loop), beam_size=3, alpha=0.0, no_repeat_ngram=3)
    assert trigram.tokens == [A, A, A, EOS]  # A A A holds no trigram twice


@pytest.mark.parametrize("V", [64, 100, 8000, 7])
def test_best_extensions_are_the_flat_top_k(V):
    # every chunk size against the plain top-k over all K·V sums, vocabularies that fill
    # their chunks, that do not (padding), and smaller than one chunk
    from transduce.decoding.beam import best_extensions

    torch.manual_seed(V)
    n, K, k = 6, 5, 10
    log_probs = torch.randn(n, K, V).log_softmax(-1)
    scores = torch.randn(n, K) * 3
    scores[0, 1:] = float("-inf")  # the first step: only beam 0 is live
    expected, flat = (scores[..., None] + log_probs).view(n, K * V).topk(k, dim=1)
    for chunk in (1, 8, 64, 128):
        top, beam, token = best_extensions(log_probs, scores, k, chunk)
        assert torch.equal(top, expected), chunk
        possible = expected.isfinite()  # random values: no ties among them
        assert torch.equal((beam * V + token)[possible], flat[possible]), chunk


def test_best_extensions_with_fewer_possible_than_asked_stay_in_the_vocabulary():
    from transduce.decoding.beam import best_extensions

    n, K, V = 2, 3, 100  # 100 tokens: the last 64-token chunk is padded
    log_probs = torch.full((n, K, V), float("-inf"))
    log_probs[:, :, EOS] = -0.5  # at the maximum length only EOS may follow
    scores = torch.tensor([[-1.0, -2.0, -3.0], [-1.0, float("-inf"), float("-inf")]])
    top, beam, token = best_extensions(log_probs, scores, 2 * K)
    assert top[0, :3].tolist() == [-1.5, -2.5, -3.5] and beam[0, :3].tolist() == [0, 1, 2]
    assert (token[:, 0] == EOS).all() and top[1, 0] == -1.5
    assert torch.isinf(top[0, 3:]).all() and torch.isinf(top[1, 1:]).all()
    assert (token >= 0).all() and (token < V).all() and (beam < K).all()


def test_an_impossible_pick_in_the_padding_is_read_as_a_real_token():
    from transduce.decoding.beam import best_extensions

    # 65 tokens: the second chunk is token 64 and 63 padding slots, and only token 64 is
    # possible, so the second pick (-inf) falls next to it, in the padding
    log_probs = torch.full((1, 1, 65), float("-inf"))
    log_probs[0, 0, 64] = -0.5
    top, beam, token = best_extensions(log_probs, torch.zeros(1, 1), 2, chunk=64)
    assert top[0, 0] == -0.5 and token[0, 0] == 64 and torch.isinf(top[0, 1])
    assert 0 <= token[0, 1] < 65 and beam[0, 1] == 0


def test_early_exit_ends_a_sentence_when_its_best_candidate_is_eos():
    # step 1: EOS (0.6) is the best candidate, A (0.4) goes on; step 2: "A EOS" (0.4)
    # has the better score under α = 1 (log 0.4 / 2 > log 0.6 / 1 with |Y|^α)
    table = {(): {EOS: 0.6, A: 0.4}, (A,): {EOS: 1.0}}
    exact, early = TableModel(table), TableModel(table)
    [[best]] = search(exact, beam_size=2, alpha=1.0, lenpen_style="power")
    [[first]] = search(early, beam_size=2, alpha=1.0, lenpen_style="power", early_exit=True)
    assert best.tokens == [A, EOS] and exact.calls == 2
    assert first.tokens == [EOS] and early.calls == 1
    # TABLE's best candidate is A at step 1, so the search goes on; at step 2 it is
    # "B EOS" (0.36), which ends it, where the exact search finds "A C EOS" (see above)
    model = TableModel(TABLE)
    [[shorter]] = search(model, beam_size=2, alpha=1.0, early_exit=True)
    assert shorter.tokens == [B, EOS] and model.calls == 2


def test_early_exit_waits_for_nbest_finished_hypotheses():
    table = {(): {EOS: 0.6, A: 0.4}, (A,): {EOS: 1.0}}
    model = TableModel(table)
    hyps = search(model, beam_size=2, alpha=0.0, nbest=2, early_exit=True)[0]
    assert [h.tokens for h in hyps] == [[EOS], [A, EOS]] and model.calls == 2
