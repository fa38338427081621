"""The call-or-prose threshold curve of a saved eval run, as one Markdown table.

    localagent eval evals/cases-dev.jsonl --json > dev.json
    python evals/threshold_curve.py dev.json --cases evals/cases-dev.jsonl

For each threshold of 0.05 .. 0.95: the share of no-call cases the model would have
called (first-token call mass at least the threshold) and the share of call cases it
would not have; the row with the smallest sum is marked. Choose on dev, report on test.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from localagent.errors import ConfigError
from localagent.evaluation.evaluate import load_cases, pick_threshold, rescore


def table(curve: list[dict[str, float]]) -> str:
    """The curve as Markdown, the chosen threshold in bold."""
    best = pick_threshold(curve)
    lines = ["| threshold | called when no call was needed | no call when one was needed |", "|---|---|---|"]
    for p in curve:
        t = f"**{p['threshold']:.2f}**" if p["threshold"] == best else f"{p['threshold']:.2f}"
        lines.append(f"| {t} | {p['called_when_not_needed_rate']:.1f} % | {p['no_call_when_needed_rate']:.1f} % |")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("report", type=Path, help="a `localagent eval --json` output")
    ap.add_argument("--cases", type=Path, default=Path(__file__).parent / "cases-dev.jsonl")
    args = ap.parse_args()
    try:
        saved = json.loads(args.report.read_text(encoding="utf-8"))
        curve = rescore(saved, load_cases(args.cases)).curve()
    except (OSError, ValueError, ConfigError) as e:
        print(f"threshold_curve: {e}", file=sys.stderr)
        return 2
    if not curve:
        print(f"threshold_curve: {args.report} records no call masses (constrained mode, tool choice auto, the llama backend)", file=sys.stderr)
        return 2
    print(table(curve))
    return 0


if __name__ == "__main__":
    sys.exit(main())
