import pytest
import torch
import torch.nn.functional as F

from transduce.nn.layers import PositionwiseFeedForward


@pytest.mark.parametrize("activation, function", [("relu", F.relu), ("gelu", F.gelu)])
def test_feed_forward_applies_its_activation_between_the_two_maps(activation, function):
    ffn = PositionwiseFeedForward(8, 16, activation=activation)
    x = torch.randn(2, 3, 8)
    expected = function(x @ ffn.w_1.weight.T + ffn.w_1.bias) @ ffn.w_2.weight.T + ffn.w_2.bias
    torch.testing.assert_close(ffn(x), expected)
    with pytest.raises(KeyError):
        PositionwiseFeedForward(8, 16, activation="swish")
