"""The validity and call-or-prose figures of saved eval runs, judged again from the text
of every reply by the current scorer (localagent.evaluation.evaluate.rescore), as one Markdown table.

    python evals/validity.py evals/results/qwen2.5-coder-0.5b.constrained.json ...

Each column is one saved `localagent eval ... --json` report; the README's table of
validity with the constraint on and off is this script's output.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from localagent.evaluation.evaluate import load_cases, rescore

ROWS = [
    ("cases", lambda d: f"{d['cases']}"),
    ("calls tried (in the envelope or not)", lambda d: f"{d['call_attempts']}"),
    ("of those, calls the agent would run that fit their schema", lambda d: f"{d['valid_calls']} (**{d['valid_call_rate']:.1f} %**)"),
    ("call-shaped JSON objects, read leniently, that fit their schema", lambda d: f"{d['lenient_valid_calls']} of {d['lenient_calls']}"),
    ("replies cut by the token limit", lambda d: f"{sum(r['finish_reason'] == 'length' for r in d['results'])}"),
    ("a call when one was needed", lambda d: _rate(d["decision"], "called_when_needed", "call_needed")),
    ("no call when none was needed", lambda d: _rate(d["decision"], "no_call_when_not_needed", "no_call_needed")),
    ("accuracy (right tool, right arguments)", lambda d: f"{d['accuracy']:.1f} %"),
]


def _rate(dec: dict[str, int], part: str, whole: str) -> str:
    return f"{dec[part]} of {dec[whole]} ({100 * dec[part] / dec[whole]:.1f} %)" if dec[whole] else "-"


def _label(d: dict[str, object], path: Path) -> str:
    model = str(d.get("model", path.stem)).split("-instruct")[0].split("-Instruct")[0]
    how = "constraint off" if d.get("mode") == "free" else "constraint on"
    if d.get("tool_choice") == "required":
        how += ", call required"
    return f"{model}, {how}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("reports", nargs="+", type=Path)
    ap.add_argument("--cases", type=Path, default=Path(__file__).parent / "cases.jsonl")
    args = ap.parse_args()
    cases = load_cases(args.cases)
    cols = []
    for path in args.reports:
        saved = json.loads(path.read_text(encoding="utf-8"))
        cols.append((_label(saved, path), rescore(saved, cases).to_dict()))
    print("| | " + " | ".join(label for label, _ in cols) + " |")
    print("|---" * (len(cols) + 1) + "|")
    for name, cell in ROWS:
        print(f"| {name} | " + " | ".join(cell(d) for _, d in cols) + " |")


if __name__ == "__main__":
    main()
