import pytest
import torch
import torch.nn.functional as F
from torch import nn

from tests.helpers.linears import tiny_and_swapped
from transduce.device import bf16_is_fast
from transduce.nn import padding_mask
from transduce.nn.packed import PackedLinear, pack_linears, packing_supported

pytestmark = pytest.mark.skipif(
    not (packing_supported() and bf16_is_fast(torch.device("cpu"))),
    reason="packed bf16 layers need oneDNN and a CPU with bfloat16 (AVX-512 BF16 or AMX)",
)


def autocast():
    return torch.autocast("cpu", dtype=torch.bfloat16)


@pytest.mark.parametrize("bias", [True, False])
def test_under_autocast_a_packed_layer_is_autocasts_linear_bit_for_bit(bias):
    torch.manual_seed(0)
    linear = nn.Linear(256, 1000, bias=bias)
    packed = PackedLinear(linear)
    x = torch.randn(3, 70, 256)
    with torch.no_grad(), autocast():
        got, expected = packed(x), linear(x)
        rows = x.view(-1, 256)
        # a row gives the same output alone or in any batch (a served sentence's words
        # must not depend on its neighbours')
        alone = [packed(rows[i : i + 1]) for i in (0, 5, 209)]
    assert got.dtype == expected.dtype == torch.bfloat16
    assert torch.equal(got, expected)
    for i, out in zip((0, 5, 209), alone):
        assert torch.equal(out, got.view(-1, 1000)[i : i + 1])


def test_outside_autocast_a_packed_layer_is_the_float_layer():
    linear = nn.Linear(32, 48)
    x = torch.randn(5, 32)
    with torch.no_grad():
        got = PackedLinear(linear)(x)
    assert got.dtype == torch.float32 and torch.equal(got, F.linear(x, linear.weight, linear.bias))


def test_every_linear_of_a_transformer_is_packed_and_it_computes_as_under_autocast():
    model, packed = tiny_and_swapped(pack_linears)
    src, tgt = torch.randint(4, 300, (8, 11)), torch.randint(4, 300, (8, 9))
    src[0, 8:] = 0
    mask = padding_mask(src, 0)
    with torch.no_grad(), autocast():
        assert torch.equal(packed(src, tgt, mask), model(src, tgt, mask))


def test_a_bf16_translator_on_the_cpu_is_packed_and_translates_as_before(trained_run):
    import transduce

    bf16 = transduce.load(trained_run, "cpu", "bf16", verbose=False)
    fp32 = transduce.load(trained_run, "cpu", "fp32", verbose=False)
    assert any(type(m) is PackedLinear for m in bf16.model.modules())
    assert not any(type(m) is PackedLinear for m in fp32.model.modules())
    plain = transduce.load(trained_run, "cpu", "fp32", verbose=False)
    plain.precision = "bf16"  # the same model under autocast, unpacked
    lines = ["seven thousand two", "five hundred", "ninety one"]
    assert bf16.translate(lines, beam=3) == plain.translate(lines, beam=3)
    assert (
        bf16.attention("five hundred").cross[0].dtype
        == fp32.attention("five hundred").cross[0].dtype
    )
