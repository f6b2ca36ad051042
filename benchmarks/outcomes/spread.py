"""The spread of what the training-outcome tests measure, across seeds, thread counts,
precisions and CPU kernels, so that each bound they assert has a measured margin.

    python benchmarks/outcomes/spread.py [--seeds 0 1 2] [--kernels default avx2 avx512]

Runs `pytest -m outcome` (each test in fp32 and bf16) once per seed offset
(TRANSDUCE_TEST_SEED) and kernel (ATEN_CPU_CAPABILITY) with one thread per process (two
pytest-xdist workers), and once with two threads (one process, seed offset 0, the
machine's own kernel).
The tests record what they measure as JUnit XML properties; this script gathers them into
``NAME.json`` and the table ``NAME.md`` beside it (``--name``, one per kind of machine).
About 15 minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))

from tests.helpers.outcomes import key_of  # noqa: E402
from tests.kernels import other_kernels  # noqa: E402


def run_suite(kernel: str, seed: int, threads: int, xml: Path) -> int:
    env = {
        **os.environ,
        "ATEN_CPU_CAPABILITY": kernel,
        "TRANSDUCE_TEST_SEED": str(seed),
        "TRANSDUCE_EMULATED_BF16": "1",  # both precisions on every CPU, emulated or not
        "OMP_NUM_THREADS": str(threads),
    }
    workers = ["-n", "2"] if threads == 1 else ["-n", "0"]
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-m",
            "outcome",
            *workers,
            "-p",
            "no:cacheprovider",
            f"--junitxml={xml}",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
    ).returncode


def properties(xml: Path):
    """(test id without its precision, precision, property, values, passed) per record."""
    for case in ET.parse(xml).getroot().iter("testcase"):
        name = case.get("name")
        match = re.search(r"\[(.*)\]$", name)
        params = match.group(1).split("-") if match else []
        precision = next((p for p in params if p in ("fp32", "bf16")), "")
        test = key_of(case.get("classname"), name)
        passed = case.find("failure") is None and case.find("error") is None
        for prop in case.iter("property"):
            value = ast.literal_eval(prop.get("value"))
            values = value if isinstance(value, list) else [value]
            yield test, precision, prop.get("name"), values, passed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    import torch

    own = torch.backends.cpu.get_cpu_capability().lower()
    parser.add_argument("--kernels", nargs="+", default=other_kernels() + [own])
    parser.add_argument(
        "--name",
        default="spread",
        help="the files written, NAME.json and NAME.md: one per kind of machine "
        "(spread: Sapphire Rapids; spread_zen5: Zen 5); tests/test_bounds.py reads them all",
    )
    args = parser.parse_args()
    combos = [(k, s, 1) for k in args.kernels for s in args.seeds]
    combos += [(args.kernels[-1], args.seeds[0], 2)]  # two threads: the machine's own kernel
    found = defaultdict(list)  # (test, property) -> [(value, precision, kernel, seed, threads)]
    failures = []
    with tempfile.TemporaryDirectory() as scratch:
        for kernel, seed, threads in combos:
            xml = Path(scratch) / f"{kernel}-{seed}-{threads}.xml"
            status = run_suite(kernel, seed, threads, xml)
            print(
                f"kernel {kernel}, seed offset {seed}, {threads} thread(s): pytest exit {status}",
                flush=True,
            )
            for test, precision, name, values, passed in properties(xml):
                found[test, name] += [(v, precision, kernel, seed, threads) for v in values]
                if not passed:
                    failures.append(
                        f"{test} [{precision}] {kernel} seed+{seed} {threads} thread(s)"
                    )
    rows = []
    for (test, name), values in sorted(found.items()):
        numbers = [v for v, *_ in values]
        low, high = min(values), max(values)
        rows.append(
            {
                "test": test,
                "measure": name,
                "n": len(numbers),
                "min": low[0],
                "max": high[0],
                "min_at": low[1:],
                "max_at": high[1:],
            }
        )
    (HERE / f"{args.name}.json").write_text(
        json.dumps({"combos": combos, "rows": rows, "failures": sorted(set(failures))}, indent=1)
        + "\n",
        encoding="utf-8",
    )
    lines = [
        "# The spread of the training-outcome tests' measures",
        "",
        f"`python benchmarks/outcomes/spread.py --name {args.name}` on {machine()}, at "
        f"{commit()}: seed offsets "
        f"{args.seeds} at one thread under the kernels {', '.join(args.kernels)}, and offset "
        f"{args.seeds[0]} at two threads under {args.kernels[-1]}; each in fp32 and bf16. "
        "Where the extreme came from: precision, kernel, seed offset, threads.",
        "",
        "| test | measure | runs | min (where) | max (where) |",
        "|---|---|---:|---|---|",
    ]
    for r in rows:
        where = lambda at: f"{at[0]}, {at[1]}, +{at[2]}, {at[3]}t"  # noqa: E731
        lines.append(
            f"| `{r['test']}` | {r['measure']} | {r['n']} | {r['min']:.4g} "
            f"({where(r['min_at'])}) | {r['max']:.4g} ({where(r['max_at'])}) |"
        )
    lines += [
        "",
        "Failed, under the bounds the tests had when measured (commit "
        f"{commit()}): " + ("; ".join(sorted(set(failures))) or "none") + ".",
    ]
    (HERE / f"{args.name}.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


def commit() -> str:
    return (
        subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, text=True, capture_output=True
        ).stdout.strip()
        or "unknown"
    )


def machine() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return f"{os.cpu_count()} cores of an {line.split(':', 1)[1].strip()}"
    return f"{os.cpu_count()} cores"


if __name__ == "__main__":
    main()
