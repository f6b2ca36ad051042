"""The C kernels of ``nn/`` (``nn/csrc/*.c``, and the headers they share), compiled at
first use with the machine's C compiler and loaded through ctypes.

Each is built once per machine into ``$TRANSDUCE_CACHE`` (default ``~/.cache/transduce``),
named by a hash of its source and the headers, the compiler's command and the CPU's flags
(so a cache shared by machines of different CPUs never hands one a kernel built for
another's instructions), and written atomically; builds of older sources are removed. It
is built for the machine's own instructions, or on x86-64 for the level
``ATEN_CPU_CAPABILITY`` names (``avx2``, ``default``), as PyTorch's kernels are: a test
pass that stands for a CPU without AVX-512 then runs the C kernels' code for it too. A
kernel runs on PyTorch's own OpenMP threads: it names ``libgomp.so.1``, the runtime PyTorch
has already loaded. Where there is no C compiler (``cc``, or ``$CC``), or it fails, or
``TRANSDUCE_FUSED=0``, :func:`library` returns None and the callers keep their PyTorch
path, which gives the same results (tests check both).
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import platform
import re
import subprocess
import tempfile
import time
from pathlib import Path

SOURCES = Path(__file__).with_name("csrc")
FLAGS = ["-O3", "-fopenmp", "-fno-math-errno", "-fno-trapping-math", "-shared", "-fPIC"]
# ATEN_CPU_CAPABILITY -> the -march of that level on x86-64 (else the machine's: native)
ARCHES = {"default": "x86-64", "avx2": "x86-64-v3"}
STALE_SECONDS = 3600  # an older source's build, untouched this long, is removed
_loaded: dict[str, ctypes.CDLL | None] = {}


class StridedTensor(ctypes.Structure):
    """A tensor as shifted_attention.c and step_attention.c read it: data, bfloat16 or not,
    and the strides (batch, head, step, channel) in elements of a (B, H, T, D) view."""

    _fields_ = [("data", ctypes.c_void_p), ("bf16", ctypes.c_int64)]
    _fields_ += [(name, ctypes.c_int64) for name in ("batch", "head", "step", "channel")]


_P, _N, _SEED, _INT, _F = (
    ctypes.c_void_p,
    ctypes.c_int64,
    ctypes.c_uint64,
    ctypes.c_int,
    ctypes.c_float,
)
_SIZES = [_INT] * 6  # B, H, T, M, D, threads
# each kernel's C functions and their arguments, set once when the library is loaded
SIGNATURES = {
    "dropout": {
        "dropout_mask": [_P, _N, _SEED, ctypes.c_uint32, _INT],
        "dropout_forward": [_P, _P, _P, _N, _INT, _SEED, ctypes.c_uint32, _F, _INT],
        "dropout_add_forward": [_P, _P, _P, _P, _N, _INT, _SEED, ctypes.c_uint32, _F, _INT],
        "dropout_backward": [_P, _P, _P, _N, _INT, _F, _INT],
    },
    "smoothed_ce": {"smoothed_ce": [_P, _INT, _N, _N, _N, _P, _F, _P, _INT]},
    "shifted_attention": {
        "shifted_forward": [*[StridedTensor] * 4, _P, _P, _P, _F, _P, *_SIZES],
        "shifted_backward": [*[StridedTensor] * 7, _P, _P, _F, _P, *_SIZES],
    },
    "step_attention": {
        "step_attention": [_P, _INT, StridedTensor, StridedTensor, _P, _N, _P, _INT]
        + [_INT] * 5
        + [_F, _INT],
    },
}
_why: dict[str, str] = {}  # a kernel that could not be had: the reason, for describe()


def _cpu_flags() -> str:
    """The CPU's feature flags (Linux; elsewhere none)."""
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return ""
    return next((line for line in lines if line.startswith("flags")), "")


def _arch() -> str:
    """What the kernels are built for: on x86-64 the level ``ATEN_CPU_CAPABILITY`` names,
    else the machine's own instructions."""
    capability = os.environ.get("ATEN_CPU_CAPABILITY", "").lower()
    x86 = platform.machine().lower() in ("x86_64", "amd64")
    return ARCHES[capability] if x86 and capability in ARCHES else "native"


def _build(name: str, cache: Path) -> Path:
    """Kernel ``name``'s compiled library, built into ``cache`` unless it is there."""
    source = SOURCES / f"{name}.c"
    compiler, arch = os.environ.get("CC", "cc"), _arch()
    flags = [*FLAGS, f"-march={arch}"]
    texts = [path.read_text() for path in (source, *sorted(SOURCES.glob("*.h")))]
    key = hashlib.sha256("\n".join([*texts, compiler, *flags, _cpu_flags()]).encode())
    tag = arch.replace("-", "_")  # the file's name splits at its hyphens
    target = cache / f"{name}-{tag}-{key.hexdigest()[:16]}.so"
    if not target.exists():
        cache.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=cache) as work:
            built = Path(work) / target.name
            command = [compiler, *flags, str(source), "-o", str(built), "-lm"]
            subprocess.run(command, check=True, capture_output=True, timeout=120)
            os.replace(built, target)  # whole or not at all, if two processes race
        _remove_stale(cache, name, tag, target)
    return target


def _remove_stale(cache: Path, name: str, tag: str, kept: Path) -> None:
    """Remove kernel ``name``'s other builds for the level ``tag`` (an older source's, or
    another CPU's), and those named before builds named their level, once untouched for an
    hour: a process of another version may still be about to load a newer one."""
    for old in cache.glob(f"{name}-*.so"):
        level, _, key = old.stem[len(name) + 1 :].rpartition("-")
        ours = level in (tag, "") and re.fullmatch("[0-9a-f]{16}", key)
        try:
            if ours and old != kept and time.time() - old.stat().st_mtime > STALE_SECONDS:
                old.unlink()
        except OSError:  # gone already, or not ours to remove
            pass


def library(name: str) -> ctypes.CDLL | None:
    """Kernel ``name`` (``csrc/NAME.c``) loaded, or None where it cannot be had."""
    if name in _loaded:
        return _loaded[name]
    lib = None
    if os.environ.get("TRANSDUCE_FUSED", "1") == "0":
        _why[name] = "TRANSDUCE_FUSED=0"
    else:
        cache = Path(os.environ.get("TRANSDUCE_CACHE", Path.home() / ".cache" / "transduce"))
        try:
            lib = ctypes.CDLL(str(_build(name, cache)))
            for function, arguments in SIGNATURES[name].items():
                getattr(lib, function).argtypes = arguments
        except (OSError, subprocess.SubprocessError) as error:
            # no compiler, a failed build or an unwritable cache
            stderr = getattr(error, "stderr", b"") or b""
            lines = stderr.decode(errors="replace").strip().splitlines()
            _why[name] = lines[0] if lines else str(error)
    _loaded[name] = lib
    return lib


def describe() -> str:
    """One line for a run's log: whether the C kernels are in use, and if not, why."""
    missing = {name: _why.get(name, "") for name in SIGNATURES if library(name) is None}
    if not missing:
        return f"C kernels: {', '.join(SIGNATURES)}"
    reasons = "; ".join(sorted(set(missing.values())))
    return f"C kernels: {', '.join(missing)} not built ({reasons}); PyTorch's operations instead"
