"""`transduce forecast train|test|backtest|...`: Transformers on time series."""

from __future__ import annotations

# size: one module per command, and forecast has seven subcommands (train, test, backtest,
# calibrate, blend, predict, plot), each a parser and a short runner; global runs add two
# branches
import argparse
import sys
from pathlib import Path

from transduce import runs
from transduce.api.forecaster import Forecaster, predict_csv
from transduce.cli.args import add_run_arguments, config_and_overrides, positive_int
from transduce.cli.settings_help import SettingsHelpFormatter, settings_epilog
from transduce.io import check_output_file, write_text
from transduce.tasks.forecasting.backtesting import run_backtest as backtest
from transduce.tasks.forecasting.blend import blend_runs
from transduce.tasks.forecasting.calibration import describe
from transduce.tasks.forecasting.config import ForecastConfig
from transduce.tasks.forecasting.rundir import calibrate_run
from transduce.tasks.forecasting.task import train_forecaster


def add_parser(commands: argparse._SubParsersAction, summary: str) -> None:
    parser = commands.add_parser(
        "forecast",
        help=summary,
        description="Long-horizon forecasting under the standard protocol (fixed split "
        "borders, train-only z-scores, windows stepping by one, MSE/MAE on the "
        "normalised scale).",
    )
    sub = parser.add_subparsers(title="commands", metavar="COMMAND", required=True)
    _add_train(sub)
    _add_test(sub)
    _add_backtest(sub)
    _add_calibrate(sub)
    _add_blend(sub)
    _add_predict(sub)
    _add_plot(sub)


def _add_train(sub: argparse._SubParsersAction) -> None:
    train = sub.add_parser(
        "train",
        help="train a forecaster (resumes a run directory)",
        description="Train a forecaster on a CSV with a date column. "
        "Starting again on a run directory resumes it (with no "
        "CONFIG, with its own config.yaml). Under torchrun it "
        "trains on every process.",
        epilog=settings_epilog(ForecastConfig()),
        formatter_class=SettingsHelpFormatter,
    )
    add_run_arguments(train, "configs/forecast_*.yaml", "horizon=192")
    train.set_defaults(run=run_train)


def _add_test(sub: argparse._SubParsersAction) -> None:
    test = sub.add_parser(
        "test",
        help="test-split MSE/MAE of a trained run",
        description="Score the run's best checkpoint on the test split; "
        "prints and writes RUN_DIR/test_results.json.",
    )
    test.add_argument(
        "run_dir",
        metavar="RUN_DIR",
        help="a forecasting run directory, or a forecast blend --output folder",
    )
    test.add_argument(
        "--csv",
        help="a global run (layout=long): the long table of each "
        "series' next horizon to score against (M4's sMAPE, MASE, "
        "OWA and the ρ-risks)",
    )
    test.add_argument(
        "--drop-last",
        type=positive_int,
        action="append",
        default=[],
        metavar="B",
        help="also score only the first floor(n/B)*B test windows, as the "
        "reference implementations do (test loader with drop_last=True and "
        "batch size B), to compare with their published figures; repeatable",
    )
    test.set_defaults(run=run_test)


def _add_backtest(sub: argparse._SubParsersAction) -> None:
    backtest = sub.add_parser(
        "backtest",
        help="score a config on stretches before the test split",
        description="Train and score one config on several folds that end before the test "
        "split (rolling origins): fold 1 is the protocol's split moved back so "
        "that its test rows end where the protocol's test rows begin, and each "
        "next fold is moved back --step rows more, with the same numbers of "
        "validation and test rows and every row before them for training. Each "
        "fold is a run of its own, RUN_DIR/fold_K, that resumes; prints each "
        "fold's validation and test MSE and their mean, and writes "
        "RUN_DIR/backtest.json, and a figure of the folds on the series' dates, "
        "RUN_DIR/backtest.png. Compare configs on their mean backtest MSE to "
        "choose one without reading the test split.",
        epilog=settings_epilog(ForecastConfig()),
        formatter_class=SettingsHelpFormatter,
    )
    add_run_arguments(backtest, "configs/forecast_*.yaml", "horizon=192")
    backtest.add_argument(
        "--folds", type=int, default=3, metavar="N", help="how many folds (default 3)"
    )
    backtest.add_argument(
        "--step",
        type=int,
        default=None,
        metavar="ROWS",
        help="rows between one fold and the next (default: the length of the validation split)",
    )
    backtest.add_argument(
        "--jobs",
        type=int,
        default=1,
        metavar="N",
        help="folds trained at once, each in a process of its own with "
        "its output in RUN_DIR/fold_K.log (default 1); with threads "
        "unset each takes an equal share of the cores",
    )
    backtest.set_defaults(run=run_backtest)


