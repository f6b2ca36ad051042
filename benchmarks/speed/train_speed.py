"""The training half of the speed benchmark (benchmarks/speed/run.py): the batches, each
system's model and loss, the model's matmul FLOPs, the measured matmul peak, and one
system's measurement (target tokens/s, median over steps after warm-up)."""

from __future__ import annotations

import os
import random
import resource
import statistics
import time
from pathlib import Path

from peers import TorchTransformerMT

# the config measured by default: the best En→De recipe, dropout included (it costs time)
CONFIG = Path(__file__).resolve().parents[2] / "configs" / "multi30k_en_de_2h.yaml"

# the unfused model and loss (PyTorch's operations only) through torch.compile (Inductor's
# C++ kernels on a CPU): not among the default systems, its compilation takes minutes
COMPILED = "transduce-compiled"
# Marian with glibc keeping freed memory, as transduce's trainer has it (``transduce train``
# calls transduce.device.retain_freed_memory on a CPU, and so does every transduce system
# here): asked for by --train-systems, it shows how much of a ratio that setting makes
MARIAN_RETAINED = "marian-retained"


# ----------------------------------------------------------------------------- shared set-up
def load_setup(args):
    """Config, tokenizer and encoded training pairs (the same for every system)."""
    from transduce.config_files import load_config
    from transduce.data.batching import filter_pairs
    from transduce.data.text import read_parallel
    from transduce.data.tokenizer import SubwordTokenizer
    from transduce.tasks.translation.config import TrainConfig

    cfg = load_config(TrainConfig, args.config, [f"data_dir={args.data}"])
    tokenizer = SubwordTokenizer(Path(args.run_dir) / "spm.model")
    src_text, tgt_text = read_parallel(Path(args.data) / "train.en", Path(args.data) / "train.de")
    src, tgt = tokenizer.encode(src_text), tokenizer.encode(tgt_text)
    keep, _ = filter_pairs(src, tgt, cfg.max_len, cfg.max_ratio)
    return cfg, tokenizer, [src[i] for i in keep], [tgt[i] for i in keep]


def training_batches(src, tgt, tokenizer, max_tokens: int, count: int):
    from transduce.data.batching import collate, token_batches

    lengths = [max(len(s), len(t)) + 2 for s, t in zip(src, tgt)]
    batches = token_batches(lengths, max_tokens, random.Random(0))[:count]
    return [
        collate(
            [src[i] for i in b],
            [tgt[i] for i in b],
            tokenizer.pad_id,
            tokenizer.bos_id,
            tokenizer.eos_id,
        )
        for b in batches
    ]


def peak_rss_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


# ----------------------------------------------------------------------------- training
def build_for_training(system: str, cfg, tokenizer):
    import torch

    from transduce.export.marian import to_marian
    from transduce.nn import build_transformer

    torch.manual_seed(0)
    vocab = len(tokenizer)
    if system.startswith("transduce"):
        return build_transformer(cfg.model_config(vocab, tokenizer.pad_id))
    if system == "torch":
        return TorchTransformerMT.build(cfg, vocab, tokenizer.pad_id)
    if system in ("marian", MARIAN_RETAINED):
        marian = to_marian(build_transformer(cfg.model_config(vocab, tokenizer.pad_id)), tokenizer)
        marian.config.dropout = cfg.model.dropout  # to_marian builds for inference
        for module in marian.modules():
            if hasattr(module, "dropout") and isinstance(module.dropout, float):
                module.dropout = cfg.model.dropout
        return marian
    raise ValueError(system)


def train_loss(system: str, model, src, tgt, pad_id: int, epsilon: float):
    """Summed label-smoothed loss of one batch, the way each system is used."""
    import torch.nn.functional as F

    from transduce.nn import padding_mask
    from transduce.tasks.translation.task import summed_loss
    from transduce.training.loss import LabelSmoothedCrossEntropy

    if system in ("transduce", "transduce-torch-dropout"):
        return summed_loss(model, src, tgt, pad_id, epsilon)
    if system == "transduce-unfused":
        logits = model(src, tgt[:, :-1], padding_mask(src, pad_id))
        return LabelSmoothedCrossEntropy(epsilon, pad_id, "sum")(logits, tgt[:, 1:])
    if system == "torch":
        logits = model(src, tgt[:, :-1])
    else:
        logits = model(
            input_ids=src,
            attention_mask=src != pad_id,
            decoder_input_ids=tgt[:, :-1],
            decoder_attention_mask=tgt[:, :-1] != pad_id,
        ).logits
    return F.cross_entropy(
        logits.flatten(0, 1).float(),
        tgt[:, 1:].flatten(),
        ignore_index=pad_id,
        label_smoothing=epsilon,
        reduction="sum",
    )


def use_torch_dropout() -> None:
    """Route transduce's dropout through F.dropout (the ablation of its CPU mask)."""
    import torch.nn.functional as F

    import transduce.nn.attention
    import transduce.nn.dropout

    def torch_dropout(x, p, training=True):
        return F.dropout(x, p, training) if p > 0 else x

    def torch_dropout_add(x, y, p, training=True):  # the residuals' (Dropout.add)
        return x + torch_dropout(y, p, training)

    transduce.nn.dropout.dropout = transduce.nn.attention.dropout = torch_dropout
    transduce.nn.dropout.dropout_add = torch_dropout_add


