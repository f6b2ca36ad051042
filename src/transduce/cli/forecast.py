"""`transduce forecast train|test|backtest|...`: Transformers on time series."""

from __future__ import annotations

# size: one module per command, and forecast has seven subcommands (train, test, backtest,
# calibrate, blend, predict, plot), each a parser and a short runner; global runs add two
# branches
import argparse
import sys
from pathlib import Path

import torch

from transduce import runs
from transduce.api.forecaster import Forecaster, predict_csv
from transduce.cli.args import add_run_arguments, config_and_overrides, positive_int
from transduce.cli.settings_help import SettingsHelpFormatter, settings_epilog
from transduce.errors import UserError
from transduce.io import check_output_file, write_text
from transduce.tasks.forecasting.backtesting import run_backtest as backtest
from transduce.tasks.forecasting.blend import blend_runs
from transduce.tasks.forecasting.calibration import describe
from transduce.tasks.forecasting.config import ForecastConfig
from transduce.tasks.forecasting.panel import (
    is_global,
    train_panel,
)
from transduce.tasks.forecasting.rundir import calibrate_run, evaluate_run, load_run
from transduce.tasks.forecasting.task import train_forecaster
from transduce.viz.forecast import plot_channel_attention, plot_cross_attention, plot_forecast


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
    if cfg.layout.name == "long":
        metrics = train_panel(cfg, args.run_dir)
        scaled = (
            "log y less its input's mean log y"
            if cfg.layout.scaling == "log"
            else "scaled by its input's mean absolute value"
        )
        print(f"best validation mae {metrics['best_val_mae']:.4f} (each window {scaled})")
        return 0
    metrics = train_forecaster(cfg, args.run_dir)
    print(f"best validation mse {metrics['best_val_mse']:.4f}")
    return 0


def run_backtest(args: argparse.Namespace) -> int:
    cfg, source = config_and_overrides(ForecastConfig, args.items, args.run_dir)
    cfg.validate(source)
    result = backtest(cfg, args.run_dir, args.folds, args.step, report=print, jobs=args.jobs)
    mean = result["mean"]
    print(
        f"backtest mean over {len(result['folds'])} folds: test mse {mean['mse']:.4f} "
        f"mae {mean['mae']:.4f}"
    )
    folder = Path(args.run_dir)
    print(f"wrote {folder / runs.BACKTEST} and {folder / runs.BACKTEST_PLOT}")
    return 0


def run_test(args: argparse.Namespace) -> int:
    if is_global(args.run_dir):
        _refuse_for_global(args, drop_last=("--drop-last", []))
        _say_m4(Forecaster(args.run_dir).test(args.csv))
        return 0
    if args.csv:
        raise UserError(
            "--csv is for a global run (layout=long); a run of one CSV is scored "
            "on its own test split"
        )
    result = evaluate_run(args.run_dir, tuple(args.drop_last))
    print(
        f"test mse {result['mse']:.4f} mae {result['mae']:.4f} "
        f"({result['windows']} windows, horizon {result['horizon']})"
    )
    if result.get("rho_risk"):
        risks = " ".join(f"R{rho} {r:.4f}" for rho, r in result["rho_risk"].items())
        covered = " ".join(f"{band} {100 * c:.1f}%" for band, c in result["coverage"].items())
        print(
            f"  quantiles{' (calibrated on validation)' if result['calibrated'] else ''}: "
            f"{risks}; coverage {covered}"
        )
    for batch, scores in result.get("drop_last", {}).items():
        print(
            f"  first {scores['windows']} windows (drop_last, batch {batch}): "
            f"mse {scores['mse']:.4f} mae {scores['mae']:.4f}"
        )
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
    model = Forecaster(args.run_dir)  # a GlobalForecaster for a global run
    if model.cfg.layout.name == "wide":  # a global run's history is the table it names
        _say_history(args, model)
    text = predict_csv(model, args.csv, series=args.series, known=args.known)
    if args.output:
        write_text(args.output, text)
    else:
        sys.stdout.write(text)
    return 0


