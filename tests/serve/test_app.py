"""The HTTP API, in process: every endpoint, every error (status and message), order kept,
concurrent requests batched and never mixed up."""

import asyncio
import json

import httpx
import pytest
from fastapi.testclient import TestClient

import transduce
from transduce.api.describe import describe
from transduce.serve.app import MAX_BODY, MAX_CHARS, MAX_SENTENCES, create_app


@pytest.fixture(scope="module")
def model(trained_run):
    return transduce.load(trained_run, verbose=False)


@pytest.fixture(scope="module")
def client(model, trained_run):
    with TestClient(create_app(model, describe(str(trained_run), model))) as c:
        yield c


def test_health_info_and_the_page(client, trained_run):
    assert client.get("/health").json() == {"status": "ok"}
    info = client.get("/info").json()
    assert info["kind"] == "translation" and info["checkpoint"] == "run/checkpoints/best.pt"
    # no absolute path of the machine, in any field the page shows
    assert str(trained_run.parent) not in json.dumps(info)
    assert info["scores"]["last_validation"]["valid_bleu"] >= 0
    assert info["limits"]["max_sentences"] == MAX_SENTENCES
    page = client.get("/")
    assert page.status_code == 200 and "static/attention.js" in page.text
    assert "TransduceAttention" in client.get("/static/attention.js").text
    assert "/translate" in client.get("/openapi.json").json()["paths"]


def test_translate_keeps_count_and_order_with_empty_and_long_lines(client, model):
    lines = ["five", "", "six hundred", "one " * 300, "seven"]
    got = client.post("/translate", json={"sentences": lines, "beam": 2}).json()
    assert got["translations"] == model.translate(lines, beam=2)
    assert got["translations"][1] == ""


def test_translations_come_with_what_the_model_could_not_read(client, model):
    got = client.post(
        "/translate", json={"sentences": ["seven €", "seven", "sev\x00en"], "beam": 1}
    ).json()
    warnings = got["warnings"]
    assert len(warnings) == 3 and warnings[1] == []
    assert warnings[0] == [
        '"€" unknown to the model (never seen in training); its translation is a guess'
    ]
    assert warnings[2] == ["1 control character removed"]
    assert got["translations"][2] == model.translate("seven", beam=1)


def test_nbest_gives_scored_lists(client):
    got = client.post("/translate", json={"sentences": ["six"], "beam": 3, "nbest": 2}).json()
    hyps = got["translations"][0]
    assert len(hyps) == 2 and hyps[0]["score"] >= hyps[1]["score"] and "text" in hyps[0]


def test_attention_endpoint(client, model):
    got = client.post("/attention", json={"sentence": "seven thousand", "beam": 2}).json()
    maps = model.attention("seven thousand", beam=2)
    assert got["source"] == maps.source and got["target"] == maps.target
    assert len(got["cross"]) == len(maps.cross)
    assert len(got["cross"][0][0]) == len(maps.target)  # [layer][head][query][key]
    for blank in (" ", "\x01\x07\x1b"):  # control characters are read as nothing
        for path in ("/attention", "/explain"):
            empty = client.post(path, json={"sentence": blank})
            assert empty.status_code == 422 and "the sentence is empty" in empty.json()["error"]


def test_explain_endpoints_give_the_apis_numbers(client, model):
    page = client.get("/explain")
    assert page.status_code == 200 and "static/explain.js" in page.text
    assert "explainExport" in client.get("/static/explain.js").text
    got = client.post("/explain", json={"sentence": "seven thousand", "beam": 3}).json()
    api = model.explain("seven thousand", beam=3)
    assert got["steps"] == api.steps and got["nbest"] == api.nbest
    assert (got["layers"], got["heads"]) == (len(api.maps.cross), api.maps.cross[0].shape[0])
    head = client.post(
        "/explain/head",
        json={
            "sentence": "seven thousand",
            "beam": 3,
            "kind": "decoder",
            "layer": 0,
            "head": 1,
            "query": 1,
        },
    ).json()
    numbers = model.head("seven thousand", "decoder", 0, 1, 1, beam=3)
    assert head["weights"] == pytest.approx(numbers.weights.tolist(), abs=1e-6)
    assert head["scores"][2:] == [None] * (len(numbers.key_tokens) - 2)  # masked: later keys
    paths = client.get("/openapi.json").json()["paths"]
    assert "/explain" in paths and "/explain/head" in paths


@pytest.mark.parametrize(
    "body, status, message",
    [
        (
            {"sentence": "seven", "kind": "sideways", "layer": 0, "head": 0, "query": 0},
            422,
            "kind: Input should be 'encoder', 'decoder' or 'cross'",
        ),
        (
            {"sentence": "seven", "kind": "cross", "layer": 99, "head": 0, "query": 0},
            422,
            "layer must be between 0 and",
        ),
        (
            {"sentence": "seven", "kind": "cross", "layer": 0, "head": 0, "query": 500},
            422,
            "query must be between 0 and",
        ),
        (
            {"sentence": "seven", "kind": "cross", "layer": -1, "head": 0, "query": 0},
            422,
            "layer: Input should be greater than or equal to 0",
        ),
        (
            {"sentence": " ", "kind": "cross", "layer": 0, "head": 0, "query": 0},
            422,
            "the sentence is empty",
        ),
    ],
)
def test_bad_head_requests_get_a_json_error(client, body, status, message):
    response = client.post("/explain/head", json=body)
    assert response.status_code == status, response.text
    assert message in response.json()["error"]
    assert client.post("/explain", json={"sentence": "five"}).status_code == 200


