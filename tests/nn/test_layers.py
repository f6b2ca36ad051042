import pytest
import torch
import torch.nn.functional as F

from transduce.nn.layers import PositionwiseFeedForward


@pytest.mark.parametrize("activation, function", [("relu", F.relu), ("gelu", F.gelu)])
def test_feed_forward_applies_its_activation_between_the_two_maps(activation, function):
    ffn = PositionwiseFeedForward(d_model=8, d_ff=16, activation=activation)
    x = torch.randn(2, 3, 8)
    expected = function(x @ ffn.w_1.weight.T + ffn.w_1.bias) @ ffn.w_2.weight.T + ffn.w_2.bias
    torch.testing.assert_close(ffn(x), expected)
    with pytest.raises(KeyError):
        PositionwiseFeedForward(d_model=8, d_ff=16, activation="swish")


def test_post_norm_drops_out_the_sublayer_output_before_the_residual_sum():
    """§5.4: LayerNorm(x + Dropout(Sublayer(x))): dropout neither on x nor on the sum."""
    from transduce.nn.dropout import dropout
    from transduce.nn.layers import PostNorm

    residual = PostNorm(8, dropout=0.5).train()
    x, y = torch.randn(4, 3, 8), torch.randn(4, 3, 8)
    # a zero sub-layer output leaves LayerNorm(x) whatever dropout draws
    out, _ = residual(x, lambda h: (torch.zeros_like(h), None))
    torch.testing.assert_close(out, residual.norm(x))
    torch.manual_seed(5)
    out, _ = residual(x, lambda h: (y, None))
    torch.manual_seed(5)
    expected = residual.norm(x + dropout(y, 0.5, training=True))
    torch.testing.assert_close(out, expected)
    assert not torch.allclose(out, residual.norm(x + y))  # dropout did act


@pytest.mark.parametrize("activation, function", [("relu", F.relu), ("gelu", F.gelu)])
def test_the_configured_activation_reaches_encoder_and_decoder(activation, function):
    from transduce.nn import build_transformer, preset

    model = build_transformer(preset("tiny", 20, activation=activation))
    layers = [*model.encoder.layers, *model.decoder.layers]
    assert all(layer.ffn.activation is function for layer in layers)
