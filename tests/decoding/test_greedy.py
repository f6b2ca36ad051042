import torch

from transduce.decoding import greedy_search
from transduce.nn import TransformerConfig, build_transformer, padding_mask

PAD, BOS, EOS = 0, 1, 2


def uncached_greedy(model, src, max_len):
    """Greedy search by recomputing the whole prefix at every step."""
    mask = padding_mask(src, PAD)
    ys = torch.full((src.shape[0], 1), BOS)
    for _ in range(max_len):
        next_token = model(src, ys, mask)[:, -1].argmax(-1, keepdim=True)
        ys = torch.cat([ys, next_token], 1)
    return ys[:, 1:]


@torch.no_grad()
def test_cached_greedy_equals_uncached_greedy():
    model = build_transformer(
        TransformerConfig(
            src_vocab_size=40,
            d_model=32,
            d_ff=64,
            num_heads=4,
            num_encoder_layers=2,
            num_decoder_layers=2,
        )
    ).eval()
    src = torch.randint(3, 40, (4, 6))
    src[2, 3:] = PAD
    with torch.no_grad():
        model.generator.weight[EOS] -= 10  # keep EOS away so every row runs the full length
    cached = greedy_search(model, src, padding_mask(src, PAD), BOS, EOS, PAD, max_len=10)
    assert cached.shape == (4, 10)
    torch.testing.assert_close(cached, uncached_greedy(model, src, 10))


class ScriptedModel:
    """Emits a fixed token sequence per row, whatever it is fed: ids from ``script``."""

    def __init__(self, script: list[list[int]], vocab: int = 6):
        self.script, self.vocab = script, vocab

    def start(self, src, src_mask):
        return 0

    def step(self, tokens, t):
        logits = torch.full((len(self.script), 1, self.vocab), -1.0)
        for row, seq in enumerate(self.script):
            logits[row, 0, seq[min(t, len(seq) - 1)]] = 1.0
        return logits, t + 1


def test_greedy_stops_at_eos_and_pads_finished_rows():
    model = ScriptedModel([[3, EOS, 4, 4], [4, 5, 3, EOS]])
    out = greedy_search(model, torch.zeros(2, 1, dtype=torch.long), None, BOS, EOS, PAD, 10)
    assert out.tolist() == [[3, EOS, PAD, PAD], [4, 5, 3, EOS]]


def test_greedy_respects_max_len():
    model = ScriptedModel([[3, 3, 3, 3, 3, 3]])
    out = greedy_search(model, torch.zeros(1, 1, dtype=torch.long), None, BOS, EOS, PAD, 3)
    assert out.tolist() == [[3, 3, 3]]