@pytest.mark.parametrize(
    "body, status, message",
    [
        (b"{not json", 400, "not valid JSON"),
        (b'{"sentences": ["\xff\xfe"]}', 400, "not valid JSON (UTF-8)"),
        (b"[" * 100_000 + b"]" * 100_000, 400, "not valid JSON (UTF-8)"),  # nested too deep
        (json.dumps({"sentences": "one"}).encode(), 422, "sentences: Input should be a valid list"),
        (json.dumps({"sentences": []}).encode(), 422, "sentences: List should have at least 1"),
        (
            json.dumps({"sentences": ["x"] * (MAX_SENTENCES + 1)}).encode(),
            422,
            f"at most {MAX_SENTENCES} items",
        ),
        (
            json.dumps({"sentences": ["x" * (MAX_CHARS + 1)]}).encode(),
            422,
            f"at most {MAX_CHARS} characters",
        ),
        (
            json.dumps({"sentences": [3]}).encode(),
            422,
            "sentences.0: Input should be a valid string",
        ),
        (
            json.dumps({"sentences": ["x"], "beam": 0}).encode(),
            422,
            "beam: Input should be greater",
        ),
        (
            json.dumps({"sentences": ["x"], "beam": 2, "nbest": 3}).encode(),
            422,
            "nbest must not exceed beam",
        ),
        (json.dumps({"sentences": ["x"], "lenpen": "nan"}).encode(), 422, "lenpen"),
        (json.dumps({"sentences": ["x"], "bogus": 1}).encode(), 422, "bogus: Extra inputs"),
        (
            json.dumps({"sentences": ["x"], "beam": True}).encode(),
            422,
            "beam: Input should be a valid integer",
        ),
        (
            json.dumps({"sentences": ["x"], "lenpen": "0.6"}).encode(),
            422,
            "lenpen: Input should be a valid number",
        ),
        (b"x" * (MAX_BODY + 1), 413, "request body over"),
    ],
)
def test_bad_requests_get_a_json_error_and_the_server_keeps_serving(client, body, status, message):
    response = client.post("/translate", content=body, headers={"content-type": "application/json"})
    assert response.status_code == status, response.text
    assert message in response.json()["error"]
    assert client.post("/translate", json={"sentences": ["five"]}).status_code == 200


def test_a_body_that_is_not_sent_as_json_is_told_how_to_send_it(client):
    body = json.dumps({"sentences": ["five"]})  # as curl -d sends it: a form's content type
    for headers in ({"content-type": "application/x-www-form-urlencoded"}, {}):
        response = client.post("/translate", content=body, headers=headers)
        assert response.status_code == 415, response.text
        assert "Content-Type: application/json" in response.json()["error"]
    assert (
        client.post(
            "/translate", content=body, headers={"content-type": "application/json; charset=utf-8"}
        ).status_code
        == 200
    )


