"""The data of a training run: tokenizer (trained on first use), encoded and filtered pairs."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from transduce.data.batching import filter_pairs
from transduce.data.text import read_parallel
from transduce.data.tokenizer import SubwordTokenizer
from transduce.training.config import TrainConfig


@dataclass
class RunData:
    tokenizer: SubwordTokenizer
    train_src: list[list[int]]
    train_tgt: list[list[int]]
    valid_src_text: list[str]
    valid_tgt_text: list[str]
    valid_src: list[list[int]]
    valid_tgt: list[list[int]]


def corpus_paths(cfg: TrainConfig, prefix: str) -> tuple[Path, Path]:
    base = Path(cfg.data_dir) / prefix
    return Path(f"{base}.{cfg.src_lang}"), Path(f"{base}.{cfg.tgt_lang}")


def read_corpora(cfg: TrainConfig) -> tuple[list[str], ...]:
    """Training and validation text, checked (UTF-8, aligned, not empty) before a run writes
    anything."""
    return (*read_parallel(*corpus_paths(cfg, cfg.train_prefix)),
            *read_parallel(*corpus_paths(cfg, cfg.valid_prefix)))


def load_run_data(cfg: TrainConfig, corpora: tuple[list[str], ...], run_dir: Path,
                  log) -> RunData:
    """Train the joint tokenizer if the run has none yet, encode, and drop unusable training
    pairs (logging how many, and why)."""
    train_src, train_tgt, valid_src, valid_tgt = corpora
    spm_path = run_dir / "spm.model"
    if spm_path.exists():
        tokenizer = SubwordTokenizer(spm_path)
    else:
        log.info(f"training a joint {cfg.spm_model_type} SentencePiece model, "
                 f"{cfg.vocab_size} subwords, on {2 * len(train_src):,} sentences")
        tokenizer = SubwordTokenizer.train(train_src + train_tgt, spm_path, cfg.vocab_size,
                                           cfg.spm_model_type)
    src_ids, tgt_ids = tokenizer.encode(train_src), tokenizer.encode(train_tgt)
    keep, dropped = filter_pairs(src_ids, tgt_ids, cfg.max_len, cfg.max_ratio)
    reasons = ", ".join(f"{n} {why}" for why, n in dropped.items()) or "none"
    log.info(f"training pairs: {len(keep):,} kept of {len(src_ids):,}; dropped: {reasons}")
    if cfg.valid_bleu_sentences:
        valid_src, valid_tgt = (valid_src[: cfg.valid_bleu_sentences],
                                valid_tgt[: cfg.valid_bleu_sentences])
    return RunData(tokenizer, [src_ids[i] for i in keep], [tgt_ids[i] for i in keep],
                   valid_src, valid_tgt, tokenizer.encode(valid_src), tokenizer.encode(valid_tgt))
