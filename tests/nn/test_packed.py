import pytest
import torch
import torch.nn.functional as F
from torch import nn

from tests.helpers.linears import tiny_and_swapped
from transduce.device import bf16_is_fast, fp32_packing_pays
from transduce.nn import padding_mask
from transduce.nn.packed import PackedLinear, pack_linears, packing_supported, unpack_linears

needs_bf16 = pytest.mark.skipif(
    not (packing_supported() and bf16_is_fast(torch.device("cpu"))),
    reason="packed bf16 layers need oneDNN and a CPU with bfloat16 (AVX-512 BF16 or AMX)",
)
needs_fp32 = pytest.mark.skipif(
    not packing_supported(torch.float32), reason="packed fp32 layers need a PyTorch with oneDNN"
)


def autocast():
    return torch.autocast("cpu", dtype=torch.bfloat16)


@needs_bf16
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


@needs_bf16
def test_outside_autocast_a_packed_layer_is_the_float_layer():
    linear = nn.Linear(32, 48)
    x = torch.randn(5, 32)
    with torch.no_grad():
        got = PackedLinear(linear)(x)
    assert got.dtype == torch.float32 and torch.equal(got, F.linear(x, linear.weight, linear.bias))


@needs_bf16
def test_every_linear_of_a_transformer_is_packed_and_it_computes_as_under_autocast():
    model, packed = tiny_and_swapped(pack_linears)
    src, tgt = torch.randint(4, 300, (8, 11)), torch.randint(4, 300, (8, 9))
    src[0, 8:] = 0
    mask = padding_mask(src, 0)
    with torch.no_grad(), autocast():
        assert torch.equal(packed(src, tgt, mask), model(src, tgt, mask))


@needs_bf16
def test_a_bf16_translator_on_the_cpu_is_packed_and_translates_as_before(trained_run):
    import transduce

    bf16 = transduce.load(trained_run, "cpu", "bf16", verbose=False)
    fp32 = transduce.load(trained_run, "cpu", "fp32", verbose=False)
    assert {m.dtype for m in bf16.model.modules() if type(m) is PackedLinear} == {torch.bfloat16}
    plain = transduce.load(trained_run, "cpu", "fp32", verbose=False)
    unpack_linears(plain.model)  # fp32 is packed on AMD CPUs only (fp32_packing_pays)
    assert not any(type(m) is PackedLinear for m in plain.model.modules())
    plain.precision = "bf16"  # the same model under autocast, unpacked
    lines = ["seven thousand two", "five hundred", "ninety one"]
    assert bf16.translate(lines, beam=3) == plain.translate(lines, beam=3)
    assert (
        bf16.attention("five hundred").cross[0].dtype
        == fp32.attention("five hundred").cross[0].dtype
    )


@needs_fp32
@pytest.mark.parametrize("bias", [True, False])
def test_a_packed_fp32_layer_is_the_linear_layer_and_each_row_its_own(bias):
    torch.manual_seed(0)
    linear = nn.Linear(256, 1000, bias=bias)
    packed = PackedLinear(linear, torch.float32)
    x = torch.randn(3, 70, 256)
    with torch.no_grad():
        got, expected = packed(x), linear(x)
        rows = x.view(-1, 256)
        # a row gives the same output, bit for bit, alone or in any batch (MKL's sgemm,
        # which F.linear runs, need not: its blocking changes with the number of rows)
        batches = {m: packed(rows[:m]) for m in (1, 2, 5, 7, 33, 80, 209)}
    assert got.dtype == torch.float32
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)
    for m, out in batches.items():
        assert torch.equal(out, got.view(-1, 1000)[:m]), m
    with torch.no_grad(), autocast():  # under autocast, as the float layer
        assert torch.equal(packed(x), linear(x))


@needs_fp32
def test_a_packed_layer_is_bf16_or_fp32():
    with pytest.raises(ValueError, match="bfloat16 or float32, not torch.float16"):
        PackedLinear(nn.Linear(4, 4), torch.float16)


@pytest.mark.skipif(
    not (packing_supported(torch.float32) and fp32_packing_pays()),
    reason="fp32 translation packs its layers on AMD x86 CPUs only (Intel's keep MKL)",
)
def test_an_fp32_translator_on_the_cpu_is_packed_and_its_views_use_the_same_layers(trained_run):
    import transduce

    fp32 = transduce.load(trained_run, "cpu", "fp32", verbose=False)
    packed = [m for m in fp32.model.modules() if type(m) is PackedLinear]
    assert packed and {m.dtype for m in packed} == {torch.float32}
    assert fp32.packed  # done sentences wait in the batch, as with bf16
    plain = transduce.load(trained_run, "cpu", "fp32", verbose=False)
    assert unpack_linears(plain.model) > 0
    lines = ["seven thousand two", "five hundred", "ninety one", "three"]
    assert not any(type(m) is PackedLinear for m in plain.model.modules()) and not plain.packed
    assert fp32.translate(lines, beam=3) == plain.translate(lines, beam=3)
    # the attention view runs the packed layers too, and shows the translation's tokens
    calls = []
    packed[0].register_forward_hook(lambda *_: calls.append(1))
    maps = fp32.attention("five hundred")
    assert calls and maps.translation == fp32.translate(["five hundred"])[0]


def test_fp32_translation_packs_on_amd_cpus_and_keeps_mkl_elsewhere(monkeypatch, trained_run):
    import transduce
    from transduce import device

    for vendor, machine, packs in [
        ("AuthenticAMD", "x86_64", True),
        ("GenuineIntel", "x86_64", False),
        ("", "x86_64", False),
        ("AuthenticAMD", "arm64", False),
    ]:
        monkeypatch.setattr(device, "cpu_vendor", lambda vendor=vendor: vendor)
        monkeypatch.setattr(device.platform, "machine", lambda machine=machine: machine)
        assert device.fp32_packing_pays() is packs, (vendor, machine)
    if packing_supported(torch.float32):
        monkeypatch.setattr(device, "cpu_vendor", lambda: "GenuineIntel")
        monkeypatch.setattr(device.platform, "machine", lambda: "x86_64")
        fp32 = transduce.load(trained_run, "cpu", "fp32", verbose=False)
        assert not any(type(m) is PackedLinear for m in fp32.model.modules())


def test_the_cpu_vendor_is_read_from_proc_cpuinfo(tmp_path):
    from transduce import device

    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 23\n")
    assert device.cpu_vendor(str(info)) == "AuthenticAMD"
    info.unlink()
    assert device.cpu_vendor(str(info)) == ""
