"""The call-or-prose threshold curve of a saved eval run, as one Markdown table.

    localagent eval evals/cases-dev.jsonl --json > dev.json
    python evals/threshold_curve.py dev.json --cases evals/cases-dev.jsonl

For each threshold of 0.05 .. 0.95: the share of no-call cases the model would have
called (first-token call mass at least the threshold) and the share of call cases it
would not have; the row with the smallest sum is marked. One table for all cases, then
one per step: the first turn (the conversation ends with the user's request) and after
a result (it ends with a tool's result), and the first turn split by how well the request
matches the tools (``policy.tool_match``: no content word shared with any tool, or some).
Where the run recorded each first turn's tool fit (``relevance``, the gate of
``AgentConfig.relevance_floor``), the same two errors over a floor on that fit, for the
first turn split the same way: a case calls when its fit is at least the floor (the model
called every first-turn dev case the gate let through). Last, for the ceiling
(``AgentConfig.relevance_ceiling``) over the first turns whose request does not answer
itself (``policy.answers_itself``): the no-call cases at or above each ceiling, and the call
cases the model wrote as prose below it. Choose on dev, report on test.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from localagent.errors import ConfigError
from localagent import policy
from localagent.evaluation.evaluate import Case, load_cases, pick_threshold, rescore, threshold_curve


FLOORS = tuple(float(x) for x in range(-4, 13))  # pointwise mutual information, nats
CEILINGS = tuple(range(6, 14))


def table(curve: list[dict[str, float]], what: str = "threshold") -> str:
    """The curve as Markdown, the chosen threshold in bold."""
    best = pick_threshold(curve)
    lines = [f"| {what} | called when no call was needed | no call when one was needed |", "|---|---|---|"]
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
        cases = load_cases(args.cases)
        curve = rescore(saved, cases).curve()
    except (OSError, ValueError, ConfigError) as e:
        print(f"threshold_curve: {e}", file=sys.stderr)
        return 2
    if not curve:
        print(f"threshold_curve: {args.report} records no call masses (constrained mode, tool choice auto, the llama backend)", file=sys.stderr)
        return 2
    print(table(curve))
    for name, ids in groups(cases).items():
        rs = [r for r in saved["results"] if r.get("call_mass") is not None and r["id"] in ids]
        labels = [ids[r["id"]] for r in rs]
        if len(set(labels)) < 2:
            print(f"\n{name}: {len(rs)} cases, all {'needing' if labels and labels[0] else 'needing no'} call: no curve")
            continue
        print(f"\n{name} ({len(rs)} cases):\n")
        print(table(threshold_curve([r["call_mass"] for r in rs], labels)))
    for name, ids in groups(cases).items():
        rs = [r for r in saved["results"] if r.get("relevance") is not None and r["id"] in ids]
        labels = [ids[r["id"]] for r in rs]
        if name.startswith("first turn, ") and len(set(labels)) == 2:
            print(f"\n{name}, over the floor on the best tool's fit ({len(rs)} cases):\n")
            print(table(threshold_curve([r["relevance"] for r in rs], labels, FLOORS), "fit floor"))
    print("\n" + ceiling_table(saved, cases))
    return 0


def ceiling_table(saved: dict[str, Any], cases: list[Case]) -> str:
    """The ceiling's two errors over ``CEILINGS``, for the first turns whose fit the run
    recorded and whose request does not answer itself."""
    by_id = {c.id: c for c in cases}
    quiet, prose = [], []  # fits: no-call cases; call cases the model wrote as prose
    for r in saved["results"]:
        c = by_id.get(r["id"])
        h = c.history() if c else []
        if c is None or r.get("relevance") is None or not h or h[-1].role != "user":
            continue
        if policy.answers_itself(h[-1].content, c.tools):
            continue
        if not c.expected:
            quiet.append(r["relevance"])
        elif r.get("decision") == "prose":
            prose.append(r["relevance"])
    head = "| ceiling | " + " | ".join(str(t) for t in CEILINGS) + " |"
    lines = [head, "|---" * (len(CEILINGS) + 1) + "|"]
    lines.append(f"| no-call cases at or above it (of {len(quiet)}) | " + " | ".join(str(sum(f >= t for f in quiet)) for t in CEILINGS) + " |")
    lines.append(f"| call cases the model wrote as prose, below it (of {len(prose)}) | " + " | ".join(str(sum(f < t for f in prose)) for t in CEILINGS) + " |")
    return "\n".join(lines)


def groups(cases: list[Case]) -> dict[str, dict[str, bool]]:
    """Case id -> a call is expected, for each step and match of the request to the tools."""
    out: dict[str, dict[str, bool]] = {k: {} for k in ("first turn", "after a result", "first turn, no word shared with a tool", "first turn, a word shared")}
    for c in cases:
        h = c.history()
        if h and h[-1].role == "tool":
            out["after a result"][c.id] = bool(c.expected)
            continue
        out["first turn"][c.id] = bool(c.expected)
        request = next((m.content for m in reversed(h) if m.role == "user"), "")
        shared = policy.tool_match(request, c.tools) > 0
        out["first turn, a word shared" if shared else "first turn, no word shared with a tool"][c.id] = bool(c.expected)
    return out


if __name__ == "__main__":
    sys.exit(main())