def _add_calibrate(sub: argparse._SubParsersAction) -> None:
    calibrate = sub.add_parser(
        "calibrate",
        help="fit the quantile levels to the validation split",
        description="Move each quantile level of the run's best checkpoint by what the "
        "validation split says it needs (split-conformal, scaled by each "
        "window's spread) and write RUN_DIR/calibration.json, which test, "
        "predict and plot then apply. forecast train does this itself when "
        "calibrate=true (the default); this command is for runs trained "
        "without it, or to fit again.",
    )
    calibrate.add_argument(
        "run_dir", metavar="RUN_DIR", help="a forecasting run directory with quantiles"
    )
    calibrate.set_defaults(run=run_calibrate)


def _add_blend(sub: argparse._SubParsersAction) -> None:
    blend = sub.add_parser(
        "blend",
        help="one forecast from several runs, weights chosen on validation",
        description="Blend the forecasts of several runs trained on the same CSV, columns "
        "and horizon (any models and input lengths) into their weighted mean. "
        "The weights are searched over the simplex in steps of --step, a run "
        "alone included, and those of lowest validation MSE are kept; the blend "
        "is then scored on the test split. With --equal the weights are 1/n "
        "each (a bag of seeds). Writes OUT/blend.json.",
    )
    blend.add_argument(
        "run_dirs",
        nargs="+",
        metavar="RUN_DIR",
        help="forecasting runs (or folders forecast blend wrote)",
    )
    blend.add_argument(
        "--output",
        "--out",
        dest="out",
        required=True,
        help="folder for blend.json (--out: the same)",
    )
    blend.add_argument(
        "--step",
        type=float,
        default=0.25,
        help="the weights' grid step; it must divide 1 (default 0.25)",
    )
    blend.add_argument(
        "--equal",
        action="store_true",
        help="fix the weights at 1/n each and choose nothing on validation: "
        "the mean of the same model or blend trained from several seeds "
        "(a bag); a RUN_DIR may be a blend folder",
    )
    blend.add_argument(
        "--drop-last",
        type=positive_int,
        action="append",
        default=[],
        metavar="B",
        help="as for forecast test",
    )
    blend.set_defaults(run=run_blend)


KNOWN_HELP = (
    "a global run that reads known covariates: a long table of unique_id, ds and "
    "those columns at each series' next horizon steps"
)


def _add_predict(sub: argparse._SubParsersAction) -> None:
    predict = sub.add_parser(
        "predict",
        help="forecast the rows after a CSV's last row",
        description="Forecast the horizon after the last row of --csv, "
        "in the original units, as CSV.",
    )
    predict.add_argument(
        "run_dir",
        metavar="RUN_DIR",
        help="a forecasting run directory, or a forecast blend --output folder",
    )
    predict.add_argument(
        "--csv",
        help="recent history with the run's columns (default: the CSV the run was trained on)",
    )
    predict.add_argument(
        "--series",
        action="append",
        metavar="ID",
        help="a global run: forecast this series only (repeatable; default: every series of --csv)",
    )
    predict.add_argument("--known", metavar="FILE", help=KNOWN_HELP)
    predict.add_argument("--output", help="CSV file to write (default: standard output)")
    predict.set_defaults(run=run_predict)


