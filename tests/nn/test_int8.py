import os
import subprocess
import sys

import pytest
import torch
from torch import nn

from tests.helpers.linears import tiny_and_swapped
from transduce.device import int8_supported
from transduce.nn import int8, padding_mask
from transduce.nn.int8 import Int8Linear, input_levels, quantize_linears

pytestmark = pytest.mark.skipif(
    not int8_supported(), reason="this PyTorch build has no oneDNN int8 kernel (x86 CPU only)"
)


@pytest.fixture(params=["probed", "reduced"])
def levels(request, monkeypatch):
    """The input range this CPU's probe chose, and the reduced one forced: a CPU with VNNI
    never takes the reduced range itself, yet it must stay right wherever it is taken."""
    if request.param == "reduced":
        monkeypatch.setattr(int8, "input_levels", lambda: int8.REDUCED_LEVELS)
    return int8.input_levels()


@pytest.mark.parametrize("bias", [True, False])
def test_an_int8_layer_is_the_float_layer_within_its_quantization_step(bias, levels):
    linear = nn.Linear(64, 640, bias=bias)
    x = torch.randn(2, 40, 64) * 3  # 80 rows × 640 outputs: the int8 kernel's size
    quantized = Int8Linear(linear)
    assert quantized.levels == levels
    out, expected = quantized(x), linear(x).detach()
    assert out.shape == expected.shape and out.dtype == torch.float32
    # each product carries at most half a step of x_i (max|x_i| / levels) and of w_j
    # (max|w_j| / 127)
    x_step = x.abs().amax(-1, keepdim=True) / levels
    w_step = linear.weight.abs().amax(1) / 127  # (640,)
    bound = 0.5 * (x_step * linear.weight.abs().sum(1) + w_step * x.abs().sum(-1, keepdim=True))
    assert ((out - expected).abs() <= bound * 1.01 + 1e-5).all()
    assert (out - expected).abs().max() > 0  # it is int8, not the float layer again


def test_inputs_and_weights_on_the_int8_grids_multiply_exactly(levels):
    # a weight row whose largest entry is ±127 steps and an input whose largest magnitude
    # is `levels` steps are represented exactly: only the sums' rounding remains
    torch.manual_seed(1)
    steps = torch.randint(-127, 128, (512, 32)).float()
    steps[:, 0] = 127
    linear = nn.Linear(32, 512)
    linear.weight.data = steps * 0.01
    x = torch.randint(-levels, levels + 1, (64, 32)).float() * 0.05
    x[:, 0] = -levels * 0.05  # every row's largest magnitude: `levels` steps
    torch.testing.assert_close(Int8Linear(linear)(x), linear(x).detach(), rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_inputs_and_weights_at_the_top_of_their_ranges_do_not_saturate_the_sums(sign, levels):
    # the case AVX2 without VNNI got wrong: every byte pair at its largest, added in 16 bits
    # (a row of ones times rows of ones gave 0.03 for 64 before the probe chose the range)
    linear = nn.Linear(64, 64, bias=False)
    linear.weight.data.fill_(1.0)
    x = torch.full((16, 64), sign)
    torch.testing.assert_close(Int8Linear(linear)(x), torch.full((16, 64), 64 * sign))


def test_the_probe_chooses_a_range_whose_extreme_product_is_exact():
    # what input_levels promises, checked on the kernel directly at the level it chose
    levels = input_levels()
    assert levels in (int8.FULL_LEVELS, int8.REDUCED_LEVELS)
    assert int8.extreme_product_is_exact(levels)


def test_zero_stays_exact_and_an_all_zero_input_gives_the_bias():
    linear = nn.Linear(16, 1024)
    out = Int8Linear(linear)(torch.zeros(64, 16))
    torch.testing.assert_close(out, linear.bias.detach().expand(64, 1024))


def test_a_row_gives_the_same_output_alone_or_in_any_batch():
    # each row has its own input scale, so a sentence translates the same in any batch
    linear = nn.Linear(256, 1024)
    layer = Int8Linear(linear)
    batch = torch.randn(64, 256)
    batch[5] *= 100  # a loud row must not coarsen the others' steps
    together = layer(batch)
    for i in (0, 5, 63):
        assert torch.equal(layer(batch[i : i + 1]), together[i : i + 1])
    assert not torch.equal(together, linear(batch).detach())  # and it is int8


def test_every_linear_of_a_transformer_is_swapped_and_its_outputs_stay_close(levels):
    model, quantized = tiny_and_swapped(quantize_linears)
    # 64 sentences: 704 source and 576 target rows, enough for the int8 kernel everywhere
    src, tgt = torch.randint(4, 300, (64, 11)), torch.randint(4, 300, (64, 9))
    src[0, 8:] = 0  # padding
    mask = padding_mask(src, 0)
    with torch.no_grad():
        expected = model(src, tgt, mask).log_softmax(-1)
        got = quantized(src, tgt, mask).log_softmax(-1)
    assert (got - expected).abs().max() < 0.05 * expected.abs().max()
    # the model's choices survive: the same best next token almost everywhere
    assert (got.argmax(-1) == expected.argmax(-1)).float().mean() > 0.95
    assert not torch.equal(got, expected)  # it is the int8 path, not float32 again


KERNEL_PROBE = """
import torch
from torch import nn
from transduce.nn.int8 import Int8Linear
with torch.no_grad():
    Int8Linear(nn.Linear(256, 256))(torch.randn(40, 256))
"""


def test_the_int8_layer_runs_on_a_compiled_kernel_not_onednns_reference_one():
    # oneDNN takes signed int8 inputs only on AMX; elsewhere (AVX-512 VNNI, AVX2) it ran
    # them on its reference kernel, some thousand times slower. Its verbose log names the
    # implementation each matrix product ran on.
    env = {**os.environ, "ONEDNN_VERBOSE": "1", "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        [sys.executable, "-c", KERNEL_PROBE], capture_output=True, text=True, env=env, check=True
    )
    products = [line.split(",") for line in done.stdout.splitlines() if ",exec,cpu,matmul," in line]
    if not products:
        pytest.skip("oneDNN's verbose log named no int8 matrix product on this build")
    implementations = {fields[6] for fields in products}
    assert not any(name.startswith("ref") for name in implementations), implementations