def model_flops(cfg, vocab: int, src, tgt, pad_id: int) -> float:
    """Matrix-multiply FLOPs of one training step on a batch's real (non-padding) tokens:
    3 × the forward pass (forward, and backward for inputs and weights)."""
    d, f = cfg.model.d_model, cfg.model.d_ff
    src_lens = (src != pad_id).sum(1).tolist()
    tgt_lens = ((tgt[:, :-1] != pad_id).sum(1)).tolist()
    total = 0
    for s, t in zip(src_lens, tgt_lens):
        enc = cfg.model.num_encoder_layers * s * (4 * d * d + 2 * d * f + 2 * s * d)
        dec = cfg.model.num_decoder_layers * (
            t * (4 * d * d + 2 * d * f + t * d + 2 * d * d + 2 * s * d) + s * 2 * d * d
        )
        total += 2 * (enc + dec + t * d * vocab)
    return 3.0 * total


def matmul_peak(dtype_name: str, device=None, size: int = 2048, repeats: int = 10) -> float:
    """Measured FLOP/s of a square matrix multiplication in ``dtype`` on ``device`` (the
    CPU by default; a GPU gets 8,192-wide matrices and a synchronisation a product)."""
    import torch

    device = torch.device(device or "cpu")
    size = 8192 if device.type == "cuda" else size
    dtype = getattr(torch, dtype_name)
    a, b = (torch.randn(size, size, dtype=dtype, device=device) for _ in "ab")
    sync = torch.cuda.synchronize if device.type == "cuda" else lambda: None
    for _ in range(3):
        a @ b
    times = []
    for _ in range(repeats):
        sync()
        start = time.perf_counter()
        a @ b
        sync()
        times.append(time.perf_counter() - start)
    return 2 * size**3 / min(times)


def measure_training(args, system: str, max_tokens: int) -> dict:
    import torch

    from transduce.device import autocast, resolve_precision, retain_freed_memory
    from transduce.training.schedule import paper_adam

    cfg, tokenizer, src, tgt = load_setup(args)
    retained = system.startswith("transduce") or system == MARIAN_RETAINED
    if retained and args.device == "cpu":  # as training/train.py sets it up (a process each)
        retain_freed_memory()
    if system == "transduce-torch-dropout":
        use_torch_dropout()
    if system == COMPILED:  # the C kernels, called through ctypes, are opaque to the compiler
        os.environ["TRANSDUCE_FUSED"] = "0"
    device = torch.device(args.device)
    precision = resolve_precision(args.precision, device)
    batches = training_batches(src, tgt, tokenizer, max_tokens, args.warmup_steps + args.steps)
    model = build_for_training(system, cfg, tokenizer).train().to(device)
    optimizer = paper_adam(model.parameters())
    for group in optimizer.param_groups:
        group["lr"] = 1e-4

    def step_loss(s, t):
        plain = {COMPILED: "transduce-unfused", MARIAN_RETAINED: "marian"}.get(system, system)
        return train_loss(plain, model, s, t, tokenizer.pad_id, cfg.label_smoothing)

    if system == COMPILED:  # compiled in the warm-up steps, for batches of any shape
        step_loss = torch.compile(step_loss, dynamic=True)
    rates, flops, summed, tokens = [], [], 0.0, 0
    for i, (s, t) in enumerate(batches):
        s, t = s.to(device), t.to(device)
        start = time.perf_counter()
        with autocast(device, precision):
            loss = step_loss(s, t)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if device.type == "cuda":
            torch.cuda.synchronize()
        seconds = time.perf_counter() - start
        if i >= args.warmup_steps:
            count = int((t[:, 1:] != tokenizer.pad_id).sum())
            rates.append(count / seconds)
            flops.append(model_flops(cfg, len(tokenizer), s, t, tokenizer.pad_id) / seconds)
            summed, tokens = summed + float(loss.detach()), tokens + count
    return {
        "system": system,
        "precision": precision,
        "max_tokens": max_tokens,
        "tokens_per_s": round(statistics.median(rates)),
        "model_flops_per_s": statistics.median(flops),
        "peak_flops_per_s": matmul_peak("bfloat16" if precision == "bf16" else "float32", device),
        "steps": len(rates),
        # the same batches, and Marian from transduce's own initial weights (the torch
        # script from its own, seeded alike): the losses should agree closely
        "loss_per_token": round(summed / tokens, 4),
        "peak_rss_mb": peak_rss_mb(),
    }


def in_turns(records: list[dict]) -> dict:
    """One system's record from its rounds (each a process of its own, the systems taking
    turns, so that a slow spell of the machine falls on all of them): the record of the
    round of median speed, with every round's figure; a skip if any round was skipped."""
    if any("skipped" in r for r in records):
        return next(r for r in records if "skipped" in r)
    rates = [r["tokens_per_s"] for r in records]
    middle = sorted(records, key=lambda r: r["tokens_per_s"])[len(records) // 2]
    return {**middle, "rounds_tokens_per_s": rates, "steps": sum(r["steps"] for r in records)}
