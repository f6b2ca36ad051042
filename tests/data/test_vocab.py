import torch

from transduce.data.vocab import Vocab, pad_batch


def test_specials_come_first_and_round_trip():
    vocab = Vocab(["b", "a", "b", "<pad>"])
    assert vocab.itos[:4] == ["<pad>", "<s>", "</s>", "<unk>"] and len(vocab) == 6
    ids = vocab.encode(["a", "zzz"], bos=True)
    assert ids == [vocab.bos_id, vocab.stoi["a"], vocab.unk_id, vocab.eos_id]
    assert vocab.decode(ids + [vocab.stoi["b"]]) == ["a", "<unk>"]  # stops at EOS


def test_pad_batch():
    batch = pad_batch([[5, 6, 7], [8]], pad_id=0)
    assert torch.equal(batch, torch.tensor([[5, 6, 7], [8, 0, 0]]))
