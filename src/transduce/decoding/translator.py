"""Text in, text out: a trained model with its tokenizer, batched and in input order."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Sequence

import torch

from transduce.data.batching import collate, token_batches
from transduce.data.tokenizer import SubwordTokenizer
from transduce.decoding.beam import beam_search
from transduce.decoding.greedy import greedy_search
from transduce.device import autocast, pick_device, resolve_precision
from transduce.errors import UserError
from transduce.nn import Transformer, TransformerConfig, build_transformer, padding_mask
from transduce.training.checkpoint import load_checkpoint, step_checkpoints

EXTRA_OUTPUT = 50  # outputs may be 50 tokens longer than their source (paper §6.1)
log = logging.getLogger(__name__)


def find_checkpoint(path: str | os.PathLike) -> tuple[Path, Path]:
    """(checkpoint, run directory) for a run directory or a checkpoint file in one.

    A run directory gives its averaged model if there is one, else its best, else its newest.
    """
    path = Path(path)
    if path.is_file():
        run_dir = path.parent.parent if path.parent.name == "checkpoints" else path.parent
        return path, run_dir
    if not path.is_dir():
        raise UserError(f"{path}: no such run directory or checkpoint")
    for candidate in (path / "averaged.pt", path / "checkpoints" / "best.pt"):
        if candidate.is_file():
            return candidate, path
    steps = step_checkpoints(path / "checkpoints")
    if not steps:
        raise UserError(f"{path}: no checkpoint yet; train first (transduce train)")
    return steps[-1], path


def model_from_state(state: dict) -> Transformer:
    model = build_transformer(TransformerConfig(**state["model_config"]))
    model.load_state_dict(state["model"])
    return model.eval()


def encode_sources(tokenizer: SubwordTokenizer, lines: Sequence[str],
                   max_source: int) -> list[list[int]]:
    """Subword ids of each line, a line longer than ``max_source`` cut to it (with a note
    logged), so that every line still gets its one output line."""
    ids = tokenizer.encode(lines)
    for i, seq in enumerate(ids):
        if len(seq) > max_source:
            log.warning(f"transduce: note: line {i + 1} cut to {max_source} subwords")
            ids[i] = seq[:max_source]
    return ids


class Translator:
    """Translate lines with a model and its tokenizer.

    Args:
        model: the Transformer (moved to ``device`` and put in eval mode here).
        tokenizer: the joint subword tokenizer it was trained with.
        device, precision: where and how to run ("bf16" autocast or "fp32").
    """

    def __init__(self, model: Transformer, tokenizer: SubwordTokenizer,
                 device: torch.device, precision: str) -> None:
        self.model = model.to(device).eval()
        self.tokenizer, self.device, self.precision = tokenizer, device, precision
        positions = model.positions.table.shape[0]
        self.max_source = positions - EXTRA_OUTPUT - 2  # room for EOS and BOS + outputs

    @classmethod
    def load(cls, path: str | os.PathLike, device: str = "auto",
             precision: str = "auto") -> Translator:
        """From a run directory or checkpoint; the checkpoint must match the run's tokenizer."""
        checkpoint, run_dir = find_checkpoint(path)
        tokenizer_path = run_dir / "spm.model"
        if not tokenizer_path.is_file():
            raise UserError(f"{tokenizer_path}: missing; a checkpoint needs the spm.model of "
                            "the run directory it was trained in")
        tokenizer = SubwordTokenizer(tokenizer_path)
        state = load_checkpoint(checkpoint)
        if state.get("tokenizer") != tokenizer.fingerprint:
            raise UserError(f"{checkpoint}: trained with another tokenizer than "
                            f"{tokenizer_path}; use the checkpoint's own run directory")
        dev = pick_device(device)
        return cls(model_from_state(state), tokenizer, dev, resolve_precision(precision, dev))

    @torch.no_grad()
    def translate(self, lines: Sequence[str], beam_size: int = 5, alpha: float = 0.6,
                  nbest: int = 1, max_tokens: int = 6000, progress=None,
                  lenpen_style: str = "wu") -> list[list[tuple[str, float]]]:
        """For each line, ``nbest`` (translation, score) pairs, best first. An empty line gives
        empty translations; a source longer than the model's positions is cut, with a
        warning logged. ``beam_size`` 1 is greedy search (score 0)."""
        ids = encode_sources(self.tokenizer, lines, self.max_source)
        results: list[list[tuple[str, float]]] = [[("", 0.0)] * nbest for _ in lines]
        todo = [i for i, seq in enumerate(ids) if seq]
        width = max(beam_size, 1)
        for batch in token_batches([len(ids[i]) + 2 for i in todo], max(max_tokens // width, 1)):
            rows = [todo[j] for j in batch]
            tok = self.tokenizer
            src, _ = collate([ids[i] for i in rows], None, tok.pad_id, tok.bos_id, tok.eos_id)
            src = src.to(self.device)
            with autocast(self.device, self.precision):
                outputs = self._search(src, beam_size, alpha, nbest, lenpen_style)
            for i, hyps in zip(rows, outputs):
                results[i] = hyps
            if progress is not None:
                progress.update(len(rows))
        return results

    def _search(self, src, beam_size, alpha, nbest, lenpen_style):
        tok, mask = self.tokenizer, padding_mask(src, self.tokenizer.pad_id)
        if beam_size == 1:
            out = greedy_search(self.model, src, mask, tok.bos_id, tok.eos_id, tok.pad_id,
                                max_len=src.shape[1] + EXTRA_OUTPUT)
            return [[(tok.decode(row.tolist()), 0.0)] for row in out]
        found = beam_search(self.model, src, mask, tok.bos_id, tok.eos_id, beam_size, alpha,
                            nbest, extra_len=EXTRA_OUTPUT, lenpen_style=lenpen_style)
        return [[(tok.decode(h.tokens), h.score) for h in hyps] for hyps in found]
