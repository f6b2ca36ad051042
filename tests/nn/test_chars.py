"""The character model of each word: its ids, its CNN read once per distinct word, and the
encoder that adds it to every subword of the word."""

import pytest
import torch

from tests.helpers.text import tiny_encoder
from transduce.nn.chars import CHAR_BUCKETS, MAX_CHARS, CharCNN, char_ids, distinct_rows


def test_char_ids_mark_the_word_pad_it_and_keep_both_ends_of_a_long_one():
    assert char_ids("Cat", 8) == [1, 2 + ord("C"), 2 + ord("a"), 2 + ord("t"), 1, 0, 0, 0]
    assert char_ids("", 4) == [0, 0, 0, 0]  # no word: all padding
    long = char_ids("internationalisation", 10)  # 8 letters kept: 4 first, 4 last
    assert long == [1, *[2 + ord(c) for c in "inte" + "tion"], 1]
    assert len(char_ids("x" * 100)) == MAX_CHARS
    assert all(2 <= i < CHAR_BUCKETS for i in char_ids("ÆØ漢字🙂")[1:6])  # folded, never pad


def naive(cnn: CharCNN, chars: torch.Tensor) -> torch.Tensor:
    """Every token read on its own, as the module's docstring describes it."""
    out = []
    for row in chars.reshape(-1, chars.shape[-1]):
        if not (row != 0).any():
            out.append(torch.zeros(cnn.out.out_features))
            continue
        x = torch.relu(cnn.conv(cnn.embed(row).T.unsqueeze(0)))[0]  # (W, C)
        out.append(cnn.out(x[:, row != 0].amax(-1)))
    return torch.stack(out).reshape(*chars.shape[:2], -1)


def batch() -> torch.Tensor:
    words = [["", "walked", "walked", "on"], ["", "On", "walked", ""]]  # "" : BOS or padding
    return torch.tensor([[char_ids(w) for w in row] for row in words])


def test_the_cnn_reads_each_distinct_word_once_and_gives_what_reading_each_token_gives():
    torch.manual_seed(0)
    cnn = CharCNN(d_model=16, filters=8, dim=4)
    chars = batch()
    out = cnn(chars)
    assert out.shape == (2, 4, 16)
    torch.testing.assert_close(out, naive(cnn, chars), atol=1e-5, rtol=1e-5)
    assert out[0, 0].abs().max() == 0 and out[1, 3].abs().max() == 0  # no word, no vector
    torch.testing.assert_close(out[0, 1], out[1, 2])  # a word is a word wherever it stands
    assert (out[0, 3] - out[1, 1]).abs().max() > 1e-4  # "on" and "On": case is read
    out.sum().backward()  # and the gradient reaches the letters' embeddings
    assert cnn.embed.weight.grad[2 + ord("w")].abs().sum() > 0


def encoder(chars: int):
    return tiny_encoder(chars=chars)


def test_the_encoder_adds_each_words_letters_to_its_subwords_and_ignores_padding():
    m = encoder(chars=8)
    tokens = torch.tensor([[1, 5, 5, 6]])
    chars = batch()[:1]
    base = m(tokens, chars=chars).logits
    respelled = chars.clone()
    respelled[0, 3] = torch.tensor(char_ids("in"))
    changed = m(tokens, chars=respelled).logits
    assert (changed[0, 3] - base[0, 3]).abs().max() > 1e-4  # same subword, other letters
    padded = m(
        torch.tensor([[1, 5, 5, 6, 0, 0]]),
        chars=torch.cat([chars, torch.tensor([[char_ids("x")] * 2])], 1),  # letters at padding
    ).logits
    torch.testing.assert_close(padded[:, :4], base, atol=1e-5, rtol=1e-5)


def test_a_model_with_letters_needs_them_and_one_without_refuses_them():
    with pytest.raises(ValueError, match="needs the words' characters"):
        encoder(chars=8)(torch.tensor([[1, 5]]))
    with pytest.raises(ValueError, match="has no character model"):
        encoder(chars=0)(torch.tensor([[1, 5]]), chars=batch()[:1, :2])


@pytest.mark.parametrize("width", [24, 5])
def test_distinct_rows_are_torch_uniques_up_to_their_order(width):
    """distinct_rows gives each distinct row once and every row's own index, as
    torch.unique(dim=0) does; rows that differ in one late letter stay apart."""
    torch.manual_seed(0)
    spellings = torch.randint(0, 256, (40, width))
    spellings[1] = spellings[0]
    spellings[1, -1] = (spellings[0, -1] + 1) % 256  # differs in its last letter only
    rows = spellings[torch.randint(0, 40, (300,))]
    words, where = distinct_rows(rows)
    expected, _ = torch.unique(rows, dim=0, return_inverse=True)
    assert torch.equal(words[where], rows)
    assert len(words) == len(expected)
    assert sorted(map(tuple, words.tolist())) == sorted(map(tuple, expected.tolist()))
