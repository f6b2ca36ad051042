"""LogSparse's training speed and memory, five ways of computing the same attention side by
side in one process: the fused kernel (the library's sparse path where a C compiler is
found, nn/forecasting/fused.py, with the C kernel's dropout), the keys as shifted views in
PyTorch's operations with a backward of their own (its path without a compiler, and
everywhere at 5141022), the same views differentiated by autograd through the slices (the
path at f6e59a7), the keys gathered per step (the sparse path before that, the issue's
reference), and the dense masked scores, these four with the dropout masks drawn by
PyTorch's generator, as before the kernels; and the same step with no attention at all
(and the kernel's dropout), the bound of what the attention's speed can buy.

    python benchmarks/forecasting/logsparse_speed.py [--steps 60] [--threads 2]

The model and batch are M4 Hourly's ``logsparse_k3_log`` recipe (benchmarks/forecasting/
m4.py): input 168, horizon 48, batch 64, d_model 64, 4 heads, d_ff 128, 3 layers, kernel 3,
quantiles 0.5 and 0.9, AdamW, in fp32 and in bf16 autocast. Values/s counts the forecast
values a training step fits (batch × horizon), as `transduce forecast train` logs them.
Each path's sparse output equals the dense one to 1e-5 before it is timed. Then the peak
memory of one attention layer's forward at L = 256, 1,024 and 4,096 steps, in a fresh
process each, for each path. Writes benchmarks/forecasting/logsparse_speed.json.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT / "src"))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from transduce.nn import native  # noqa: E402
from transduce.nn.attention import masked_softmax  # noqa: E402
from transduce.nn.forecasting import fused, logsparse  # noqa: E402

L, H, BATCH = 168, 48, 64
SIZES = dict(d_model=64, num_heads=4, d_ff=128, num_layers=3, dropout=0.1, kernel=3)
PATHS = ("fused", "shifted", "sliced", "gathered", "dense")


def sliced_attention(q, k, v, keys, dropout):
    """The shifted path as it was at f6e59a7: each offset's products padded to full
    length, so that autograd's backward through the slices builds a zero tensor of the
    whole size for each one."""
    offsets, valid = keys
    T = q.shape[-2]
    columns = [F.pad((q[..., o:, :] * k[..., : T - o, :]).sum(-1), (o, 0)) for o in offsets]
    weights = dropout(masked_softmax(torch.stack(columns, -1) / math.sqrt(q.shape[-1]), mask=valid))
    out = None
    for m, o in enumerate(offsets):
        part = F.pad(weights[..., o:, m, None] * v[..., : T - o, :], (0, 0, o, 0))
        out = part if out is None else out + part
    return out


def gathered_attention(q, k, v, keys, dropout):
    """The sparse path as it was: each step's allowed keys and values gathered, (B, H, T,
    M, Dh), whose backward scatters them back (``index_put_``)."""
    index, valid = keys
    k_sel, v_sel = k[:, :, index], v[:, :, index]
    scores = (q.unsqueeze(-2) * k_sel).sum(-1) / math.sqrt(q.shape[-1])
    weights = dropout(masked_softmax(scores, mask=valid))
    return (weights.unsqueeze(-1) * v_sel).sum(-2)


def gather_keys(mask):
    """(index (T, M), valid (T, M)): each step's allowed keys, padded with key 0."""
    rows = [row.nonzero().flatten().tolist() for row in mask]
    M = max(len(r) for r in rows)
    index = torch.zeros(len(rows), M, dtype=torch.long)
    valid = torch.zeros(len(rows), M, dtype=torch.bool)
    for i, r in enumerate(rows):
        index[i, : len(r)], valid[i, : len(r)] = torch.tensor(r), True
    return index, valid


def model_for(path: str) -> torch.nn.Module:
    """The recipe's forecaster, its attention computed the ``path`` way."""
    torch.manual_seed(0)
    model = logsparse.LogSparseForecaster(
        channels=1, input_length=L, horizon=H, quantiles=(0.5, 0.9), revin=False, **SIZES
    )
    model.sparse = path != "dense"
    if path == "gathered":
        model.offsets, model.valid = gather_keys(model.mask)
    return model


def no_attention(q, k, v, keys, dropout):
    """Not attention: the values passed on as they are. The step without attention's cost
    bounds what any way of computing the attention can reach."""
    return v


def use(path: str) -> None:
    """Route the forecaster's sparse attention the ``path`` way ("fused": the library's),
    and its dropout through the C kernel for "fused" and "none", else PyTorch's generator."""
    own = {"gathered": gathered_attention, "sliced": sliced_attention, "none": no_attention}
    own = {name: _unbinding(f) for name, f in own.items()}
    own["shifted"] = logsparse.shifted_attention_ops
    native._loaded.pop("dropout", None)
    if path not in ("fused", "none"):
        native._loaded["dropout"] = None
    elif fused.kernel() is None or native.library("dropout") is None:
        raise SystemExit("the fused path needs a C compiler (cc, or $CC); none built it")
    logsparse.shifted_attention = own.get(path, LIBRARY)


def _unbinding(attention):
    """``attention(q, k, v, keys, dropout)`` as the library calls it: (qk, v, keys, dropout)."""
    return lambda qk, v, keys, dropout: attention(*qk.unbind(1), v, keys, dropout)


LIBRARY = logsparse.shifted_attention


def same_outputs() -> float:
    """The largest difference of the sparse paths' forecasts from the dense path's."""
    x = torch.randn(4, L, 1)
    out = {}
    for path in PATHS:
        use(path)
        with torch.no_grad():
            out[path] = model_for(path).eval()(x)[0]
    use("fused")
    worst = max(float((out[p] - out["dense"]).abs().max()) for p in PATHS[:-1])
    assert worst < 1e-5, worst
    return worst


