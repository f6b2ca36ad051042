"""`transduce text train|test|predict`: the encoder on its own, classifying sentences or
tagging words."""

from __future__ import annotations

import argparse
import json
import sys

from transduce.api.text import TextModel
from transduce.cli.args import add_run_arguments, config_and_overrides
from transduce.cli.settings_help import SettingsHelpFormatter, settings_epilog
from transduce.errors import UserError
from transduce.tasks.text.config import TextConfig
from transduce.tasks.text.task import train_text


def add_parser(commands: argparse._SubParsersAction, summary: str) -> None:
    parser = commands.add_parser(
        "text",
        help=summary,
        description="Sentence classification, tagging and entity extraction with the "
        "Transformer's encoder on its own.",
    )
    sub = parser.add_subparsers(title="commands", metavar="COMMAND", required=True)
    train = sub.add_parser(
        "train",
        help="train a classifier or tagger (resumes a run directory)",
        description="Train the encoder and a head on labelled sentences (task=classify) or "
        "tagged words (task=tag, task=entities). Starting again on a run directory resumes it.",
        epilog=settings_epilog(TextConfig()),
        formatter_class=SettingsHelpFormatter,
    )
    add_run_arguments(train, "configs/text_*.yaml", "task=classify train=TREC.train format=trec")
    train.set_defaults(run=run_train)
    test = sub.add_parser("test", help="score a run on a test file")
    test.add_argument("run_dir", metavar="RUN_DIR", help="the run to score")
    test.add_argument("--data", help="the test file (default: the run's test=)")
    test.set_defaults(run=run_test)
    predict = sub.add_parser("predict", help="label sentences, or tag their words")
    predict.add_argument("run_dir", metavar="RUN_DIR", help="the run to predict with")
    predict.add_argument(
        "texts", nargs="*", metavar="TEXT", help="sentences (default: one a line on stdin)"
    )
    predict.set_defaults(run=run_predict)


def run_train(args: argparse.Namespace) -> int:
    cfg, source = config_and_overrides(TextConfig, args.items, args.run_dir)
    cfg.validate(source)
    result = train_text(cfg, args.run_dir)
    print(f"best validation {result['metric'].removeprefix('val_')} {result['best']:.2f}")
    return 0


def run_test(args: argparse.Namespace) -> int:
    result = TextModel(args.run_dir, verbose=True).test(args.data)
    line = f"test accuracy {result['accuracy']:.2f}% ({result.get('words', result['sentences'])} "
    line += "words)" if "words" in result else "sentences)"
    print(line)
    if "entities" in result:
        micro = result["entities"]["micro"]
        print(
            f"entities: precision {micro['precision']:.2f} recall {micro['recall']:.2f} "
            f"F1 {micro['f1']:.2f} ({micro['true']} true, {micro['predicted']} predicted)"
        )
    return 0


def run_predict(args: argparse.Namespace) -> int:
    model = TextModel(args.run_dir)
    texts = args.texts or [line.strip() for line in sys.stdin if line.strip()]
    if not texts:
        raise UserError("give sentences to predict, as arguments or one a line on stdin")
    for text in texts:
        if model.cfg.task == "classify":
            print(model.classify(text)["label"] + "\t" + text)
        elif model.cfg.task == "tag":
            print(" ".join(f"{w}/{t}" for w, t in model.tag(text)))
        else:
            print(json.dumps({"text": text, "entities": model.entities(text)}))
    return 0