def test_a_body_sent_in_chunks_without_a_length_is_limited_too(client):
    chunk = b"x" * (MAX_BODY // 4)
    response = client.post(
        "/translate",
        content=iter([chunk] * 5),  # no Content-Length
        headers={"content-type": "application/json"},
    )
    assert response.status_code == 413, response.text
    assert response.json()["error"] == (f"request body over {MAX_BODY} bytes; send fewer sentences")
    assert client.post("/translate", json={"sentences": ["five"]}).status_code == 200


def test_wrong_endpoint_for_the_model_and_unknown_paths(client):
    # what it holds is said first, whatever the body: the one a user of translation sends
    for body in ({"csv": "date,x\n"}, {"sentences": ["seven"]}):
        response = client.post("/forecast", json=body)
        assert response.status_code == 404, response.text
        assert "holds a translation model" in response.json()["error"]
    assert client.get("/nowhere").json() == {"error": "Not Found"}


def test_concurrent_requests_are_batched_and_never_mixed_up(model, trained_run):
    app = create_app(model, describe(str(trained_run), model), window=0.05)
    sentences = [f"{w} hundred" for w in ("one", "two", "three", "four", "five", "six")]
    expected = model.translate(sentences, beam=1)

    async def clients():
        transport = httpx.ASGITransport(app=app)
        async with app.router.lifespan_context(app):
            async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
                replies = await asyncio.gather(
                    *[
                        c.post("/translate", json={"sentences": [s, s], "beam": 1})
                        for s in sentences
                    ]
                )
                info = (await c.get("/info")).json()
        return [r.json()["translations"] for r in replies], info

    replies, info = asyncio.run(clients())
    assert replies == [[e, e] for e in expected]  # each got its own, in its order
    assert info["batched_requests"] == len(sentences) and info["batches"] < len(sentences)


def test_a_forecast_run_is_served(forecast_run):
    run, csv = forecast_run
    forecaster = transduce.load(run)
    with TestClient(create_app(forecaster, describe(str(run), forecaster))) as c:
        info = c.get("/info").json()
        assert info["kind"] == "forecast" and info["example"].startswith("date,load,temp")
        assert info["run"] == "run" and str(run.parent) not in json.dumps(info)
        assert info["rows_hint"] == (
            "Paste at least 48 recent rows as CSV (a header with the date column and load, temp)."
        )
        got = c.post("/forecast", json={"csv": csv.read_text()}).json()
        assert got["forecast"] == forecaster.forecast(csv.read_text())
        assert len(got["history"]) == 48 and got["date_column"] == "date"
        # dates come back as the rows write them, in the history and the forecast alike
        text = csv.read_text().replace(" ", "T")
        got = c.post("/forecast", json={"csv": text}).json()
        last = text.strip().splitlines()[-1].split(",")[0]
        assert got["history"][-1]["date"] == last and "T" in got["forecast"][0]["date"]
        big = c.post("/forecast", content=b"x" * (MAX_BODY + 1))
        assert big.status_code == 413 and big.json()["error"].endswith("send fewer rows")
        bad = c.post("/forecast", json={"csv": "date,load,temp\n2021-01-01,1,x\n"})
        assert bad.status_code == 422 and "column 'temp' holds 'x'" in bad.json()["error"]
        rows = csv.read_text().splitlines()
        date, _, temp = rows[6].split(",")
        rows[6] = f"{date},1e308,{temp}"  # beyond float32: it was a 500 and a traceback
        huge = c.post("/forecast", json={"csv": "\n".join(rows)})
        assert huge.status_code == 422 and ":7: column 'load' holds " in huge.json()["error"]
        assert c.post("/translate", json={"sentences": ["x"]}).status_code == 404


def test_the_example_of_a_forecaster_with_covariates_forecasts(tmp_path):
    """/info's example is what the page starts from: with a known-future covariate it must
    end in the future's rows (only the known column filled in), or posting it fails."""
    from tests.helpers.forecasting import SHIFTED_SETTINGS as TINY
    from tests.helpers.forecasting import write_shifted
    from transduce.cli.main import main

    csv, _ = write_shifted(tmp_path / "shifted.csv", n=600)
    run = tmp_path / "run"
    assert (
        main(
            [
                "forecast",
                "train",
                f"csv={csv}",
                "columns=y",
                "inputs=a,b",
                "known=k",
                *TINY[:-2],
                "max_epochs=1",
                "--run-dir",
                str(run),
            ]
        )
        == 0
    )
    forecaster = transduce.load(run)
    with TestClient(create_app(forecaster, describe(str(run), forecaster))) as c:
        info = c.get("/info").json()
        assert info["description"] == (
            "forecaster transformer; forecasts y; 8 steps from the "
            "last 24; inputs a, b; known ahead k"
        )
        assert info["rows_hint"].endswith(
            "then the 8 rows to forecast: their date and k, "
            "known ahead, with the other columns left blank."
        )
        rows = info["example"].splitlines()
        last = csv.read_text().splitlines()[-8:]
        assert len(rows) == 1 + 24 + 8 and rows[0] == "date,y,a,b,k"
        assert rows[-8:] == [f"{r.split(',')[0]},,,,{r.split(',')[-1]}" for r in last]
        got = c.post("/forecast", json={"csv": info["example"]})
        assert got.status_code == 200, got.json()
        assert [r["date"] for r in got.json()["forecast"]] == [r.split(",")[0] for r in last]


def test_the_example_holds_only_the_columns_the_model_reads(tmp_path):
    """A column of the CSV that the run does not read stays out of the example (filled in
    the future's rows, it read as if it were known ahead)."""
    from tests.helpers.forecasting import SHIFTED_SETTINGS as TINY
    from tests.helpers.forecasting import write_shifted
    from transduce.cli.main import main

    csv, _ = write_shifted(tmp_path / "shifted.csv", n=600)
    run = tmp_path / "run"
    assert (
        main(
            [
                "forecast",
                "train",
                f"csv={csv}",
                "columns=y",
                "known=k",
                *TINY[:-2],
                "max_epochs=1",
                "--run-dir",
                str(run),
            ]
        )
        == 0
    )
    forecaster = transduce.load(run)
    with TestClient(create_app(forecaster, describe(str(run), forecaster))) as c:
        info = c.get("/info").json()
        rows = info["example"].splitlines()
        last = csv.read_text().splitlines()[-8:]
        assert rows[0] == "date,y,k" and len(rows) == 1 + 24 + 8
        assert rows[-8:] == [f"{r.split(',')[0]},,{r.split(',')[-1]}" for r in last]
        assert c.post("/forecast", json={"csv": info["example"]}).status_code == 200
