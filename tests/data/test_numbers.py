import random

import pytest

from transduce.data.numbers import (
    LIMIT,
    english,
    english_tokens,
    german,
    german_morphemes,
    german_tokens,
    held_out_numbers,
    sample_numbers,
)

GERMAN = {
    0: "null",
    1: "eins",
    2: "zwei",
    6: "sechs",
    7: "sieben",
    10: "zehn",
    11: "elf",
    12: "zwölf",
    16: "sechzehn",
    17: "siebzehn",
    20: "zwanzig",
    21: "einundzwanzig",
    30: "dreißig",
    66: "sechsundsechzig",
    77: "siebenundsiebzig",
    99: "neunundneunzig",
    100: "einhundert",
    101: "einhunderteins",
    111: "einhundertelf",
    321: "dreihunderteinundzwanzig",
    1000: "eintausend",
    1001: "eintausendeins",
    2017: "zweitausendsiebzehn",
    21001: "einundzwanzigtausendeins",
    100000: "einhunderttausend",
    101000: "einhunderteintausend",
    700017: "siebenhunderttausendsiebzehn",
    999999: "neunhundertneunundneunzigtausendneunhundertneunundneunzig",
}
ENGLISH = {
    0: "zero",
    13: "thirteen",
    40: "forty",
    321: "three hundred twenty-one",
    1000: "one thousand",
    1001: "one thousand one",
    90210: "ninety thousand two hundred ten",
    999999: "nine hundred ninety-nine thousand nine hundred ninety-nine",
}


@pytest.mark.parametrize("n, word", sorted(GERMAN.items()))
def test_german(n, word):
    assert german(n) == word


@pytest.mark.parametrize("n, words", sorted(ENGLISH.items()))
def test_english(n, words):
    assert english(n) == words


def test_tokenizers():
    assert english_tokens("twenty-one thousand") == ["twenty", "-", "one", "thousand"]
    assert german_tokens("dreihunderteinundzwanzig") == ["drei", "hundert", "ein", "und", "zwanzig"]
    with pytest.raises(ValueError, match="not a German number word"):
        german_tokens("dreihundertkatzen")


def test_german_tokens_recover_the_generators_morphemes():
    for n in list(range(0, 2000)) + random.Random(0).sample(range(LIMIT), 3000):
        assert german_tokens(german(n)) == german_morphemes(n)


def test_out_of_range():
    for bad in (-1, LIMIT):
        with pytest.raises(ValueError):
            german(bad)
        with pytest.raises(ValueError):
            english(bad)


def test_held_out_split_is_fixed_stratified_and_never_sampled_for_training():
    held = held_out_numbers(1000)
    assert held == held_out_numbers(1000) and len(set(held)) == 1000
    digits = [len(str(n)) for n in held]
    assert {d: digits.count(d) for d in set(digits)} == {3: 250, 4: 250, 5: 250, 6: 250}
    train = sample_numbers(random.Random(0), 20000, set(held))
    assert not set(train) & set(held)
    assert min(train) < 10 and max(train) >= 100000
