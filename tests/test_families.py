"""A task family is one registration (transduce.families): this file adds a whole one, a
model that reverses words, and `transduce.load`, /info, the server and the command line take
it up from that one declaration alone."""

import argparse

import pytest
import torch
from fastapi.testclient import TestClient

import transduce
from transduce import families, runs
from transduce.api.describe import describe
from transduce.cli.main import build_parser, main
from transduce.families import Command, Family
from transduce.serve.app import create_app

HERE = __name__  # where the family's code is: this module


class Reverser(torch.nn.Module):
    """The family's model: it reverses the order of words (a weight so it has a record)."""

    def __init__(self, times: int) -> None:
        super().__init__()
        self.times = times
        self.scale = torch.nn.Parameter(torch.ones(()))

    def reverse(self, text: str) -> str:
        words = text.split()
        return " ".join(words[::-1] if self.times % 2 else words)


def load_reverser(path, device, precision, verbose):
    state = runs.load_checkpoint(runs.find_checkpoint(path)[0], kind="reverser")
    return runs.build_model(path, state, lambda config: Reverser(**config))


def describe_reverser(path, model) -> dict:
    return {"kind": "reverser", "description": f"reverses words {model.times} times"}


def serve_reverser(app, model, info, tools) -> None:
    @app.post("/reverse")
    async def reverse(body: dict):
        return {"text": await tools.in_worker(model.reverse, body["text"])}


def add_parser(commands: argparse._SubParsersAction, summary: str) -> None:
    parser = commands.add_parser("reverse", help=summary)
    parser.add_argument("model")
    parser.add_argument("text")
    parser.set_defaults(run=lambda args: print(transduce.load(args.model).reverse(args.text)))


REVERSER = Family(
    name="reverser",
    kinds=("reverser",),
    trained_by={"reverser": "a test"},
    load=f"{HERE}:load_reverser",
    describe=f"{HERE}:describe_reverser",
    serve=f"{HERE}:serve_reverser",
    endpoints=("/reverse",),
    unit="words",
    commands=(Command("reverse", "reverse the words of a text", HERE),),
)


@pytest.fixture
def family():
    families.register(REVERSER)
    yield REVERSER
    families.unregister(REVERSER.name)


@pytest.fixture
def run(family, tmp_path):
    model = Reverser(times=3)
    state = runs.record("reverser", model, {"times": 3}, {})
    runs.save_checkpoint(runs.step_path(tmp_path / "run", 1), state)
    return tmp_path / "run"


def test_a_registered_family_loads_describes_serves_and_has_its_command(run, capsys):
    model = transduce.load(run)
    assert isinstance(model, Reverser) and model.reverse("a b c") == "c b a"
    info = describe(str(run), model)
    assert info == {
        "family": "reverser",
        "kind": "reverser",
        "description": "reverses words 3 times",
    }
    with TestClient(create_app(model, info)) as client:
        assert client.get("/info").json()["family"] == "reverser"
        assert client.post("/reverse", json={"text": "one two"}).json() == {"text": "two one"}
        refused = client.post("/translate", json={"sentences": ["x"]})
        assert refused.status_code == 404
        assert refused.json()["error"] == "this server holds a reverser model; see GET /info"
    assert main(["reverse", str(run), "x y z"]) == 0
    assert capsys.readouterr().out == "z y x\n"
    assert "reverse the words of a text" in build_parser().format_help()


def test_another_familys_server_refuses_the_new_endpoint(family, trained_run):
    model = transduce.load(trained_run)
    with TestClient(create_app(model, describe(str(trained_run), model))) as client:
        refused = client.post("/reverse", json={"text": "x"})
        assert refused.status_code == 404 and "holds a translation model" in refused.text


def test_unregistered_the_family_and_its_runs_are_unknown(run):
    families.unregister("reverser")
    with pytest.raises(transduce.errors.UserError, match="kind 'reverser', which no task family"):
        transduce.load(run)
    with pytest.raises(ValueError, match="kind must be one of"):
        runs.record("reverser", Reverser(1), {"times": 1}, {})
    with pytest.raises(SystemExit) as exit:  # argparse's "invalid choice: 'reverse'"
        main(["reverse", str(run), "x"])
    assert exit.value.code == 2


def test_a_family_may_not_take_another_familys_kind_or_command(family):
    import dataclasses

    with pytest.raises(ValueError, match="registered already"):
        families.register(REVERSER)
    with pytest.raises(ValueError, match="a kind or command of another family"):
        families.register(dataclasses.replace(REVERSER, name="other", commands=()))
    with pytest.raises(ValueError, match="trained_by must name a command for each kind"):
        families.register(
            dataclasses.replace(REVERSER, name="third", kinds=("third",), commands=())
        )
