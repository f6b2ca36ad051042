import random

import torch

from transduce.data.batching import collate, filter_pairs, token_batches


def test_filter_counts_what_it_drops_and_why():
    src = [[5, 6], [], [5] * 10, [5], [5, 6, 7]]
    tgt = [[7], [8], [9], [5] * 5, [1, 2, 3]]
    keep, dropped = filter_pairs(src, tgt, max_len=8, max_ratio=3.0)
    assert keep == [0, 4]
    assert dropped == {"empty side": 1, "longer than 8 subwords": 1, "length ratio above 3.0": 1}


def test_token_batches_respect_the_budget_and_cover_every_example_once():
    rng = random.Random(0)
    lengths = [rng.randint(3, 40) for _ in range(500)]
    batches = token_batches(lengths, max_tokens=200, rng=random.Random(1))
    assert sorted(i for b in batches for i in b) == list(range(500))
    for batch in batches:
        assert max(lengths[i] for i in batch) * len(batch) <= 200
    # length buckets: little padding
    padded = sum(max(lengths[i] for i in b) * len(b) for b in batches)
    assert padded < 1.1 * sum(lengths)


def test_token_batches_are_reproducible_and_shuffled_by_seed():
    lengths = [random.Random(i).randint(3, 30) for i in range(300)]
    first = token_batches(lengths, 120, random.Random(7))
    assert first == token_batches(lengths, 120, random.Random(7))
    assert first != token_batches(lengths, 120, random.Random(8))


def test_collate_frames_sources_and_targets():
    src, tgt = collate([[5, 6], [7]], [[8], [9, 10, 11]], pad_id=0, bos_id=1, eos_id=2)
    assert torch.equal(src, torch.tensor([[5, 6, 2], [7, 2, 0]]))
    assert torch.equal(tgt, torch.tensor([[1, 8, 2, 0, 0], [1, 9, 10, 11, 2]]))
