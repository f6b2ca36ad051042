"""Export a trained model to CTranslate2 and translate with it.

CTranslate2 runs the same post-norm (or pre-norm) Transformer with fused kernels and optional
int8 weights. Two things need care: its self-attention takes one fused Q/K/V projection and
its cross-attention one fused K/V projection, and its built-in sinusoidal table puts all sines
before all cosines, whereas ours interleaves them (paper §3.5), so we export our own table.
"""

# size: the export and the translator that runs it share one format (names, positions,
# decoding) and are tested as a pair

from __future__ import annotations

import dataclasses
import json
import logging
import os
import shutil
from pathlib import Path
from typing import Sequence

import numpy as np
import torch

from transduce.data.tokenizer import SubwordTokenizer
from transduce.decoding import defaults
from transduce.decoding.sources import EXTRA_OUTPUT, encode_sources, sentence_case
from transduce.decoding.translator import TranslateAPI
from transduce.errors import UserError
from transduce.io import atomic_directory, check_writable, remove_staging
from transduce.nn.positional import sinusoidal_table
from transduce.nn.transformer import Transformer
from transduce.tasks.translation.loading import load_translation

log = logging.getLogger("transduce")

QUANTIZATIONS = ("float32", "int8", "int8_float32", "bfloat16", "int8_bfloat16")
TOKENIZER = "spm.model"  # our tokenizer, stored beside the CTranslate2 weights
INFO = "transduce.json"  # what the export came from, its positions and decoding
README = "README.md"  # how to use the folder with CTranslate2 and SentencePiece alone
# Rows of the exported position table: sinusoids extend to any length (§3.5), and plain
# CTranslate2 decodes up to 256 tokens by default, so a user who passes no
# max_decoding_length never runs past the table.
EXPORT_POSITIONS = 1024


def keeps_its_quantization(precision: str, name: str = "precision") -> None:
    """Refuse a ``precision`` other than "auto" for an export, in one line naming the
    setting (``name``): it computes in the quantization it was exported with."""
    if precision != "auto":
        raise UserError(
            f"{name} {precision} is for our engine; a CTranslate2 export keeps the "
            "quantization it was exported with (transduce export --quantization)"
        )


def _require_ctranslate2():
    try:
        import ctranslate2
    except ImportError:
        raise UserError(
            "CTranslate2 is not installed; pip install ctranslate2 (or the package's [serve] extra)"
        ) from None
    return ctranslate2


def _array(tensor: torch.Tensor) -> np.ndarray:
    return tensor.detach().float().cpu().numpy()


def _linear(spec, *linears: torch.nn.Linear) -> None:
    """Fill a CTranslate2 LinearSpec with one or several stacked nn.Linear (fused rows)."""
    spec.weight = _array(torch.cat([m.weight for m in linears]))
    if linears[0].bias is not None:
        spec.bias = _array(torch.cat([m.bias for m in linears]))


def _norm(spec, norm: torch.nn.LayerNorm) -> None:
    spec.gamma, spec.beta = _array(norm.weight), _array(norm.bias)


def _self_attention(spec, attn, norm: torch.nn.LayerNorm) -> None:
    """Self-attention: one fused Q/K/V projection, the output projection, its LayerNorm."""
    _linear(spec.linear[0], attn.q_proj, attn.k_proj, attn.v_proj)
    _linear(spec.linear[1], attn.out_proj)
    _norm(spec.layer_norm, norm)


def _feed_forward(spec, ffn, norm: torch.nn.LayerNorm) -> None:
    _linear(spec.linear_0, ffn.w_1)
    _linear(spec.linear_1, ffn.w_2)
    _norm(spec.layer_norm, norm)


def _positions(model: Transformer) -> int:
    """Rows of the exported position table: the model's, or EXPORT_POSITIONS if more."""
    return max(model.positions.table.shape[0], EXPORT_POSITIONS)


