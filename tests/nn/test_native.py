"""The C kernels' build: once per machine into the cache, whole or not at all, and None
(the callers' PyTorch paths) without a compiler, with one that fails, or when turned off."""

import pytest

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
    assert line.startswith("C kernels: dropout, shifted_attention not built (")
    assert "no-such-compiler" in line and line.endswith("PyTorch's operations instead")
    monkeypatch.setattr(native, "_loaded", {})
    monkeypatch.setenv("TRANSDUCE_FUSED", "0")
    assert "(TRANSDUCE_FUSED=0)" in native.describe()


@needs_compiler
def test_the_log_line_names_the_kernels_in_use(monkeypatch):
    monkeypatch.setattr(native, "_loaded", {})
    assert native.describe() == "C kernels: dropout, shifted_attention"
