"""Text corpora written for the tests: tiny parallel corpora and Multi30k-shaped folders."""

import gzip
import random

from transduce.data.multi30k import LANGUAGES, SPLITS
from transduce.data.numbers import english, german


def write_corpus(folder, compress, short_file=None):
    folder.mkdir(parents=True, exist_ok=True)
    for split, lines in SPLITS.items():
        for lang in LANGUAGES:
            n = lines - 1 if f"{split}.{lang}" == short_file else lines
            text = "".join(f"{split} {lang} sentence {i} ü\n" for i in range(n)).encode()
            if compress:
                (folder / f"{split}.{lang}.gz").write_bytes(gzip.compress(text))
            else:
                (folder / f"{split}.{lang}").write_bytes(text)


# A tiny parallel corpus (English -> German number words) and a config that trains in seconds.
TINY = """\
data_dir: {data}
src_lang: en
tgt_lang: de
vocab_size: 120
d_model: 32
d_ff: 64
num_heads: 2
num_encoder_layers: 1
num_decoder_layers: 1
dropout: 0.1
schedule: inverse_sqrt
lr: 0.003
warmup: 4
max_tokens: 600
max_steps: 12
valid_every: 4
keep_last: 10
seed: 3
threads: 1
"""


def write_pair(folder, prefix, numbers):
    for lang, words in (("en", english), ("de", german)):
        (folder / f"{prefix}.{lang}").write_text(
            "".join(words(n) + "\n" for n in numbers), encoding="utf-8"
        )


def number_corpus(folder):
    """``folder`` with 300 training and 30 validation pairs of random numbers (the same ones
    every time); returns it."""
    folder.mkdir(parents=True)
    rng = random.Random(0)
    write_pair(folder, "train", [rng.randrange(10**6) for _ in range(300)])
    write_pair(folder, "val", [rng.randrange(10**6) for _ in range(30)])
    return folder


# Labelled text for the encoder's tasks: a rule a tiny model learns in a few epochs.
COLOURS, ANIMALS = ["red", "green", "blue", "black"], ["cat", "dog", "fox", "owl"]
TEXT_SETTINGS = [
    "d_model=32",
    "d_ff=64",
    "num_heads=2",
    "num_encoder_layers=1",
    "dropout=0.0",
    "vocab_size=60",
    "max_epochs=3",
    "batch_size=16",
    "warmup=10",
    "lr=0.003",
    "threads=1",
]


def labelled_sentences(path, n, seed, trec=False):
    """label<TAB>text (or TREC's COARSE:fine text): is there a colour word in it?"""
    import random

    rng = random.Random(seed)
    lines = []
    for _ in range(n):
        words = rng.choices(ANIMALS, k=rng.randint(2, 5))
        label = rng.random() < 0.5
        if label:
            words.insert(rng.randrange(len(words) + 1), rng.choice(COLOURS))
        name = "colour" if label else "plain"
        lines.append(
            f"{name.upper()}:x {' '.join(words)}" if trec else f"{name}\t{' '.join(words)}"
        )
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def plain_sentences(path, n, seed):
    """The texts of ``labelled_sentences``, a line each (for masked-LM pre-training)."""
    lines = labelled_sentences(path.with_suffix(".tsv"), n, seed).read_text().splitlines()
    path.write_text("\n".join(line.split("\t")[1] for line in lines) + "\n", encoding="utf-8")
    return path


def train_text(folder, name, *settings):
    """``transduce text train`` of ``settings`` and TEXT_SETTINGS into folder/name."""
    from transduce.cli.main import main

    run = folder / name
    assert main(["text", "train", *settings, *TEXT_SETTINGS, "--run-dir", str(run)]) == 0
    return run


def tagged_sentences(path, n, seed, conllu=False):
    """token<TAB>tag sentences (or CoNLL-U with the tag as UPOS, and as XPOS NN for the
    animal, JJ for the rest): 'big X' is B-ANIMAL I-ANIMAL, a colour O."""
    import random

    rng = random.Random(seed)
    blocks = []
    for _ in range(n):
        rows = []
        for _ in range(rng.randint(2, 5)):
            if rng.random() < 0.5:
                rows += [("big", "B-ANIMAL"), (rng.choice(ANIMALS), "I-ANIMAL")]
            else:
                rows.append((rng.choice(COLOURS), "O"))
        if conllu:
            lines = [
                "\t".join([str(k), w, w, t, "NN" if t == "I-ANIMAL" else "JJ"])
                + "\t_\t0\tdep\t_\t_"
                for k, (w, t) in enumerate(rows, 1)
            ]
        else:
            lines = [f"{w}\t{t}" for w, t in rows]
        blocks.append("\n".join(lines))
    path.write_text("\n\n".join(blocks) + "\n", encoding="utf-8")
    return path


def write_text_files(folder):
    """The text guide's files, small and synthetic, under the names it gives them."""
    labelled_sentences(folder / "TREC.train", 200, 1, trec=True)
    labelled_sentences(folder / "TREC.test", 40, 2, trec=True)
    tagged_sentences(folder / "en_ewt-ud-train.conllu", 100, 1, conllu=True)
    tagged_sentences(folder / "en_ewt-ud-dev.conllu", 20, 2, conllu=True)
    tagged_sentences(folder / "en_ewt-ud-test.conllu", 20, 5, conllu=True)
    tagged_sentences(folder / "wnut17train.conll", 100, 3)
    tagged_sentences(folder / "emerging.dev.conll", 20, 4)


def tiny_encoder(layers: int = 1, **parts):
    """A seeded per-token encoder (16 wide, 2 heads, 3 labels) in eval mode; ``parts`` are
    build_encoder_only's ``chars=`` or ``relative=``."""
    import torch

    from transduce.nn.builders import TransformerConfig
    from transduce.nn.encoder_only import build_encoder_only

    torch.manual_seed(0)
    config = TransformerConfig(
        src_vocab_size=20, d_model=16, d_ff=32, num_heads=2, num_encoder_layers=layers, dropout=0.0
    )
    return build_encoder_only(config, 3, per_token=True, **parts).eval()