def build_spec(model: Transformer, tokenizer: SubwordTokenizer):
    """A CTranslate2 ``TransformerSpec`` holding ``model``'s weights and vocabulary."""
    _require_ctranslate2()
    from ctranslate2.specs import common_spec, transformer_spec

    enc_layers, dec_layers = model.encoder.layers, model.decoder.layers
    pre_norm = model.encoder.norm is not None
    spec = transformer_spec.TransformerSpec.from_config(
        (len(enc_layers), len(dec_layers)),
        enc_layers[0].self_attn.num_heads,
        pre_norm=pre_norm,
        activation=common_spec.Activation.RELU,
    )
    eps = enc_layers[0].residuals[0].norm.eps
    table = _array(sinusoidal_table(_positions(model), model.positions.table.shape[1]))
    for side, embed in ((spec.encoder, model.src_embed), (spec.decoder, model.tgt_embed)):
        embeddings = side.embeddings[0] if isinstance(side.embeddings, list) else side.embeddings
        embeddings.weight = _array(embed.weight)
        side.scale_embeddings = True  # × √d_model, as TokenEmbedding
        side.position_encodings.encodings = table
    if pre_norm:
        _norm(spec.encoder.layer_norm, model.encoder.norm)
        _norm(spec.decoder.layer_norm, model.decoder.norm)
    for ours, theirs in zip(enc_layers, spec.encoder.layer):
        _self_attention(theirs.self_attention, ours.self_attn, ours.residuals[0].norm)
        _feed_forward(theirs.ffn, ours.ffn, ours.residuals[1].norm)
    for ours, theirs in zip(dec_layers, spec.decoder.layer):
        _self_attention(theirs.self_attention, ours.self_attn, ours.residuals[0].norm)
        cross = ours.cross_attn
        _linear(theirs.attention.linear[0], cross.q_proj)
        _linear(theirs.attention.linear[1], cross.k_proj, cross.v_proj)
        _linear(theirs.attention.linear[2], cross.out_proj)
        _norm(theirs.attention.layer_norm, ours.residuals[1].norm)
        _feed_forward(theirs.ffn, ours.ffn, ours.residuals[2].norm)
    _linear(spec.decoder.projection, model.generator)

    pieces = [tokenizer.sp.id_to_piece(i) for i in range(len(tokenizer))]
    spec.register_source_vocabulary(pieces)
    spec.register_target_vocabulary(pieces)
    spec.config.unk_token = pieces[tokenizer.unk_id]
    spec.config.bos_token = pieces[tokenizer.bos_id]
    spec.config.eos_token = pieces[tokenizer.eos_id]
    spec.config.decoder_start_token = pieces[tokenizer.bos_id]
    spec.config.add_source_eos = True  # our sources end with EOS (data.batching.collate)
    spec.config.layer_norm_epsilon = eps
    return spec


def export_ctranslate2(
    path: str | os.PathLike,
    out_dir: str | os.PathLike,
    quantization: str = "float32",
    force: bool = False,
) -> Path:
    """Write the model of a run directory or checkpoint as a CTranslate2 model directory,
    usable with CTranslate2 and SentencePiece alone (its README.md says how).

    The directory is assembled beside ``out_dir`` and renamed into place, so a failed export
    leaves nothing behind. ``quantization``: one of ``QUANTIZATIONS`` (int8 for the fastest
    CPU serving). ``force``: replace an earlier export at ``out_dir``.

    Raises:
        UserError: no CTranslate2, a bad quantization, an existing ``out_dir`` (without
            ``force``, or one that is not an export), or a checkpoint/tokenizer mismatch.
    """
    if quantization not in QUANTIZATIONS:
        raise UserError(
            f"--quantization must be one of {', '.join(QUANTIZATIONS)}, not {quantization!r}"
        )
    out_dir = Path(out_dir)
    if out_dir.exists() and not force:
        raise UserError(
            f"{out_dir}: already exists; give --force to replace it, or choose a "
            "new output directory"
        )
    if out_dir.exists() and not (out_dir / INFO).is_file():
        raise UserError(
            f"{out_dir}: exists and is not a transduce export (no {INFO}); "
            "--force replaces only exports, so choose a new output directory"
        )
    check_writable(out_dir.parent, "OUT_DIR")  # as export's usage names it
    remove_staging(out_dir.parent, (out_dir.name,))  # an export that was killed
    loaded = load_translation(path)
    tokenizer, checkpoint, state = loaded.tokenizer, loaded.checkpoint, loaded.state
    if not isinstance(tokenizer, SubwordTokenizer):  # the demo's word list
        raise UserError(
            f"{path}: a demo run, whose words are no SentencePiece model; export "
            "takes runs that transduce train wrote"
        )
    spec = build_spec(loaded.model, tokenizer)
    spec.validate()
    spec.optimize(quantization=quantization)
    decoding = defaults.read(loaded.run_dir)
    with atomic_directory(out_dir, replace=force) as tmp:
        spec.save(str(tmp))
        shutil.copyfile(tokenizer.path, tmp / TOKENIZER)
        info = {
            "checkpoint": str(checkpoint),
            "quantization": quantization,
            "max_positions": int(state["model_config"]["max_len"]),
            "encoded_positions": _positions(loaded.model),
            "decoding": dataclasses.asdict(decoding),
        }
        (tmp / INFO).write_text(json.dumps(info, indent=2) + "\n")
        (tmp / README).write_text(_readme(checkpoint, info, decoding), encoding="utf-8")
    return out_dir


