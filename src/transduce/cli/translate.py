"""`transduce translate RUN_DIR|CHECKPOINT [--beam 5] [--lenpen 0.6] [--nbest K]`."""

from __future__ import annotations

import argparse
import os
import stat
import sys

import torch

from transduce.api.loading import load
from transduce.data.text import lines_of, read_lines
from transduce.decoding.defaults import lenpen_ok, resolve, search_options
from transduce.decoding.translator import MAX_BEAM, MAX_TOKENS
from transduce.device import DECODING_PRECISIONS
from transduce.errors import UserError
from transduce.export.ctranslate2 import CTranslate2Translator, keeps_its_quantization
from transduce.io import check_output_file, write_text
from transduce.logs import progress


def add_parser(commands: argparse._SubParsersAction, summary: str) -> None:
    parser = commands.add_parser(
        "translate",
        help=summary,
        description="Translate one sentence per line. Exactly one output line per input line, "
        "in order; an empty line gives an empty line. With --nbest K > 1 each input"
        " gives K lines 'INDEX ||| TRANSLATION ||| SCORE'.",
    )
    parser.add_argument(
        "model",
        metavar="RUN_DIR|CHECKPOINT",
        help="a run directory (its averaged, else best, else newest checkpoint)"
        ", a checkpoint file, or an ensemble directory (transduce tune "
        "RUN RUN … --output); with --engine ctranslate2, the directory "
        "`transduce export` wrote",
    )
    parser.add_argument(
        "--engine",
        default="transduce",
        choices=["transduce", "ctranslate2"],
        help="our PyTorch search (default) or an exported CTranslate2 model",
    )
    parser.add_argument("--threads", type=int, default=0, help="CPU threads (default: all cores)")
    parser.add_argument("--input", help="input file (default: standard input)")
    parser.add_argument("--output", help="output file (default: standard output)")
    parser.add_argument(
        "--beam",
        type=int,
        help="beam size; 1 is greedy (default: the run's decoding.json, which "
        "transduce tune writes, else 5)",
    )
    parser.add_argument(
        "--lenpen",
        type=float,
        help="length penalty α of Wu et al. 2016 (default: the run's decoding.json, else 0.6)",
    )
    parser.add_argument(
        "--lenpen-style",
        choices=["wu", "power"],
        help="score / ((5 + length) / 6)^α as the paper (wu, default for our "
        "engine) or / length^α (power, CTranslate2's only one)",
    )
    parser.add_argument("--nbest", type=int, default=1, help="hypotheses per input (default 1)")
    parser.add_argument(
        "--no-repeat-ngram",
        type=int,
        metavar="N",
        help="forbid any N-gram of subwords twice in an output, against "
        "outputs that loop (default: the run's decoding.json, else 0: "
        "off)",
    )
    parser.add_argument(
        "--early-exit",
        action="store_true",
        help="end a sentence's beam search at the first step whose best candidate ends it: "
        "faster, but a longer hypothesis the length penalty would prefer may be given up",
    )
    parser.add_argument(
        "--max-tokens",
        type=int,
        help=f"source tokens × beam per batch (default {MAX_TOKENS}; CTranslate2's: 6000)",
    )
    parser.add_argument(
        "--device",
        default="auto",
        help="auto (CUDA, then Apple MPS, then CPU), cpu, mps, cuda or cuda:N",
    )
    parser.add_argument(
        "--precision",
        default="auto",
        choices=list(DECODING_PRECISIONS),
        help="autocast type (default: bf16 where the hardware is fast at it), or int8: "
        "the linear layers' weights in int8, on a CPU",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    check_arguments(args)
    streaming = not args.input and not _is_file(sys.stdin)  # a terminal or a pipe
    lines = None if streaming else _read_input(args.input)  # checked before the model loads
    if args.engine == "ctranslate2":
        translator = CTranslate2Translator(
            model_dir=args.model, device=args.device, threads=args.threads
        )
    else:
        if args.threads:
            torch.set_num_threads(args.threads)
        translator = load(args.model, args.device, args.precision)
    if not hasattr(translator, "search"):
        raise UserError(f"{args.model}: holds no translation model; use transduce forecast")
    style = args.lenpen_style or ("power" if args.engine == "ctranslate2" else "wu")
    d = resolve(translator.decoding, args.beam, args.lenpen, args.no_repeat_ngram)
    if args.nbest > d.beam:
        raise UserError(f"--nbest {args.nbest} exceeds the beam size {d.beam}; give --beam")
    print(f"transduce: decoding with {d.describe()}", file=sys.stderr)

    def translate(lines: list[str], bar=None) -> list:
        extra = search_options(d.no_repeat_ngram, args.early_exit)
        if args.max_tokens is not None:  # else each engine's own default
            extra["max_tokens"] = args.max_tokens
        return translator.search(
            lines,
            d.beam,
            d.lenpen,
            args.nbest,
            progress=bar,
            lenpen_style=style,
            **extra,
        )

    if lines is None:  # line by line
        if sys.stdin.isatty():
            print(
                "transduce: type a sentence and press Enter to translate it; Ctrl-D ends",
                file=sys.stderr,
            )
        _stream(translate, args.nbest)
        return 0
    with progress(len(lines), "translating", "sent") as bar:
        results = translate(lines, bar)
    text = _format(results, args.nbest)
    if args.output:
        write_text(args.output, text)
    else:
        sys.stdout.write(text)
    return 0


def _format(results: list, nbest: int, first: int = 0) -> str:
    if nbest == 1:
        return "".join(hyps[0][0] + "\n" for hyps in results)
    return "".join(
        f"{i} ||| {t} ||| {s:.4f}\n" for i, hyps in enumerate(results, first) for t, s in hyps
    )


def _is_file(stream) -> bool:
    try:
        return stat.S_ISREG(os.fstat(stream.fileno()).st_mode)
    except (OSError, ValueError):
        return False


def _stream(translate, nbest: int) -> None:
    """Translate standard input as it arrives: whatever complete lines one read returns
    are translated together and written (and flushed) at once, so a terminal gets each
    line's translation when it is typed and a fast pipe still gets batches."""
    fd, pending, done = sys.stdin.fileno(), b"", 0
    while True:
        chunk = os.read(fd, 1 << 16)
        if chunk:
            pending += chunk
            *complete, pending = pending.split(b"\n")
        else:  # end of input: a last line without its newline still counts
            complete, pending = ([pending] if pending else []), b""
        if complete:
            lines = []
            for number, raw in enumerate(complete, done + 1):
                try:
                    lines.append(raw.rstrip(b"\r").decode("utf-8"))
                except UnicodeDecodeError as error:
                    raise UserError(
                        f"<stdin>:{number}: invalid UTF-8 ({error.reason}); send UTF-8 text"
                    ) from None
            sys.stdout.write(_format(translate(lines), nbest, done))
            sys.stdout.flush()
            done += len(lines)
        if not chunk:
            return


def check_arguments(args: argparse.Namespace) -> None:
    """Refuse what no translation can use before loading or translating anything."""
    if (
        (args.beam is not None and not 1 <= args.beam <= MAX_BEAM)
        or args.nbest < 1
        or (args.beam is not None and args.nbest > args.beam)
    ):
        raise UserError(f"--beam must be 1 to {MAX_BEAM} and --nbest between 1 and --beam")
    if args.threads < 0:
        raise UserError(f"--threads must be 0 (all cores) or more, not {args.threads}")
    if args.no_repeat_ngram is not None and args.no_repeat_ngram < 0:
        raise UserError(f"--no-repeat-ngram must be 0 (off) or more, not {args.no_repeat_ngram}")
    if args.max_tokens is not None and args.max_tokens < 1:
        raise UserError(f"--max-tokens must be at least 1, not {args.max_tokens}")
    if args.lenpen is not None and not lenpen_ok(args.lenpen):
        raise UserError(f"--lenpen must be a number of at least 0 such as 0.6, not {args.lenpen}")
    if args.engine == "ctranslate2":
        keeps_its_quantization(args.precision, "--precision")
    if args.engine == "ctranslate2" and args.early_exit:
        raise UserError("--early-exit is for our engine; CTranslate2 ends its search its own way")
    if args.output:
        check_output_file(args.output, "--output")


def _read_input(path: str | None) -> list[str]:
    if path:
        return read_lines(path)
    return lines_of(sys.stdin.buffer.read(), "<stdin>")  # a file given as stdin
