"""How /translate decodes: the run's decoding.json for what a request leaves out, and the
settings a request gives reaching the search (early exit batched apart)."""

import json

from fastapi.testclient import TestClient

import transduce
from transduce.api.describe import describe
from transduce.serve.app import create_app


def test_requests_without_settings_use_the_runs_decoding(trained_run, tmp_path):
    """A run's decoding.json (transduce tune) sets what a request leaves out; /info says it."""
    import shutil

    run = tmp_path / "run"
    shutil.copytree(trained_run, run)
    (run / "decoding.json").write_text(
        json.dumps({"beam": 2, "lenpen": 0.0, "last": 1, "no_repeat_ngram": 2})
    )
    model = transduce.load(run, verbose=False)
    seen = []
    search = model.search
    model.search = lambda lines, beam, lenpen, nbest, **kw: (
        seen.append((beam, lenpen, kw.get("no_repeat_ngram", 0)))
        or search(lines, beam, lenpen, nbest, **kw)
    )
    with TestClient(create_app(model, describe(str(run), model))) as c:
        info = c.get("/info").json()
        assert info["decoding"]["beam"] == 2 and "decoding.json" in info["decoding"]["source"]
        assert c.post("/translate", json={"sentences": ["five"]}).status_code == 200
        assert (
            c.post("/translate", json={"sentences": ["five"], "beam": 4, "lenpen": 1.0}).status_code
            == 200
        )
        assert c.post("/translate", json={"sentences": ["five"], "nbest": 3}).json() == {
            "error": "nbest must not exceed beam (2)"
        }
    assert seen == [(2, 0.0, 2), (4, 1.0, 2)]


def test_early_exit_reaches_the_search_and_batches_apart(trained_run):
    model = transduce.load(trained_run, verbose=False)
    expected = model.translate("five hundred", early_exit=True)
    seen = []
    search = model.search
    model.search = lambda lines, beam, lenpen, nbest, **kw: (
        seen.append((tuple(lines), kw.get("early_exit", False)))
        or search(lines, beam, lenpen, nbest, **kw)
    )
    with TestClient(create_app(model, describe(str(trained_run), model))) as c:
        early = c.post("/translate", json={"sentences": ["five hundred"], "early_exit": True})
        plain = c.post("/translate", json={"sentences": ["six"]})
        bad = c.post("/translate", json={"sentences": ["six"], "early_exit": "yes"})
    assert early.status_code == plain.status_code == 200 and bad.status_code == 422
    assert early.json()["translations"] == [expected]
    assert sorted(seen) == [(("five hundred",), True), (("six",), False)]