def _readme(checkpoint: Path, info: dict, decoding: defaults.Decoding) -> str:
    """What a CTranslate2 user needs to translate with the folder, without transduce."""
    return f"""# A transduce model for CTranslate2

Exported by `transduce export` from `{checkpoint}` ({info["quantization"]} weights). It is
a plain CTranslate2 Transformer model plus its SentencePiece model, `{TOKENIZER}`; nothing
else is needed:

```python
import ctranslate2
import sentencepiece as spm

sp = spm.SentencePieceProcessor(model_file="{TOKENIZER}")
translator = ctranslate2.Translator(".", device="cpu")
sources = [sp.encode(line, out_type=str) for line in ["A man rides a bike."]]
results = translator.translate_batch(sources, beam_size={decoding.beam},
                                     length_penalty={decoding.lenpen:g},
                                     no_repeat_ngram_size={decoding.no_repeat_ngram},
                                     max_decoding_length=max(len(s) for s in sources) + 51)
print([sp.decode(r.hypotheses[0]) for r in results])
```

- The source needs no special tokens: the model's config adds the end-of-sentence token.
- Positions: the model was trained on sequences of up to {info["max_positions"]} tokens; the
  sinusoidal table here covers {info["encoded_positions"]}, so any `max_decoding_length` up
  to that works. transduce stops each output after its source's tokens, its end token
  and 50 more, as `max_decoding_length` above does for the longest source of a batch.
- Decoding: {decoding.describe()}. CTranslate2 divides a hypothesis's score by
  length^α, whereas transduce divides by ((5 + length) / 6)^α (Wu et al. 2016) by
  default, so the same α gives slightly different choices.
- `transduce translate --engine ctranslate2 THIS_FOLDER` translates files with it too.
"""