def _add_plot(sub: argparse._SubParsersAction) -> None:
    plot = sub.add_parser(
        "plot",
        help="PNG of a test window, or of the real future",
        description="Plot a test-split window per channel against its dates"
        " (original units, with the quantile bands of a "
        "probabilistic run); for the transformer model also its "
        "decoder's cross-attention over the input, for the channel "
        "model with mix_channels=true the attention between its "
        "channels. With --future "
        "--csv FILE, the forecast after the file's last row, "
        "after its history.",
    )
    plot.add_argument(
        "run_dir",
        metavar="RUN_DIR",
        help="a forecasting run directory, or a forecast blend --output folder",
    )
    plot.add_argument("--window", type=int, help="test window index (default 0)")
    plot.add_argument(
        "--future",
        action="store_true",
        help="plot the forecast after --csv's last row instead of a test window",
    )
    plot.add_argument(
        "--csv",
        help="with --future: recent history with the run's columns "
        "(default: the CSV the run was trained on)",
    )
    plot.add_argument(
        "--series",
        metavar="ID",
        help="a global run: the series to plot, its history (--csv, default the "
        "table it trained on) then its forecast",
    )
    plot.add_argument("--known", metavar="FILE", help=KNOWN_HELP)
    plot.add_argument(
        "--output",
        help="PNG path (default RUN_DIR/forecast_WINDOW.png, or RUN_DIR/forecast_future.png)",
    )
    plot.set_defaults(run=run_plot)


def run_train(args: argparse.Namespace) -> int:
    cfg, source = config_and_overrides(ForecastConfig, args.items, args.run_dir)
    cfg.validate(source)
    metrics = train_forecaster(cfg, args.run_dir)
    measure = cfg.layout.METRIC.removeprefix("val_")
    print(f"best validation {measure} {metrics['best']:.4f}{cfg.layout.scale_note()}")
    return 0


def run_backtest(args: argparse.Namespace) -> int:
    cfg, source = config_and_overrides(ForecastConfig, args.items, args.run_dir)
    cfg.validate(source)
    result = backtest(cfg, args.run_dir, args.folds, args.step, report=print, jobs=args.jobs)
    scores = " ".join(
        f"{m} {'n/a' if v is None else f'{v:.4f}'}"
        for m, v in result["mean"].items()
        if m != "rho_risk"
    )
    print(f"backtest mean over {len(result['folds'])} folds: test {scores}")
    folder = Path(args.run_dir)
    print(f"wrote {folder / runs.BACKTEST} and {folder / runs.BACKTEST_PLOT}")
    return 0


def run_test(args: argparse.Namespace) -> int:
    model = Forecaster(args.run_dir)
    for line in model.report(model.test(args.csv, tuple(args.drop_last))):
        print(line)
    return 0


def run_blend(args: argparse.Namespace) -> int:
    record = blend_runs(args.run_dirs, args.out, args.step, tuple(args.drop_last), args.equal)
    for run, model, weight, alone in zip(
        record["runs"], record["models"], record["weights"], record["val_mse_alone"]
    ):
        print(f"{weight:.2f} × {model} ({run}): validation mse alone {alone:.4f}")
    test = record["test"]
    if record["equal"]:
        print("equal weights (--equal): nothing was chosen on validation")
    print(
        f"blend: validation mse {record['val_mse']:.4f}; test mse {test['mse']:.4f} "
        f"mae {test['mae']:.4f} ({test['windows']} windows, horizon {record['horizon']})"
    )
    for batch, scores in test.get("drop_last", {}).items():
        print(
            f"  first {scores['windows']} windows (drop_last, batch {batch}): "
            f"mse {scores['mse']:.4f} mae {scores['mae']:.4f}"
        )
    print(f"wrote {Path(args.out) / runs.BLEND}")
    return 0


def run_calibrate(args: argparse.Namespace) -> int:
    record = calibrate_run(args.run_dir)
    print(describe(record))
    print(f"wrote {record['path']}")
    return 0


def run_predict(args: argparse.Namespace) -> int:
    if args.output:  # before the model is loaded and run
        check_output_file(args.output, "--output")
    model = Forecaster(args.run_dir)
    text = predict_csv(model, args.csv, series=args.series, known=args.known)
    _say_history(args, model)
    if args.output:
        write_text(args.output, text)
    else:
        sys.stdout.write(text)
    return 0


def run_plot(args: argparse.Namespace) -> int:
    model = Forecaster(args.run_dir)
    written = model.figures(
        args.csv, args.output, args.window, args.future, series=args.series, known=args.known
    )
    if args.future:
        _say_history(args, model)
    for path in written:
        print(f"wrote {path}")
    return 0


def _say_history(args: argparse.Namespace, model) -> None:
    """Without --csv the forecast follows the run's own CSV: say so (on stderr, which
    leaves the forecast on stdout alone)."""
    if not args.csv:
        print(
            f"transduce: forecasting after the last row of {model.cfg.csv}, the CSV the run "
            "was trained on (--csv FILE for another)",
            file=sys.stderr,
        )
