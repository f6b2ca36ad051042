"""Where our beam search spends its time: torch.profiler over a translation run.

    python benchmarks/speed/profile_beam.py --data data/multi30k --run-dir runs/bench/en-de-long

Translates the first N test_2016_flickr sentences (beam 5, length^α penalty as in run.py)
after a warm-up, and writes the operators by self CPU time to benchmarks/speed/profile_beam.md.
On a GPU (``--device cuda``) it also says how busy the GPU was: its kernels' time against
the same sentences' wall time without the profiler, and the kernels and host syncs a step.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

from transduce.api.loading import load as load_translator
from transduce.data.text import read_lines

HERE = Path(__file__).parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="folder with the Multi30k raw files")
    parser.add_argument("--run-dir", required=True, help="a trained Multi30k En→De run")
    parser.add_argument("--precision", default="bf16", choices=["bf16", "fp32", "int8"])
    parser.add_argument("--sentences", type=int, default=300)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--out", default=str(HERE / "profile_beam.md"))
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    translator = load_translator(args.run_dir, args.device, args.precision)
    sources = read_lines(Path(args.data) / "test_2016_flickr.en")[: args.sentences]
    translator.search(sources[:50], 5, 0.6, lenpen_style="power")  # warm-up
    plain = time.perf_counter()
    translator.search(sources, 5, 0.6, lenpen_style="power")
    plain = time.perf_counter() - plain  # the search's own wall time (GPU: synced by it)
    steps = []
    step = translator.model.step

    def counted(*a, **k):
        steps.append(1)
        return step(*a, **k)

    translator.model.step = counted
    start = time.perf_counter()
    gpu = args.device == "cuda"
    with profile(
        activities=[ProfilerActivity.CPU, *([ProfilerActivity.CUDA] if gpu else [])]
    ) as prof:
        translator.search(sources, 5, 0.6, lenpen_style="power")
    seconds = time.perf_counter() - start
    events = sorted(prof.key_averages(), key=lambda e: -e.self_cpu_time_total)
    total = sum(e.self_cpu_time_total for e in events)
    lines = [
        f"`python benchmarks/speed/profile_beam.py --precision {args.precision} "
        f"--sentences {args.sentences}{' --device cuda' if gpu else ''}`: "
        f"{len(sources)} sentences, {len(steps)} decoder steps, {seconds:.2f} s under the "
        "profiler, which slows each operator; the "
        f"operators' own time is {total / 1000:.0f} ms ({total / 1000 / len(steps):.1f} ms "
        "a step).\n",
    ]
    if gpu:
        lines.append(gpu_line(events, plain, len(steps), torch.cuda.get_device_name()))
    lines += operator_table(events, total)
    Path(args.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


# the runtime's and the driver's kernel launches (cudaLaunchKernelExC, cuLaunchKernelEx, ...)
LAUNCHES = ("cudaLaunchKernel", "cuLaunchKernel")


def gpu_line(events, wall: float, steps: int, name: str) -> str:
    """How busy the GPU was: its kernels' time against the search's wall time without the
    profiler, and a step's kernel launches and host syncs (each sync waits for the GPU)."""
    kernels = sum(e.self_device_time_total for e in events if e.device_type.name == "CUDA")
    calls = {e.key: e.count for e in events}
    launches = sum(n for key, n in calls.items() if key.startswith(LAUNCHES))
    syncs = calls.get("cudaStreamSynchronize", 0) + calls.get("cudaDeviceSynchronize", 0)
    copies = calls.get("cudaMemcpyAsync", 0)
    return (
        f"On {name}: without the profiler the search took {wall:.2f} s "
        f"({1000 * wall / steps:.1f} ms a step); the GPU's kernels ran for "
        f"{kernels / 1e6:.2f} s of it ({kernels / 1e6 / wall:.0%}). A step launched "
        f"{launches / steps:.0f} kernels and made {copies / steps:.1f} copies between host "
        f"and GPU and {syncs / steps:.1f} stream syncs.\n"
    )


def operator_table(events, total: float, per: int = 1) -> list[str]:
    """The 15 operators that took the most self CPU time, as Markdown rows: their time and
    calls divided by ``per`` (the steps, when more than one), and their share of ``total``."""
    each = " a step" if per > 1 else ""
    lines = [f"| operator | self CPU ms{each} | share | calls{each} |", "|---|---:|---:|---:|"]
    for e in events[:15]:
        lines.append(
            f"| `{e.key}` | {e.self_cpu_time_total / 1000 / per:.{1 if per > 1 else 0}f} | "
            f"{100 * e.self_cpu_time_total / total:.0f}% | {e.count // per} |"
        )
    return lines


if __name__ == "__main__":
    main()