class CTranslate2Translator(TranslateAPI):
    """The :class:`~transduce.decoding.translator.Translator` interface over an exported
    CTranslate2 model directory (see :func:`export_ctranslate2`).

    Args:
        model_dir: the exported directory (holds model.bin and spm.model).
        device: "cpu" or "cuda" ("auto" takes a GPU when CTranslate2 sees one and can run
            on it, else the CPU).
        compute_type: CTranslate2's compute type; "default" keeps the exported one.
        threads: intra-op threads (0: CTranslate2's default).
    """

    def __init__(
        self,
        *,
        model_dir: str | os.PathLike,
        device: str = "auto",
        compute_type: str = "default",
        threads: int = 0,
    ) -> None:
        ct2 = _require_ctranslate2()
        model_dir = Path(model_dir)
        if not all((model_dir / name).is_file() for name in ("model.bin", TOKENIZER, INFO)):
            raise UserError(
                f"{model_dir}: not a CTranslate2 export of transduce (needs "
                f"model.bin, {TOKENIZER} and {INFO}); run transduce export first"
            )
        try:
            info = json.loads((model_dir / INFO).read_text(encoding="utf-8"))
            positions = int(info["max_positions"])
        except (ValueError, KeyError, TypeError) as error:
            raise UserError(
                f"{model_dir / INFO}: damaged ({type(error).__name__}); export the model again"
            ) from None
        gpus = ct2.get_cuda_device_count()
        auto = device == "auto"
        if auto:
            device = "cuda" if gpus > 0 else "cpu"
        kind, _, index = device.partition(":")
        if kind not in ("cpu", "cuda") or (index and not index.isdigit()):
            raise UserError(f"--device {device}: CTranslate2 runs on cpu, cuda or cuda:N")
        if kind == "cuda" and int(index or 0) >= gpus:
            raise UserError(
                f"--device {device}: CTranslate2 sees {gpus} CUDA GPU(s) here; use --device cpu"
            )
        if "decoding" in info:
            self.decoding = defaults.check(info["decoding"], str(model_dir / INFO))
        self.tokenizer = SubwordTokenizer(model_dir / TOKENIZER)

        def open_on(kind: str, index: int = 0):
            try:
                return ct2.Translator(
                    str(model_dir),
                    device=kind,
                    device_index=index,
                    compute_type=compute_type,
                    intra_threads=threads,
                )
            except (RuntimeError, ValueError) as error:
                raise UserError(
                    f"{model_dir / 'model.bin'}: CTranslate2 cannot load it "
                    f"({str(error).splitlines()[0][:200]}); export the model "
                    "again"
                ) from None

        self.translator = open_on(kind, int(index or 0))
        if kind == "cuda":
            # CTranslate2 loads CUDA's libraries (cuBLAS of the CUDA version it was built for)
            # only at its first translation: a GPU it sees can still be one it cannot use
            problem = self._gpu_problem()
            if problem and not auto:
                raise UserError(
                    f"--device {device}: CTranslate2 cannot run on the GPU here "
                    f"({problem}); install the CUDA libraries its release needs, "
                    "or use --device cpu"
                )
            if problem:
                log.warning(
                    f"transduce: note: CTranslate2 cannot run on the GPU here "
                    f"({problem}); translating on the CPU"
                )
                self.translator, kind = open_on("cpu"), "cpu"
        self.device = kind
        # As our own Translator: room for EOS, and for BOS + source length + 50 outputs.
        self.max_source = positions - EXTRA_OUTPUT - 2

    def _gpu_problem(self) -> str:
        """Why a one-token translation fails on the device (its first line), or ""."""
        try:
            self.translator.translate_batch(
                [[self.tokenizer.sp.id_to_piece(0)]], beam_size=1, max_decoding_length=1
            )
        except RuntimeError as error:
            return str(error).splitlines()[0][:200]
        return ""

    def search(
        self,
        lines: Sequence[str],
        beam_size: int = 5,
        alpha: float = 0.6,
        nbest: int = 1,
        max_tokens: int = 6000,
        progress=None,
        lenpen_style: str = "power",
        no_repeat_ngram: int = 0,
        early_exit: bool = False,
    ) -> list[list[tuple[str, float]]]:
        """As :meth:`Translator.search`: ``nbest`` (translation, score) pairs per line.
        CTranslate2 divides scores by length^α only (``lenpen_style="power"``), and ends its
        search its own way (``early_exit`` is refused)."""
        if early_exit:
            raise UserError("early_exit is for our engine; CTranslate2 ends its search its own way")
        if lenpen_style != "power" and alpha:
            raise UserError(
                "CTranslate2 divides scores by length^alpha only; use "
                "--lenpen-style power (or --lenpen 0)"
            )
        sp = self.tokenizer.sp
        ids = encode_sources(
            self.tokenizer, [sentence_case(line) for line in lines], self.max_source
        )
        results: list[list[tuple[str, float]]] = [[("", 0.0)] * nbest for _ in lines]
        todo = [i for i, seq in enumerate(ids) if seq]
        pieces = [[sp.id_to_piece(t) for t in ids[i]] for i in todo]
        longest = max((len(p) for p in pieces), default=0)
        found = self.translator.translate_batch(
            pieces,
            max_batch_size=max(max_tokens // max(beam_size, 1), 1),
            batch_type="tokens",
            beam_size=beam_size,
            num_hypotheses=nbest,
            length_penalty=alpha,
            max_decoding_length=longest + 1 + EXTRA_OUTPUT,
            return_scores=True,
            no_repeat_ngram_size=no_repeat_ngram,
        )
        for i, source, result in zip(todo, pieces, found):
            limit = len(source) + 1 + EXTRA_OUTPUT  # each sentence's own, as our search's
            results[i] = [
                (sp.decode_pieces(h[:limit]), s) for h, s in zip(result.hypotheses, result.scores)
            ]
        if progress is not None:
            progress.update(len(lines))
        return results

    def attention(self, sentence: str, beam: int = 5):
        raise UserError(
            "CTranslate2 does not return attention weights; load the run "
            "directory (the PyTorch model) to see them"
        )