def values_per_s(path: str, precision: str, steps: int) -> float:
    """Forecast values fitted a second over ``steps`` AdamW steps (after 5 unmeasured)."""
    use(path)
    model = model_for(path).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x, y = torch.randn(BATCH, L, 1), torch.randn(BATCH, H, 1)
    began = 0.0
    for step in range(steps + 5):
        if step == 5:
            began = time.perf_counter()
        with torch.autocast("cpu", torch.bfloat16, enabled=precision == "bf16"):
            forecast, _ = model(x)
        loss = (forecast[..., 0].float() - y).abs().mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    use("fused")
    return BATCH * H * steps / (time.perf_counter() - began)


MEMORY = """
import sys, torch
sys.path.insert(0, {bench!r})
from logsparse_speed import gather_keys, use
from transduce.nn.forecasting.logsparse import ConvSelfAttention, key_offsets, logsparse_mask
torch.set_num_threads(1)
length, path = {length}, {path!r}
use(path)
layer = ConvSelfAttention(d_model=64, num_heads=4, kernel=3).eval()
mask = logsparse_mask(length) if path != "dense" else torch.ones(length, length).tril().bool()
keys = {{"gathered": gather_keys, "dense": lambda m: None}}.get(path, key_offsets)(mask)
x = torch.randn(1, length, 64)
def kb(field):
    for line in open("/proc/self/status"):
        if line.startswith(field):
            return int(line.split()[1])
open("/proc/self/clear_refs", "w").write("5")  # the peak (VmHWM) restarts from here
before = kb("VmRSS")
with torch.no_grad():
    layer(x, mask, keys)
print(kb("VmHWM") - before)
"""


def peak_mb(length: int, path: str) -> float:
    """Growth of the peak resident memory over one layer's forward, in a fresh process."""
    code = MEMORY.format(bench=str(HERE), length=length, path=path)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    return round(int(out.stdout.split()[-1]) / 1024, 1)


def summarise(record: dict) -> str:
    """The Markdown of the results page: values/s per path and precision, the peak memory."""
    lines = [
        f"`{record['command']}` at {record['commit']}, on {record['machine']}, "
        f"{record['threads']} threads. Forecast values fitted a second (batch × horizon a "
        "step) by M4 Hourly's `logsparse_k3_log` model; the sparse paths' forecasts equal "
        f"the dense one's to {record['largest_difference_from_dense']:.1e}.",
        "",
        "| precision | fused kernels (now) | shifted keys, PyTorch's ops (5141022) "
        "| shifted keys, autograd (f6e59a7) | gathered keys (before) | dense masked "
        "| fused / gathered | shifted / gathered | no attention | no attention / gathered |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for precision, v in record["values_per_s"].items():
        lines.append(
            f"| {precision} | {v['fused']:,} | {v['shifted']:,} | {v['sliced']:,} | "
            f"{v['gathered']:,} | {v['dense']:,} | {v['fused_over_gathered']:.2f}× | "
            f"{v['shifted_over_gathered']:.2f}× | {v['none']:,} | "
            f"{v['none_over_gathered']:.2f}× |"
        )
    lines += [
        "",
        "The fused kernels: the attention's and the dropout's (nn/csrc); the other paths "
        "draw their dropout masks from PyTorch's generator, as before the kernels. "
        "No attention: the same step with each attention layer's output replaced by its "
        "values, so the rest of the step (convolutions, feed-forward layers, norms, "
        "dropout, loss, AdamW) alone, less even the backward of the queries' and keys' "
        "convolutions, which then get no gradient. No way of computing the attention can "
        "pass it: its ratio to the gathered keys bounds what the attention's speed can buy.",
    ]
    lines += [
        "",
        "Peak memory of one attention layer's forward (MB above the process's memory "
        "before it, d_model 64, 4 heads, one sequence):",
        "",
        "| steps | fused kernel | shifted keys, PyTorch's ops | shifted keys, autograd "
        "| gathered keys | dense masked |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for length, m in record["peak_mb"].items():
        cells = " | ".join(str(m[path]) for path in PATHS)
        lines.append(f"| {int(length):,} | {cells} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=60, help="measured steps a path")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, default=HERE / "logsparse_speed.json")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    record = {"largest_difference_from_dense": same_outputs(), "values_per_s": {}}
    for precision in ("fp32", "bf16"):
        speeds = {p: round(values_per_s(p, precision, args.steps)) for p in (*PATHS, "none")}
        for path in ("fused", "shifted"):
            speeds[f"{path}_over_gathered"] = round(speeds[path] / speeds["gathered"], 2)
        speeds["none_over_gathered"] = round(speeds["none"] / speeds["gathered"], 2)
        record["values_per_s"][precision] = speeds
        print(precision, speeds, flush=True)
    record["peak_mb"] = {
        str(n): {path: peak_mb(n, path) for path in PATHS} for n in (256, 1024, 4096)
    }
    cpu = [x for x in open("/proc/cpuinfo") if x.startswith("model name")][:1]
    record["machine"] = f"{platform.machine()}, {os.cpu_count()} cores, " + (
        cpu[0].split(":", 1)[1].strip() if cpu else "?"
    )
    record["threads"] = args.threads
    record["command"] = (
        f"python benchmarks/forecasting/logsparse_speed.py --steps {args.steps} "
        f"--threads {args.threads}"
    )
    record["commit"] = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    args.out.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    print(summarise(record))


if __name__ == "__main__":
    main()
