"""The peers of the speed benchmark, built the way their users build them: a
``torch.nn.Transformer`` translation model, and Hugging Face ``generate`` over our weights
converted into a MarianMTModel.
"""

from __future__ import annotations

import math


class TorchTransformerMT:
    """What a PyTorch user writes: nn.Transformer between shared scaled embeddings + sinusoids
    and a tied output layer."""

    @staticmethod
    def build(cfg, vocab_size: int, pad_id: int):
        import torch
        from torch import nn

        from transduce.nn.positional import sinusoidal_table

        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.embed = nn.Embedding(vocab_size, cfg.model.d_model, padding_idx=pad_id)
                nn.init.normal_(self.embed.weight, std=cfg.model.d_model**-0.5)
                self.register_buffer("pe", sinusoidal_table(cfg.max_len + 2, cfg.model.d_model))
                self.dropout = nn.Dropout(cfg.model.dropout)
                self.transformer = nn.Transformer(
                    cfg.model.d_model,
                    cfg.model.num_heads,
                    cfg.model.num_encoder_layers,
                    cfg.model.num_decoder_layers,
                    cfg.model.d_ff,
                    cfg.model.dropout,
                    batch_first=True,
                )
                self.out = nn.Linear(cfg.model.d_model, vocab_size, bias=False)
                self.out.weight = self.embed.weight

            def embed_positions(self, ids):
                return self.dropout(
                    self.embed(ids) * math.sqrt(cfg.model.d_model) + self.pe[: ids.shape[1]]
                )

            def forward(self, src, tgt_in):
                causal = nn.Transformer.generate_square_subsequent_mask(
                    tgt_in.shape[1], device=tgt_in.device, dtype=torch.bool
                )
                hidden = self.transformer(
                    self.embed_positions(src),
                    self.embed_positions(tgt_in),
                    tgt_mask=causal,
                    src_key_padding_mask=src == pad_id,
                    tgt_key_padding_mask=tgt_in == pad_id,
                    memory_key_padding_mask=src == pad_id,
                    tgt_is_causal=True,
                )
                return self.out(hidden)

        return Model()


class MarianTranslator:
    """``generate`` of our weights converted into a MarianMTModel, batched by length."""

    def __init__(self, ours) -> None:
        from transduce.export.marian import to_marian

        self.tokenizer = ours.tokenizer
        self.device = next(ours.model.parameters()).device  # where ours was loaded
        self.model = to_marian(ours.model, ours.tokenizer).to(self.device)

    def search(
        self,
        lines,
        beam_size=5,
        alpha=0.6,
        nbest=1,
        max_tokens=6000,
        progress=None,
        lenpen_style="power",
    ):
        assert lenpen_style == "power", "generate divides by length^alpha only"
        import torch

        from transduce.data.batching import collate, token_batches

        tok = self.tokenizer
        ids = tok.encode(lines)
        results = [[("", 0.0)] for _ in lines]
        todo = [i for i, seq in enumerate(ids) if seq]
        for batch in token_batches([len(ids[i]) + 2 for i in todo], max_tokens // beam_size):
            rows = [todo[j] for j in batch]
            src, _ = collate([ids[i] for i in rows], None, tok.pad_id, tok.bos_id, tok.eos_id)
            src = src.to(self.device)
            with torch.no_grad():
                out = self.model.generate(
                    input_ids=src,
                    attention_mask=src != tok.pad_id,
                    num_beams=beam_size,
                    length_penalty=alpha,
                    max_new_tokens=src.shape[1] + 50,
                    do_sample=False,
                    early_stopping=True,
                    num_return_sequences=1,
                )
            for i, row in zip(rows, out.tolist()):
                results[i] = [
                    (tok.decode([t for t in row[1:] if t not in (tok.pad_id, tok.eos_id)]), 0.0)
                ]
        return results
