"""A small random Transformer and an uncached double of it, for the decoding tests."""

import torch

from transduce.nn import TransformerConfig, build_transformer

PAD, BOS, EOS, A, B, C = 0, 1, 2, 3, 4, 5


V = 6


def random_model():
    model = build_transformer(
        TransformerConfig(
            src_vocab_size=30,
            d_model=32,
            d_ff=64,
            num_heads=4,
            num_encoder_layers=2,
            num_decoder_layers=2,
        )
    )
    with torch.no_grad():
        model.generator.weight[EOS] += 0.3  # end sentences within a few steps
    return model.eval()


def sources():
    src = torch.randint(4, 30, (4, 6))
    src[1, 3:] = PAD
    src[3, 5:] = PAD
    return src


class Uncached:
    """The same model, but every step recomputes the whole prefix (no key/value cache)."""

    class State:
        def __init__(self, src, mask, prefix):
            self.src, self.mask, self.prefix = src, mask, prefix

        def reorder(self, i):
            return Uncached.State(self.src[i], self.mask[i], self.prefix[i])

    def __init__(self, model):
        self.model = model

    def start(self, src, mask):
        return self.State(src, mask, src.new_zeros(src.shape[0], 0))

    def step(self, tokens, state):
        prefix = torch.cat([state.prefix, tokens], 1)
        logits = self.model(state.src, prefix, state.mask)[:, -tokens.shape[1] :]
        return logits, self.State(state.src, state.mask, prefix)
