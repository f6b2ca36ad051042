import pytest
import torch

from transduce.nn import BahdanauSeq2Seq, padding_mask

PAD = 0


@pytest.fixture(params=[False, True], ids=["forwards", "bidirectional"])
def model(request):
    """Each test builds the model both ways: a forward encoder and the paper's two-way one."""
    return lambda: BahdanauSeq2Seq(
        15, 17, embed_size=8, num_hiddens=16, num_layers=2, bidirectional=request.param
    ).eval()


@torch.no_grad()
def test_stepping_equals_the_teacher_forced_pass(model):
    m = model()
    src, tgt = torch.randint(1, 15, (3, 5)), torch.randint(1, 17, (3, 4))
    full = m(src, tgt, padding_mask(src, PAD))
    state = m.start(src, padding_mask(src, PAD))
    for t in range(4):
        logits, state = m.step(tgt[:, t : t + 1], state)
        torch.testing.assert_close(logits[:, 0], full[:, t])


@torch.no_grad()
def test_a_batch_equals_its_sentences_one_by_one(model):
    m = model()
    src = torch.tensor([[3, 4, 5, 6], [7, 8, PAD, PAD]])
    tgt = torch.randint(1, 17, (2, 3))
    batch = m(src, tgt, padding_mask(src, PAD))
    alone = m(src[1:, :2], tgt[1:], padding_mask(src[1:, :2], PAD))
    torch.testing.assert_close(batch[1], alone[0], atol=1e-6, rtol=1e-5)


@torch.no_grad()
def test_attention_weights_cover_only_real_source_tokens(model):
    m = model()
    src = torch.tensor([[3, 4, PAD]])
    _, _, weights = m.decode(
        torch.tensor([[1, 5]]), m.start(src, padding_mask(src, PAD)), need_weights=True
    )
    assert weights.shape == (1, 2, 3)
    assert torch.all(weights[..., 2] == 0)
    torch.testing.assert_close(weights.sum(-1), torch.ones(1, 2))


@torch.no_grad()
def test_state_reorder(model):
    m = model()
    src = torch.randint(1, 15, (3, 4))
    state = m.start(src, padding_mask(src, PAD))
    order = torch.tensor([1, 1, 0])
    a, _ = m.step(torch.tensor([[2], [3], [4]]), state.reorder(order))
    b, _ = m.step(torch.tensor([[2], [3], [4]]), m.start(src[order], padding_mask(src[order], 0)))
    torch.testing.assert_close(a, b)


@torch.no_grad()
def test_the_bidirectional_encoder_reads_both_ways():
    """An annotation of the two-way encoder depends on the words after its position (the
    backward half), and the decoder starts from tanh(W_s ←h_1); forwards, it cannot."""
    src = torch.tensor([[3, 4, 5, 6]])
    changed = torch.tensor([[3, 4, 5, 9]])  # only the last word differs
    for bidirectional, sees_later in ((False, False), (True, True)):
        torch.manual_seed(0)
        m = BahdanauSeq2Seq(
            15, 17, embed_size=8, num_hiddens=16, bidirectional=bidirectional
        ).eval()
        a, b = (m.start(x, padding_mask(x, PAD)) for x in (src, changed))
        assert a.enc_outputs.shape == (1, 4, 32 if bidirectional else 16)
        assert (not torch.equal(a.enc_outputs[:, 0], b.enc_outputs[:, 0])) == sees_later
    rnn = m.encoder.rnn
    _, hidden = rnn(m.src_embed(src))  # (2, 1, Hd): forwards, backwards
    torch.testing.assert_close(a.hidden, torch.tanh(m.encoder.W_s(hidden[1:])))
