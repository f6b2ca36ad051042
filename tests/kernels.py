"""Print the CPU kernels PyTorch can take on this machine other than its own, one per line:
`make test` runs the training-outcome tests again in fp32 under each (ATEN_CPU_CAPABILITY),
so one machine shows what CPUs with fewer instructions will compute (such a CPU has no fast
bfloat16: precision=auto trains in fp32 there).

ATen picks the widest kernel the CPU has: AVX-512 on a Zen 4/5 or a recent Xeon, AVX2 on a
Zen 3, "default" (no vector extension) elsewhere; asking for one wider than the CPU has
falls back to the CPU's own, so those are left out.
"""

import torch

ORDER = ["default", "avx2", "avx512"]  # x86's, narrowest first


def other_kernels() -> list[str]:
    own = torch.backends.cpu.get_cpu_capability().lower()
    if own not in ORDER:  # e.g. an ARM CPU: its kernels are not these
        return []
    return ORDER[: ORDER.index(own)]


if __name__ == "__main__":
    print("\n".join(other_kernels()))
