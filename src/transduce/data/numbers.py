"""The demo task: English number words → German number words, for 0 … 999 999.

German writes numbers as one word whose units come before their tens
("three hundred twenty-one" → "dreihunderteinundzwanzig"), so a translator must reorder,
which makes its cross-attention worth looking at. Both generators are written here from the
languages' rules, so the task needs no download.
"""

from __future__ import annotations

import random
import re

from transduce.data.vocab import Vocab

LIMIT = 1_000_000  # numbers 0 … LIMIT - 1

_EN_SMALL = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen "
    "fourteen fifteen sixteen seventeen eighteen nineteen"
).split()
_EN_TENS = "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()

# German units as they appear before "und", "hundert" and "tausend" (1 is "ein" there).
_DE_UNITS = "_ ein zwei drei vier fünf sechs sieben acht neun".split()
_DE_SMALL = (
    "null eins zwei drei vier fünf sechs sieben acht neun zehn elf zwölf dreizehn "
    "vierzehn fünfzehn sechzehn siebzehn achtzehn neunzehn"
).split()
_DE_TENS = "_ _ zwanzig dreißig vierzig fünfzig sechzig siebzig achtzig neunzig".split()

# Every morpheme German number words are built from; the tokenizer splits on these.
GERMAN_MORPHEMES = tuple(
    sorted(set(_DE_UNITS[1:] + _DE_SMALL + _DE_TENS[2:] + ["und", "hundert", "tausend"]))
)
ENGLISH_WORDS = tuple(sorted(set(_EN_SMALL + _EN_TENS[2:] + ["hundred", "thousand", "-"])))


def _check(n: int) -> None:
    if not 0 <= n < LIMIT:
        raise ValueError(f"{n} is outside 0 … {LIMIT - 1}")


def _english_below_1000(n: int) -> list[str]:
    hundreds, rest = divmod(n, 100)
    words = [_EN_SMALL[hundreds], "hundred"] if hundreds else []
    if rest >= 20:
        tens, unit = divmod(rest, 10)
        words.append(_EN_TENS[tens] + (f"-{_EN_SMALL[unit]}" if unit else ""))
    elif rest:
        words.append(_EN_SMALL[rest])
    return words


def english(n: int) -> str:
    """American English words without "and": 321 → "three hundred twenty-one"."""
    _check(n)
    if n == 0:
        return "zero"
    thousands, rest = divmod(n, 1000)
    words = _english_below_1000(thousands) + ["thousand"] if thousands else []
    return " ".join(words + _english_below_1000(rest))


def _german_below_100(n: int, final: bool) -> list[str]:
    if n == 1:
        return ["eins" if final else "ein"]  # "hunderteins" but "eintausend", "einundzwanzig"
    if n < 20:
        return [_DE_SMALL[n]]
    tens, unit = divmod(n, 10)
    return [_DE_UNITS[unit], "und", _DE_TENS[tens]] if unit else [_DE_TENS[tens]]


def _german_below_1000(n: int, final: bool) -> list[str]:
    hundreds, rest = divmod(n, 100)
    parts = [_DE_UNITS[hundreds], "hundert"] if hundreds else []
    return parts + (_german_below_100(rest, final) if rest else [])


def german_morphemes(n: int) -> list[str]:
    """The morphemes of the German number word: 321 → [drei, hundert, ein, und, zwanzig]."""
    _check(n)
    if n == 0:
        return ["null"]
    thousands, rest = divmod(n, 1000)
    parts = _german_below_1000(thousands, final=False) + ["tausend"] if thousands else []
    return parts + _german_below_1000(rest, final=True)


def german(n: int) -> str:
    """The German number word, one word: 321 → "dreihunderteinundzwanzig"."""
    return "".join(german_morphemes(n))


def english_tokens(text: str) -> list[str]:
    """Words and hyphens: "twenty-one thousand" → [twenty, -, one, thousand]."""
    return re.findall(r"[a-z]+|-", text.lower())


_MORPHEME_RE = re.compile("|".join(sorted(GERMAN_MORPHEMES, key=len, reverse=True)))


def german_tokens(text: str) -> list[str]:
    """Split a German number word into morphemes, longest match first.

    Raises:
        ValueError: if part of the text is not a number morpheme.
    """
    tokens, pos = [], 0
    while pos < len(text):
        match = _MORPHEME_RE.match(text, pos)
        if match is None:
            raise ValueError(f"{text!r} is not a German number word (stuck at {text[pos:]!r})")
        tokens.append(match.group())
        pos = match.end()
    return tokens


def held_out_numbers(count: int = 1000, seed: int = 2017) -> list[int]:
    """A fixed held-out set: ``count`` distinct numbers, equally many with 3, 4, 5 and 6 digits.

    Numbers below 100 are never held out, so training sees every building block; the
    held-out set tests composition. The same seed always gives the same set.
    """
    rng = random.Random(seed)
    chosen: set[int] = set()
    digits = [3, 4, 5, 6]
    while len(chosen) < count:
        d = digits[len(chosen) % len(digits)]
        chosen.add(rng.randrange(10 ** (d - 1), 10**d))
    return sorted(chosen)


def sample_numbers(rng: random.Random, count: int, exclude: set[int]) -> list[int]:
    """``count`` training numbers: a digit count uniform in 1 … 6, then a uniform number with
    that many digits, never one in ``exclude``. Short numbers are thereby common enough."""
    numbers = []
    while len(numbers) < count:
        d = rng.randint(1, 6)
        n = rng.randrange(0 if d == 1 else 10 ** (d - 1), 10**d)
        if n not in exclude:
            numbers.append(n)
    return numbers


class NumbersTokenizer:
    """The demo's word-level vocabulary behind the interface of
    :class:`~transduce.data.tokenizer.SubwordTokenizer`, so that a demo run loads,
    translates and serves like any other. A line of digits ("321") is read as its English
    words; the output is the German number word, its morphemes joined."""

    fingerprint = "numbers"

    def __init__(self) -> None:
        self.vocab = Vocab(list(ENGLISH_WORDS) + list(GERMAN_MORPHEMES))
        v = self.vocab
        self.pad_id, self.bos_id, self.eos_id, self.unk_id = v.pad_id, v.bos_id, v.eos_id, v.unk_id

    def __len__(self) -> int:
        return len(self.vocab)

    def encode(self, texts) -> list[list[int]]:
        """Ids of each English number (words or digits below a million), without EOS."""
        out = []
        for text in texts:
            text = text.strip().replace(",", "")
            if text.isdigit() and int(text) < 10**6:
                text = english(int(text))
            out.append(self.vocab.encode(english_tokens(text), eos=False))
        return out

    def unknown(self, text: str) -> list[str]:
        """The words of ``text`` that are not English number words, and what it skips
        (anything but letters, hyphens, commas and spaces), each once, in order."""
        text = text.strip().replace(",", "")
        if text.isdigit() and int(text) < 10**6:
            return []
        parts = re.findall(r"[a-z]+|[^\sa-z-]+", text.lower())
        return list(dict.fromkeys(p for p in parts if p not in ENGLISH_WORDS))

    def decode(self, ids) -> str:
        return "".join(self.vocab.decode(ids))

    def pieces(self, ids) -> list[str]:
        return [self.vocab.itos[i] for i in ids]
