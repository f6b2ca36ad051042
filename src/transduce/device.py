"""Where to run and in which precision."""

from __future__ import annotations

import contextlib
import ctypes
import platform
import re
import sys
import warnings

import torch

from transduce.errors import UserError

PRECISIONS = ("auto", "bf16", "fp16", "fp32")
# Translation may also run its linear layers with int8 weights on a CPU (transduce.nn.int8).
DECODING_PRECISIONS = (*PRECISIONS, "int8")


def _mps_available() -> bool:
    return getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available()


def pick_device(name: str = "auto") -> torch.device:
    """ "auto" takes CUDA, then Apple MPS, then the CPU; "cuda", "cuda:1", "mps" and "cpu" are
    checked to exist.

    Raises:
        UserError: a device that is not there, or a name that is not a device.
    """
    if name == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        return torch.device("mps" if _mps_available() else "cpu")
    if not re.fullmatch(r"cpu|mps|cuda(:\d+)?", name):
        raise UserError(f"device={name!r} is not a device; use auto, cpu, mps, cuda or cuda:N")
    device = torch.device(name)
    if device.type == "cuda":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if count == 0:
            raise UserError(
                f"device={name}: no CUDA GPU is visible here; use device=auto or device=cpu"
            )
        if device.index is not None and device.index >= count:
            raise UserError(
                f"device={name}: only {count} CUDA GPU(s) here (cuda:0 to cuda:{count - 1})"
            )
    if device.type == "mps" and not _mps_available():
        raise UserError("device=mps: Apple MPS is not available here; use device=auto or cpu")
    return device


def bf16_is_fast(device: torch.device) -> bool:
    """Whether the hardware multiplies bfloat16 natively (AVX-512 BF16/AMX, or a recent GPU)."""
    if device.type == "cuda":
        return torch.cuda.is_bf16_supported()
    if device.type == "cpu":
        return torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported()
    return False


def cpu_vendor(cpuinfo: str = "/proc/cpuinfo") -> str:
    """The CPU's vendor as Linux's /proc/cpuinfo names it (``AuthenticAMD``,
    ``GenuineIntel``), or "" where it cannot be read."""
    try:
        with open(cpuinfo, encoding="utf-8", errors="replace") as info:
            for line in info:
                if line.startswith("vendor_id"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return ""


def fp32_packing_pays() -> bool:
    """Whether float32 decoding should run its linear layers on weights packed for oneDNN
    (:mod:`transduce.nn.packed`) rather than on MKL's sgemm: on AMD x86 CPUs, where MKL
    takes no fast path of its own and oneDNN's packed kernel was faster at the shapes of
    beam search (``benchmarks/speed/int8_avx2.md``; CTranslate2 picks oneDNN there for
    the same reason). Intel CPUs keep MKL: its figures there were measured with it."""
    return platform.machine().lower() in ("x86_64", "amd64") and cpu_vendor() == "AuthenticAMD"


def int8_supported() -> bool:
    """Whether this PyTorch has the oneDNN int8 linear kernel that precision=int8 runs
    (x86 CPU builds do)."""
    return (
        platform.machine().lower() in ("x86_64", "amd64")
        and hasattr(torch.ops.onednn, "qlinear_pointwise")
        and torch.backends.mkldnn.is_available()
    )


def resolve_precision(precision: str, device: torch.device, *, decoding: bool = False) -> str:
    """Turn "auto" into "bf16" where that is fast, "fp16" on a GPU without bf16 (trained
    with a gradient scaler), else "fp32". With ``decoding`` (translating, not training)
    "int8" is also taken: int8 weights for the linear layers, on a CPU."""
    allowed = DECODING_PRECISIONS if decoding else PRECISIONS
    if precision not in allowed:
        raise UserError(f"precision must be one of {', '.join(allowed)}, not {precision!r}")
    if precision == "int8":
        if device.type != "cpu":
            raise UserError(
                f"precision=int8 runs on the CPU; on {device.type} use precision=auto (bf16 "
                "or fp16)"
            )
        if not int8_supported():
            raise UserError(
                "precision=int8: this PyTorch has no oneDNN int8 kernel (an x86 CPU build "
                "has); use precision=auto"
            )
        return precision
    if precision == "fp16" and device.type == "cpu":
        raise UserError("precision=fp16 is for GPUs; use bf16 or fp32 on a CPU")
    if precision == "auto":
        if bf16_is_fast(device):
            return "bf16"
        return "fp16" if device.type in ("cuda", "mps") else "fp32"
    if precision == "bf16" and device.type == "cpu" and not bf16_is_fast(device):
        # measured on a 2-core Zen 3 (AVX2): beam search 13.4 sentences/s in bf16, 57.2 in fp32
        warnings.warn(
            "precision=bf16: this CPU has no native bfloat16 (AVX-512 BF16 or AMX), "
            "so bf16 is emulated and several times slower than fp32 here; use "
            "precision=auto",
            stacklevel=2,
        )
    return precision


def configure(device: torch.device) -> None:
    """Let float32 matrix products use TF32 on GPUs that have it (Ampere and later)."""
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True


# glibc's mallopt parameters (malloc.h) and the values retain_freed_memory sets
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
MMAP_THRESHOLD = 32 << 20  # glibc's largest: blocks up to 32 MiB come from the heap
TRIM_THRESHOLD = (1 << 31) - 1  # keep up to 2 GiB of freed heap instead of returning it


def retain_freed_memory() -> bool:
    """Have glibc's malloc keep the memory of freed tensors for the next ones; returns
    whether it was set (False where the C library is not glibc, e.g. macOS or musl).

    By default glibc serves blocks above a threshold with fresh mmap pages and hands freed
    heap back to the system, so a training step whose tensors of a few MiB are made and
    freed by the thousand pays a page fault per 4 KiB each time it writes to them: the
    forecasters' training updates run 5–9% faster with them kept, the translation model's
    no faster (``benchmarks/speed/allocator.py``). Peak memory stays where it was; the
    process just does not shrink between steps.
    """
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL("libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    return bool(
        mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD) and mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD)
    )


def autocast(device: torch.device, precision: str) -> contextlib.AbstractContextManager:
    """bfloat16 or float16 autocast; a no-op for "fp32"."""
    dtype = torch.float16 if precision == "fp16" else torch.bfloat16
    return torch.autocast(device.type, dtype, enabled=precision in ("bf16", "fp16"))
