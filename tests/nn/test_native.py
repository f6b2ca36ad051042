"""The C kernels' build: once per machine into the cache, whole or not at all, and None
(the callers' PyTorch paths) without a compiler, with one that fails, or when turned off."""

import os
import platform
import time

import pytest
import torch

from transduce.nn import native

needs_compiler = pytest.mark.skipif(
    native.library("dropout") is None, reason="the kernels need a C compiler (cc, or $CC)"
)


@needs_compiler
def test_a_kernel_is_built_once_into_the_cache(monkeypatch, tmp_path):
    monkeypatch.setattr(native, "_loaded", {})
    monkeypatch.setenv("TRANSDUCE_CACHE", str(tmp_path))
    assert native.library("dropout") is not None
    [built] = tmp_path.glob("dropout-*.so")
    stamp = built.stat().st_mtime_ns
    monkeypatch.setattr(native, "_loaded", {})
    assert native.library("dropout") is not None and built.stat().st_mtime_ns == stamp
    assert [p.name for p in tmp_path.iterdir()] == [built.name]  # no work folder left


def test_no_kernel_without_a_compiler_with_a_failing_one_or_when_turned_off(monkeypatch, tmp_path):
    monkeypatch.setenv("TRANSDUCE_CACHE", str(tmp_path))
    for compiler in (str(tmp_path / "no-such-compiler"), "false"):
        monkeypatch.setattr(native, "_loaded", {})
        monkeypatch.setenv("CC", compiler)
        assert native.library("shifted_attention") is None
    assert not list(tmp_path.rglob("*.so"))  # nothing half-built left behind
    monkeypatch.delenv("CC")
    monkeypatch.setattr(native, "_loaded", {})
    monkeypatch.setenv("TRANSDUCE_FUSED", "0")
    assert native.library("dropout") is None


def test_the_log_line_says_why_the_kernels_are_not_used(monkeypatch, tmp_path):
    monkeypatch.setattr(native, "_loaded", {})
    monkeypatch.setattr(native, "_why", {})
    monkeypatch.setenv("TRANSDUCE_CACHE", str(tmp_path))
    monkeypatch.setenv("CC", str(tmp_path / "no-such-compiler"))
    line = native.describe()
    named = "dropout, smoothed_ce, shifted_attention, step_attention"
    assert line.startswith(f"C kernels: {named} not built (")
    assert "no-such-compiler" in line and line.endswith("PyTorch's operations instead")
    monkeypatch.setattr(native, "_loaded", {})
    monkeypatch.setenv("TRANSDUCE_FUSED", "0")
    assert "(TRANSDUCE_FUSED=0)" in native.describe()


@needs_compiler
def test_the_log_line_names_the_kernels_in_use(monkeypatch):
    monkeypatch.setattr(native, "_loaded", {})
    assert native.describe() == "C kernels: dropout, smoothed_ce, shifted_attention, step_attention"


x86 = pytest.mark.skipif(
    platform.machine().lower() not in ("x86_64", "amd64"), reason="the levels are x86-64's"
)


@needs_compiler
@x86
def test_a_kernel_is_built_for_the_level_pytorch_is_told_and_draws_the_same(monkeypatch, tmp_path):
    """Under ATEN_CPU_CAPABILITY=avx2 (how the suite stands for a CPU without AVX-512) the
    kernels are built for that level, not the machine's own, and compute the same."""
    monkeypatch.setenv("TRANSDUCE_CACHE", str(tmp_path))
    masks = {}
    for capability, arch in (("avx2", "x86_64_v3"), ("default", "x86_64"), ("", "native")):
        monkeypatch.setattr(native, "_loaded", {})
        monkeypatch.setenv("ATEN_CPU_CAPABILITY", capability)
        lib = native.library("dropout")
        assert lib is not None and len(list(tmp_path.glob(f"dropout-{arch}-*.so"))) == 1
        keep = torch.empty(4099, dtype=torch.bool)
        lib.dropout_mask(keep.data_ptr(), keep.numel(), 12345, 20000, 2)
        masks[arch] = keep
    assert torch.equal(masks["x86_64_v3"], masks["native"])
    assert torch.equal(masks["x86_64"], masks["native"])


@needs_compiler
def test_an_older_sources_build_is_removed_once_an_hour_old(monkeypatch, tmp_path):
    monkeypatch.setattr(native, "_loaded", {})
    monkeypatch.setenv("TRANSDUCE_CACHE", str(tmp_path))
    monkeypatch.delenv("ATEN_CPU_CAPABILITY", raising=False)
    old, recent, legacy, other = (
        tmp_path / name
        for name in (
            "dropout-native-0123456789abcdef.so",
            "dropout-native-fedcba9876543210.so",
            "dropout-0123456789abcdef.so",  # named before builds named their level
            "dropout-x86_64_v3-0123456789abcdef.so",  # another level's: kept
        )
    )
    for path in (old, recent, legacy, other):
        path.write_bytes(b"")
        hour_ago = time.time() - native.STALE_SECONDS - 60
        if path != recent:
            os.utime(path, (hour_ago, hour_ago))
    assert native.library("dropout") is not None
    assert not old.exists() and not legacy.exists()
    assert recent.exists() and other.exists()  # another process may be about to load it
