"""A bounded load test of a real server on 127.0.0.1: 20 concurrent clients × 50 requests,
none lost, none mixed up, no error; and concurrent clients are batched together."""

import transduce
from tests.helpers.serving import serve
from transduce.data.numbers import english
from transduce.serve.load import run_load


def test_twenty_clients_times_fifty_requests(trained_run):
    sentences = [english(n) for n in range(1000, 1100)]
    model = transduce.load(trained_run, verbose=False)
    expected = dict(zip(sentences, model.translate(sentences, beam=1)))
    with serve(trained_run, "--threads", "1") as url:
        result = run_load(url, sentences, expected, clients=20, per_client=50, timeout=240)
        import httpx

        info = httpx.get(url + "info").json()
    assert result.errors == [] and result.requests == 1000
    assert result.mixed_up == 0  # every answer is its own sentence's translation
    assert info["batched_requests"] >= 1000
    assert info["batches"] < info["batched_requests"] / 2  # requests shared model calls
