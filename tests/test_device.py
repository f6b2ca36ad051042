import platform
import warnings

import pytest
import torch

from transduce import device
from transduce.device import pick_device, resolve_precision
from transduce.errors import UserError


def test_auto_takes_cuda_then_mps_then_cpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    assert pick_device("auto") == torch.device("cpu")
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: True)
    assert pick_device("auto") == torch.device("mps")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert pick_device("auto") == torch.device("cuda")


@pytest.mark.parametrize(
    "name, message",
    [
        ("tpu", "is not a device"),
        ("cuda:x", "is not a device"),
        ("cuda:7", "cuda:7"),
        ("mps", "MPS is not available"),
    ],
)
def test_a_missing_or_unknown_device_is_one_user_error(monkeypatch, name, message):
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    with pytest.raises(UserError, match=message):
        pick_device(name)


def test_precision_choices():
    cpu = torch.device("cpu")
    assert resolve_precision("fp32", cpu) == "fp32"
    assert resolve_precision("auto", cpu) in ("bf16", "fp32")
    with pytest.raises(UserError, match="fp16 is for GPUs"):
        resolve_precision("fp16", cpu)
    with pytest.raises(UserError, match="precision must be one of"):
        resolve_precision("fp8", cpu)


def test_int8_is_for_translating_on_a_cpu(monkeypatch):
    cpu = torch.device("cpu")
    with pytest.raises(UserError, match="one of auto, bf16, fp16, fp32, not 'int8'"):
        resolve_precision("int8", cpu)  # training
    with pytest.raises(UserError, match="precision=int8 runs on the CPU; on cuda use"):
        resolve_precision("int8", torch.device("cuda"), decoding=True)
    monkeypatch.setattr(device, "int8_supported", lambda: False)
    with pytest.raises(UserError, match="no oneDNN int8 kernel"):
        resolve_precision("int8", cpu, decoding=True)
    monkeypatch.setattr(device, "int8_supported", lambda: True)
    assert resolve_precision("int8", cpu, decoding=True) == "int8"


def test_bf16_on_a_cpu_without_native_bfloat16_warns(monkeypatch):
    import transduce.device as device

    cpu = torch.device("cpu")
    monkeypatch.setattr(device, "bf16_is_fast", lambda dev: False)
    with pytest.warns(UserWarning, match="precision=bf16: this CPU has no native bfloat16"):
        assert resolve_precision("bf16", cpu) == "bf16"
    monkeypatch.setattr(device, "bf16_is_fast", lambda dev: True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert resolve_precision("bf16", cpu) == "bf16"
        assert resolve_precision("auto", cpu) == "bf16"


class _FakeLibc:
    def __init__(self):
        self.calls = []

    def mallopt(self, parameter, value):
        self.calls.append((parameter, value))
        return 1


def test_retaining_freed_memory_raises_glibcs_mmap_and_trim_thresholds(monkeypatch):
    libc = _FakeLibc()
    monkeypatch.setattr(device.sys, "platform", "linux")
    monkeypatch.setattr(
        device.ctypes,
        "CDLL",
        lambda name: libc if name == "libc.so.6" else pytest.fail(f"opened {name}"),
    )
    assert device.retain_freed_memory() is True
    # malloc.h: M_MMAP_THRESHOLD −3 up to its 32 MiB ceiling, M_TRIM_THRESHOLD −1
    assert libc.calls == [(-3, 32 * 2**20), (-1, 2**31 - 1)]


def test_retaining_freed_memory_is_a_no_op_without_glibc(monkeypatch):
    monkeypatch.setattr(device.ctypes, "CDLL", lambda name: pytest.fail("opened a C library"))
    monkeypatch.setattr(device.sys, "platform", "darwin")
    assert device.retain_freed_memory() is False

    def musl(name):
        raise OSError(f"{name}: cannot open shared object file")

    monkeypatch.setattr(device.sys, "platform", "linux")
    monkeypatch.setattr(device.ctypes, "CDLL", musl)
    assert device.retain_freed_memory() is False


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="needs glibc")
def test_retaining_freed_memory_takes_effect_on_this_glibc():
    assert device.retain_freed_memory() is True


@pytest.mark.outcome
def test_the_cpu_kernel_is_the_one_make_test_asked_for():
    """`make test` reruns the training-outcome tests under ATEN_CPU_CAPABILITY; if PyTorch
    ignored the variable (a misspelt value, a renamed variable), those runs would check the
    machine's own kernel again and prove nothing."""
    import os

    from tests.kernels import ORDER, other_kernels

    asked = os.environ.get("ATEN_CPU_CAPABILITY")
    own = torch.backends.cpu.get_cpu_capability().lower()
    if asked is None:
        pytest.skip("ATEN_CPU_CAPABILITY is not set: this pass runs the machine's own kernel")
    assert asked in ORDER and asked in other_kernels() + [own], (asked, own)
    assert own == asked, f"asked for the {asked} kernel, PyTorch runs {own}"
