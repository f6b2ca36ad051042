"""Ensembles: the mean of the members' probabilities, searched with every member's cache."""

import math

import pytest
import torch

from tests.helpers.beam import BOS, EOS, PAD, Uncached, random_model, sources
from transduce.decoding import beam_search, greedy_search
from transduce.decoding.ensemble import Ensemble, same_vocabulary
from transduce.nn import BahdanauSeq2Seq, padding_mask


def rnn_model():
    model = BahdanauSeq2Seq(30, 30, embed_size=16, num_hiddens=24)
    with torch.no_grad():
        model.generator.bias[EOS] += 1.5  # end sentences within a few steps
    return model.eval()


class UncachedEnsemble(Uncached):
    """The members' mean probability recomputed from the whole prefix at every step: no
    cache to reorder, so it is the reference for the cached ensemble."""

    def __init__(self, models):
        self.models = models

    def step(self, tokens, state):
        prefix = torch.cat([state.prefix, tokens], 1)
        probs = sum(
            torch.softmax(m(state.src, prefix, state.mask)[:, -1:].float(), -1) for m in self.models
        ) / len(self.models)
        return probs.log(), self.State(state.src, state.mask, prefix)


def test_a_step_gives_the_log_of_the_members_mean_probability():
    torch.manual_seed(1)
    a, b, src = random_model(), random_model(), sources()
    mask = padding_mask(src, PAD)
    tokens = torch.full((4, 1), BOS)
    with torch.no_grad():
        out, _ = Ensemble([a, b]).step(tokens, Ensemble([a, b]).start(src, mask))
        expected = (
            torch.softmax(a.step(tokens, a.start(src, mask))[0], -1)
            + torch.softmax(b.step(tokens, b.start(src, mask))[0], -1)
        ) / 2
    torch.testing.assert_close(out.exp(), expected, rtol=1e-5, atol=1e-6)
    # not the mean of the log-probabilities (a geometric mean, which is not normalised)
    assert out.exp().sum(-1).sub(1).abs().max() < 1e-5


def test_an_ensemble_of_one_model_searches_as_that_model():
    model, src = random_model(), sources()
    mask = padding_mask(src, PAD)
    for search in (
        lambda m: greedy_search(m, src, mask, BOS, EOS, PAD, max_len=20).tolist(),
        lambda m: [
            [(h.tokens, round(h.score, 4)) for h in hyps]
            for hyps in beam_search(m, src, mask, BOS, EOS, beam_size=3, nbest=2)
        ],
    ):
        assert search(Ensemble([model])) == search(model)
        assert search(Ensemble([model, model])) == search(model)


@pytest.mark.parametrize("kinds", [("transformer", "transformer"), ("transformer", "rnn")])
def test_cached_ensemble_search_equals_uncached_search(kinds):
    torch.manual_seed(2)
    models = [random_model() if k == "transformer" else rnn_model() for k in kinds]
    src = sources()
    mask = padding_mask(src, PAD)
    cached = beam_search(
        Ensemble(models),
        src,
        mask,
        BOS,
        EOS,
        beam_size=3,
        nbest=3,
        max_len=torch.tensor([9, 4, 12, 7]),
    )  # sentences leave at times
    with torch.no_grad():
        uncached = beam_search(
            UncachedEnsemble(models),
            src,
            mask,
            BOS,
            EOS,
            beam_size=3,
            nbest=3,
            max_len=torch.tensor([9, 4, 12, 7]),
        )
    for a, b in zip(cached, uncached):
        assert [h.tokens for h in a] == [h.tokens for h in b]
        assert [h.score for h in a] == pytest.approx([h.score for h in b], abs=1e-4)
    alone = beam_search(
        models[0], src, mask, BOS, EOS, beam_size=3, nbest=3, max_len=torch.tensor([9, 4, 12, 7])
    )
    assert [[h.tokens for h in x] for x in alone] != [[h.tokens for h in x] for x in cached]


def test_probabilities_are_averaged_not_log_probabilities():
    """Member 1 gives A .6, B .3, C .1; member 2 A .001, B .3, C .699. The mean probability
    prefers C (.40); a mean of log-probabilities would prefer B."""
    A, B_, C = 3, 4, 5

    class Fixed:
        def __init__(self, probs):
            self.logits = torch.full((1, 1, 6), -math.inf)
            for token, p in probs.items():
                self.logits[0, 0, token] = math.log(p)

        def start(self, src, mask):
            return Fixed.State()

        def step(self, tokens, state):
            return self.logits.expand(tokens.shape[0], 1, 6), state

        class State:
            def reorder(self, indices):
                return self

    members = [Fixed({A: 0.6, B_: 0.3, C: 0.1}), Fixed({A: 0.001, B_: 0.3, C: 0.699})]
    src = torch.tensor([[A]])
    out = greedy_search(Ensemble(members), src, padding_mask(src, PAD), BOS, EOS, PAD, 1)
    assert out.tolist() == [[C]]


def test_vocabularies_are_compared_piece_by_piece():
    class Pieces:
        def __init__(self, *pieces):
            self.all = list(pieces)

        def __len__(self):
            return len(self.all)

        def pieces(self, ids):
            return [self.all[i] for i in ids]

    assert same_vocabulary(Pieces("<pad>", "a", "b"), Pieces("<pad>", "a", "b"))
    assert not same_vocabulary(Pieces("<pad>", "a", "b"), Pieces("<pad>", "b", "a"))
    assert not same_vocabulary(Pieces("<pad>", "a"), Pieces("<pad>", "a", "b"))
