"""Joint SentencePiece subwords (Kudo & Richardson 2018) with transduce's special ids."""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path
from typing import Iterable, Sequence

import sentencepiece as spm

from transduce.data.bpe_dropout import BpeDropout, DropoutCorpus
from transduce.errors import UserError
from transduce.io import atomic_path

PAD_ID, BOS_ID, EOS_ID, UNK_ID = 0, 1, 2, 3  # the same ids as data.vocab.Vocab


class SubwordTokenizer:
    """A trained SentencePiece model: text ↔ ids, with pad 0, BOS 1, EOS 2, unk 3.

    Args:
        model_path: a ``.model`` file written by :meth:`train`.
    """

    pad_id, bos_id, eos_id, unk_id = PAD_ID, BOS_ID, EOS_ID, UNK_ID

    def __init__(self, model_path: str | os.PathLike) -> None:
        self.path = Path(model_path)
        try:
            data = self.path.read_bytes()
            self.sp = spm.SentencePieceProcessor(model_proto=data)
        except (OSError, RuntimeError) as error:
            raise UserError(f"{model_path}: not a readable SentencePiece model ({error})") from None
        self.fingerprint = hashlib.sha256(data).hexdigest()[:16]
        self.lowercases = self.sp.normalize("A") in ("a", "\u2581a")  # trained lowercase=True
        self._bpe: BpeDropout | None = None
        if (self.sp.pad_id(), self.sp.bos_id(), self.sp.eos_id()) != (PAD_ID, BOS_ID, EOS_ID):
            raise UserError(
                f"{model_path}: special ids differ from pad 0, bos 1, eos 2; "
                "train the tokenizer with transduce"
            )

    @classmethod
    def train(
        cls,
        sentences: Iterable[str],
        model_path: str | os.PathLike,
        vocab_size: int,
        model_type: str = "bpe",
        lowercase: bool = False,
        symbols: Sequence[str] = (),
    ) -> SubwordTokenizer:
        """Train on ``sentences`` (source and target text together, for a joint vocabulary)
        and write ``model_path`` atomically. With ``lowercase``, the model's own normaliser
        lowercases all text (SentencePiece's ``nmt_nfkc_cf`` rule: NFKC and case folding,
        with ß kept) before it is split, in training and in every later use, so its
        subwords and its decoded text are lowercase. ``symbols`` are pieces kept whole and
        given ids of their own (a masked language model's ``<mask>``)."""
        model_path = Path(model_path)
        model_path.parent.mkdir(parents=True, exist_ok=True)
        # Staged beside the model under a name that remove_staging() recognises.
        with tempfile.TemporaryDirectory(
            prefix=f".{model_path.name}.", suffix=".tmp", dir=model_path.parent
        ) as tmp:
            prefix = os.path.join(tmp, "spm")
            try:
                spm.SentencePieceTrainer.train(
                    sentence_iterator=iter(list(sentences)),
                    model_prefix=prefix,
                    vocab_size=vocab_size,
                    model_type=model_type,
                    character_coverage=1.0,
                    pad_id=PAD_ID,
                    bos_id=BOS_ID,
                    eos_id=EOS_ID,
                    unk_id=UNK_ID,
                    num_threads=1,
                    minloglevel=2,
                    hard_vocab_limit=False,
                    user_defined_symbols=list(symbols),
                    normalization_rule_name="nmt_nfkc_cf" if lowercase else "nmt_nfkc",
                )
            except (RuntimeError, ValueError) as error:  # e.g. fewer subwords than characters
                reason = str(error).strip().splitlines()[-1][:300]
                raise UserError(
                    f"SentencePiece cannot train with vocab_size={vocab_size}, "
                    f"spm_model_type={model_type} on this text: {reason}"
                ) from None
            with atomic_path(model_path) as out:
                os.replace(prefix + ".model", out)
        return cls(model_path)

    def __len__(self) -> int:
        return self.sp.get_piece_size()

    def symbol_id(self, piece: str) -> int | None:
        """The id of a symbol the model was trained with (``symbols``), or None."""
        found = self.sp.piece_to_id(piece)
        return None if found == self.unk_id and piece != self.sp.id_to_piece(found) else found

    def encode(self, texts: Sequence[str]) -> list[list[int]]:
        """Subword ids of each text (no BOS/EOS)."""
        return self.sp.encode(list(texts))

    def encode_words(self, texts: Sequence[str]) -> list[tuple[list[int], list[str]]]:
        """Subword ids of each text, and beside each subword the word it belongs to as the
        text spells it (case kept, also where the model lowercases): a word starts at a
        subword whose text begins with a space, or at the first."""
        out = []
        for text in texts:
            pieces = self.sp.encode(text, out_type="proto").pieces
            groups: list[list[str]] = []
            for k, p in enumerate(pieces):
                if k == 0 or p.surface[:1].isspace():
                    groups.append([])
                groups[-1].append(p.surface)
            words = [w for group in groups for w in ["".join(group).strip()] * len(group)]
            out.append(([p.id for p in pieces], words))
        return out

    def unknown(self, text: str) -> list[str]:
        """The parts of ``text`` the model cannot read: those that map to unk (characters
        never seen in training), each once, in order."""
        pieces = self.sp.encode(text, out_type="proto").pieces
        return list(
            dict.fromkeys(
                p.surface.strip() for p in pieces if p.id == self.unk_id and p.surface.strip()
            )
        )

    def dropout_corpus(self, texts: Sequence[str]) -> DropoutCorpus:
        """``texts`` prepared for BPE-dropout (Provilkov et al. 2020): ``.draw(p, seed)``
        segments them anew, each merge of each step skipped with probability ``p``, so
        words come out in smaller pieces now and then; the same seed gives the same draw in
        every process and run. Needs a BPE model."""
        if self._bpe is None:
            self._bpe = BpeDropout(self.sp)
        return self._bpe.corpus(texts)

    def decode(self, ids: Sequence[int]) -> str:
        """Detokenized text of ids, cut at the first EOS, skipping pad and BOS."""
        ids = list(ids)
        if self.eos_id in ids:
            ids = ids[: ids.index(self.eos_id)]
        return self.sp.decode([i for i in ids if i not in (self.pad_id, self.bos_id)])

    def pieces(self, ids: Sequence[int]) -> list[str]:
        """The subword strings of ids (for attention plots)."""
        return [self.sp.id_to_piece(i) for i in ids]
