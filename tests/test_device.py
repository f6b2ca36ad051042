import warnings

import pytest
import torch

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


@pytest.mark.parametrize("name, message", [
    ("tpu", "is not a device"), ("cuda:x", "is not a device"),
    ("cuda:7", "cuda:7"), ("mps", "MPS is not available")])
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