def run_plot(args: argparse.Namespace) -> int:
    if is_global(args.run_dir):
        _refuse_for_global(args, window=("--window", None), future=("--future", False))
        model = Forecaster(args.run_dir)
        print(f"wrote {model.plot(args.csv, args.output, series=args.series, known=args.known)}")
        return 0
    args.window = args.window or 0
    if args.known:
        raise UserError("--known is for a global run (layout=long)")
    if args.csv and not args.future:
        raise UserError(
            "--csv goes with --future: give both to plot the forecast after a "
            "file's last row (a test window is plotted from the run's own CSV)"
        )
    if args.future:
        return _plot_future(args)
    cfg, model, data = load_run(args.run_dir)
    windows = data.windows["test"]
    if not 0 <= args.window < len(windows):
        raise UserError(f"--window must be between 0 and {len(windows) - 1}")
    x, y, x_time, y_time = (t.unsqueeze(0) for t in windows[args.window])
    # the layouts with a figure (a patch model's maps are shown by explain and the API)
    layout = cfg.model.attention()
    attends = layout in ("steps", "channels")
    with torch.no_grad():
        forecast, weights = model(x, x_time, y_time, need_weights=attends)
    inverse = data.target_scaler.inverse
    out = Path(args.output or runs.forecast_plot(args.run_dir, args.window))
    title = (
        f"{Path(cfg.csv).name} · {getattr(model, 'label', cfg.model.name)} · test window "
        f"{args.window}"
    )
    first = data.windows["test"].start + args.window
    dates = data.series.dates[first : first + cfg.input_length + cfg.horizon]
    outputs = forecast[0].numpy()  # (H, C, 1 + Q)
    bands = inverse(outputs[..., 1:].transpose(2, 0, 1)).transpose(1, 2, 0)  # (H, C, Q)
    history = x[0, :, : data.targets or None].numpy()  # the forecast columns' history
    plot_forecast(
        inverse(history),
        inverse(y[0].numpy()),
        inverse(outputs[..., 0]),
        data.target_columns,
        out,
        title,
        bands if cfg.quantiles else None,
        cfg.quantiles,
        dates,
    )
    print(f"wrote {out}")
    if weights is not None:
        heatmap = out.with_name(out.stem + "_attention.png")
        if layout == "channels":
            plot_channel_attention(
                weights[0].mean(0).numpy(),
                list(data.series.columns),
                heatmap,
                title,
                heads=weights.shape[1],
                targets=data.targets or None,
            )
        else:
            plot_cross_attention(
                weights[0].mean(0).numpy(),
                cfg.model.label_length,
                heatmap,
                title,
                heads=weights.shape[1],
                dates=dates,
            )
        print(f"wrote {heatmap}")
    return 0


def _refuse_for_global(args: argparse.Namespace, **options: tuple[str, object]) -> None:
    """A one-line error naming the first of ``options`` (attribute: (option, its default))
    given for a global run, which has no use for it (it would be ignored)."""
    for attribute, (option, default) in options.items():
        if getattr(args, attribute) != default:
            raise UserError(
                f"{option} is for a run of one CSV; a global run (layout=long) "
                "forecasts each series after its last row: name one with --series ID"
            )


def _plot_future(args: argparse.Namespace) -> int:
    out = Path(args.output or runs.forecast_plot(args.run_dir, "future"))
    check_output_file(out, "--output")
    model = Forecaster(args.run_dir)
    _say_history(args, model)
    print(f"wrote {model.plot(args.csv, out)}")
    return 0


def _say_m4(result: dict) -> None:
    """A global run's M4 scores; "n/a" where one is undefined (see evaluation.m4.score)."""

    def shown(value, digits: int = 3) -> str:
        return "n/a" if value is None else f"{value:.{digits}f}"

    print(
        f"{result['series']} series, horizon {result['horizon']}: sMAPE "
        f"{shown(result['smape'])} MASE {shown(result['mase'])} OWA {shown(result['owa'])} "
        f"(Naive2: sMAPE {shown(result['naive2_smape'])} MASE "
        f"{shown(result['naive2_mase'])}; seasonality {result['season']})"
    )
    if result["mase_series"] < result["series"]:
        print(
            f"  MASE over {result['mase_series']} of {result['series']} series: the others' "
            "histories repeat exactly (constant), so no error can be scaled by them"
        )
    if result["rho_risk"]:
        print("  " + " ".join(f"R{rho} {shown(r, 4)}" for rho, r in result["rho_risk"].items()))


def _say_history(args: argparse.Namespace, model) -> None:
    """Without --csv the forecast follows the run's own CSV: say so (on stderr, which
    leaves the forecast on stdout alone)."""
    if not args.csv:
        print(
            f"transduce: forecasting after the last row of {model.cfg.csv}, the CSV the run "
            "was trained on (--csv FILE for another)",
            file=sys.stderr,
        )
