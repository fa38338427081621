"""The Berkeley Function Calling Leaderboard's cases, run by `localagent eval`, scored by BFCL's own checker.

Public cases the project has not tuned to: single calls (simple_python), one call among
several functions (multiple), several calls of one function (parallel) and of several
functions (parallel_multiple) in one turn, and requests no offered function fits
(irrelevance). BFCL's data and checker come from its package on the index; it is not a
dependency of localagent (it pins numpy and pulls dozens of API clients), so fetch the
wheel and unpack it:

    pip download --no-deps bfcl-eval==2026.3.23 -d /tmp/bfcl && unzip -q /tmp/bfcl/bfcl_eval-*.whl -d /tmp/bfcl/whl
    python evals/bfcl.py cases /tmp/bfcl/whl --split dev --per-category 25 > /tmp/bfcl-dev.jsonl
    localagent eval /tmp/bfcl-dev.jsonl --json > /tmp/bfcl-dev.json
    python evals/bfcl.py score /tmp/bfcl/whl /tmp/bfcl-dev.json          # a Markdown row a report

The two splits are disjoint samples of each category (seed 0: the first half of a
shuffled order is dev, the second test). Function names with dots become underscores
(as BFCL does for OpenAI-style APIs) and are mapped back before scoring; BFCL's types
become JSON Schema (dict: object, float: number, tuple: array, any: no type).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import types
from collections import Counter
from pathlib import Path
from typing import Any

CATEGORIES = ("simple_python", "multiple", "parallel", "parallel_multiple", "irrelevance")
_TYPES = {"dict": "object", "float": "number", "tuple": "array", "any": None}


def schema(p: Any) -> Any:
    """A BFCL parameter description as JSON Schema."""
    if isinstance(p, list):
        return [schema(x) for x in p]
    if not isinstance(p, dict):
        return p
    out = {k: schema(v) for k, v in p.items() if k != "type" and k != "optional"}
    t = p.get("type")
    if isinstance(t, str):
        t = _TYPES.get(t, t)
        if t:
            out["type"] = t
    if out.get("type") == "object" and "properties" not in out:
        out.setdefault("additionalProperties", True)
    return out


def tool(f: dict[str, Any]) -> dict[str, Any]:
    return {"type": "function", "function": {
        "name": f["name"].replace(".", "_"), "description": f.get("description", ""),
        "parameters": schema(f["parameters"]),
    }}


def load(root: Path, category: str) -> list[tuple[dict[str, Any], dict[str, Any] | None]]:
    data = root / "bfcl_eval" / "data"
    rows = [json.loads(line) for line in (data / f"BFCL_v4_{category}.json").read_text().splitlines() if line.strip()]
    answers_file = data / "possible_answer" / f"BFCL_v4_{category}.json"
    answers = {}
    if answers_file.exists():
        answers = {a["id"]: a for a in map(json.loads, answers_file.read_text().splitlines()) if a}
    return [(r, answers.get(r["id"])) for r in rows]


def pick(rows: list[Any], split: str, n: int) -> list[Any]:
    order = list(range(len(rows)))
    random.Random(0).shuffle(order)
    half = len(order) // 2
    chosen = order[:half] if split == "dev" else order[half:]
    return [rows[i] for i in sorted(chosen[:n])]


def cases(root: Path, split: str, n: int) -> list[dict[str, Any]]:
    out = []
    for category in CATEGORIES:
        for row, _ in pick(load(root, category), split, n):
            out.append({
                "id": f"bfcl-{row['id']}", "category": category,
                "messages": [{"role": m["role"], "content": m["content"]} for m in row["question"][0]],
                "tools": [tool(f) for f in row["function"]], "expected": [],
            })
    return out


def checker(root: Path) -> Any:
    """BFCL's AST checker, imported without the model registry it does not need to check a call."""
    sys.path.insert(0, str(root))
    stub = types.ModuleType("bfcl_eval.constants.model_config")
    stub.MODEL_CONFIG_MAPPING = {"localagent": types.SimpleNamespace(underscore_to_dot=False)}  # type: ignore[attr-defined]
    sys.modules["bfcl_eval.constants.model_config"] = stub
    from bfcl_eval.constants.enums import Language
    from bfcl_eval.eval_checker.ast_eval.ast_checker import ast_checker

    return lambda funcs, output, answer, category: ast_checker(funcs, output, answer, Language.PYTHON, category, "localagent")


def score(root: Path, report: dict[str, Any]) -> dict[str, Any]:
    check = checker(root)
    rows = {f"bfcl-{r['id']}": (r, a, c) for c in CATEGORIES for r, a in load(root, c)}
    right: Counter[str] = Counter()
    total: Counter[str] = Counter()
    errors: Counter[tuple[str, str]] = Counter()
    for res in report["results"]:
        row, answer, category = rows[res["id"]]
        names = {f["name"].replace(".", "_"): f["name"] for f in row["function"]}
        output = [{names.get(c["name"], c["name"]): c["arguments"]} for c in res["calls"]]
        if category == "irrelevance":
            ok, why = not output, "called" if output else ""
        elif not output:
            ok, why = False, "no call"
        else:
            verdict = check(row["function"], output, answer["ground_truth"], category)
            ok, why = verdict["valid"], verdict.get("error_type", "")
        total[category] += 1
        right[category] += ok
        if not ok:
            errors[(category, why.split(":")[-1])] += 1
    return {
        "accuracy": {c: round(100 * right[c] / total[c], 1) for c in CATEGORIES if total[c]},
        "right": dict(right), "total": dict(total),
        "errors": {f"{c}: {e}": n for (c, e), n in errors.most_common()},
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="what", required=True)
    c = sub.add_parser("cases", help="write the split's cases, one JSON line each")
    c.add_argument("bfcl", type=Path, help="the unpacked bfcl-eval wheel")
    c.add_argument("--split", choices=("dev", "test"), default="dev")
    c.add_argument("--per-category", type=int, default=25)
    s = sub.add_parser("score", help="score `localagent eval --json` reports with BFCL's checker, a Markdown row each")
    s.add_argument("bfcl", type=Path)
    s.add_argument("reports", type=Path, nargs="+")
    s.add_argument("--json", action="store_true", help="the scores and each error class, as JSON")
    args = ap.parse_args()
    try:
        if args.what == "cases":
            for case in cases(args.bfcl, args.split, args.per_category):
                print(json.dumps(case))
            return 0
        scores = {str(r): score(args.bfcl, json.loads(r.read_text())) for r in args.reports}
        if args.json:
            print(json.dumps(scores, indent=1))
            return 0
        print("| report | " + " | ".join(CATEGORIES) + " |\n|---|" + "---|" * len(CATEGORIES))
        for name, sc in scores.items():
            cells = [f"{sc['accuracy'][c]:.1f} % ({sc['right'].get(c, 0)}/{sc['total'][c]})" if c in sc["total"] else "" for c in CATEGORIES]
            print(f"| {Path(name).name} | " + " | ".join(cells) + " |")
    except (OSError, ValueError, KeyError, ImportError) as e:
        print(f"bfcl: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
