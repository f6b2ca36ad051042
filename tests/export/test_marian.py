import pytest
import torch

from transduce.errors import UserError
from transduce.export.marian import to_marian
from transduce.nn import TransformerConfig, build_transformer


def random_model(**overrides):
    torch.manual_seed(2)
    model = build_transformer(
        TransformerConfig(
            src_vocab_size=120,
            d_model=32,
            d_ff=64,
            num_heads=2,
            num_encoder_layers=2,
            num_decoder_layers=2,
            max_len=64,
            **overrides,
        )
    )
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.1)
    return model.eval()


class Ids:
    """The part of a tokenizer that to_marian reads."""

    pad_id, bos_id, eos_id = 0, 1, 2

    def __len__(self):
        return 120


def test_marian_copy_computes_the_same_logits():
    model = random_model()
    marian = to_marian(model, Ids())
    src = torch.tensor([[5, 9, 14, 2, 0], [7, 8, 9, 10, 2]])
    tgt = torch.tensor([[1, 20, 21, 0], [1, 30, 31, 32]])
    with torch.no_grad():
        ours = model(src, tgt, src.ne(0).unsqueeze(1))
        theirs = marian(input_ids=src, attention_mask=src.ne(0), decoder_input_ids=tgt).logits
    keep = tgt.ne(0)
    torch.testing.assert_close(theirs[keep], ours[keep], atol=1e-4, rtol=1e-4)


def test_pre_norm_models_are_refused():
    with pytest.raises(UserError, match="post-norm only"):
        to_marian(random_model(norm="pre"), None)
