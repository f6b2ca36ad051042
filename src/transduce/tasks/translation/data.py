"""The data of a training run: tokenizer (trained on first use), encoded and filtered pairs."""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from transduce import runs
from transduce.data.batching import filter_pairs
from transduce.data.text import read_parallel
from transduce.data.tokenizer import SubwordTokenizer
from transduce.errors import UserError
from transduce.io import atomic_path
from transduce.tasks.translation.config import TrainConfig


@dataclass
class RunData:
    tokenizer: SubwordTokenizer
    train_src: list[list[int]]
    train_tgt: list[list[int]]
    valid_src_text: list[str]
    valid_tgt_text: list[str]
    valid_src: list[list[int]]
    valid_tgt: list[list[int]]
    train_src_text: list[str]  # the kept training pairs as text, for segmenting them anew
    train_tgt_text: list[str]


def corpus_paths(cfg: TrainConfig, prefix: str) -> tuple[Path, Path]:
    base = Path(cfg.data_dir) / prefix
    return Path(f"{base}.{cfg.src_lang}"), Path(f"{base}.{cfg.tgt_lang}")


def read_corpora(cfg: TrainConfig) -> tuple[list[str], ...]:
    """Training and validation text, checked (UTF-8, aligned, not empty) before a run writes
    anything."""
    return (
        *read_parallel(*corpus_paths(cfg, cfg.train_prefix)),
        *read_parallel(*corpus_paths(cfg, cfg.valid_prefix)),
    )


def load_run_data(
    cfg: TrainConfig, corpora: tuple[list[str], ...], run_dir: Path, log, may_train: bool = True
) -> RunData:
    """The run's joint tokenizer (trained on first use), the encoded training pairs that
    survive filtering (logging how many were dropped, and why) and the validation set.

    A new tokenizer is trained in a scratch folder and placed in ``run_dir`` only once some
    training pair survives, so a start that cannot train writes nothing. One that exists
    without a config.yaml or any checkpoint is from a start that died, and is trained again.
    ``may_train=False`` (every process of a distributed run but the first) reads the
    tokenizer that the first process placed.
    """
    train_src, train_tgt, valid_src, valid_tgt = corpora
    spm_path = run_dir / runs.TOKENIZER
    started = (run_dir / runs.CONFIG).exists() or runs.step_checkpoints(run_dir)
    with tempfile.TemporaryDirectory(prefix="transduce-spm-") as scratch:
        if spm_path.exists() and (started or not may_train):
            tokenizer, new = SubwordTokenizer(spm_path), False
        else:
            log.info(
                f"training a joint {cfg.spm_model_type} SentencePiece model, "
                f"{cfg.vocab_size} subwords, on {2 * len(train_src):,} sentences"
                + (", lowercased" if cfg.lowercase else "")
            )
            tokenizer = SubwordTokenizer.train(
                train_src + train_tgt,
                Path(scratch) / "spm.model",
                cfg.vocab_size,
                cfg.spm_model_type,
                cfg.lowercase,
            )
            new = True
        src_ids, tgt_ids = tokenizer.encode(train_src), tokenizer.encode(train_tgt)
        keep, dropped = filter_pairs(src_ids, tgt_ids, cfg.max_len, cfg.max_ratio)
        reasons = ", ".join(f"{n:,} {why}" for why, n in dropped.items()) or "none"
        if not keep:
            raise UserError(
                f"no training pair survives filtering: all {len(src_ids):,} "
                f"dropped ({reasons}); raise max_len or max_ratio"
            )
        log.info(f"training pairs: {len(keep):,} kept of {len(src_ids):,}; dropped: {reasons}")
        if new:
            with atomic_path(spm_path) as out:
                shutil.copyfile(tokenizer.path, out)
            tokenizer = SubwordTokenizer(spm_path)
    if cfg.valid_bleu_sentences:
        valid_src, valid_tgt = (
            valid_src[: cfg.valid_bleu_sentences],
            valid_tgt[: cfg.valid_bleu_sentences],
        )
    return RunData(
        tokenizer,
        [src_ids[i] for i in keep],
        [tgt_ids[i] for i in keep],
        valid_src,
        valid_tgt,
        *_validation_ids(cfg, tokenizer, valid_src, valid_tgt, log),
        [train_src[i] for i in keep],
        [train_tgt[i] for i in keep],
    )


def _validation_ids(cfg: TrainConfig, tokenizer, src: list[str], tgt: list[str], log):
    """Validation pairs as ids, each side cut to what the positional table holds (with its
    BOS and EOS): validation scores every pair, so a long one is cut, not dropped. (The
    BLEU translations cut their source the same way; references stay whole.)"""
    limit = cfg.model.max_len - 2
    src_ids, tgt_ids = tokenizer.encode(src), tokenizer.encode(tgt)
    cut = sum(len(s) > limit or len(t) > limit for s, t in zip(src_ids, tgt_ids))
    if cut:
        log.info(
            f"validation: {cut:,} of {len(src_ids):,} pairs longer than {limit} subwords "
            "are cut to that length for the loss"
        )
    return [s[:limit] for s in src_ids], [t[:limit] for t in tgt_ids]
