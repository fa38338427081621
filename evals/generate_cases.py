"""The dev and test splits of the tool-call suite, generated from templates.

    python evals/generate_cases.py          # writes evals/cases-{dev,test,test2,test3,test4}.jsonl
    python evals/generate_cases.py --check  # exit 1 when either file is not what would be written

Pure and seeded. Each family of ``case_families.py`` draws values and says which
calls they imply; its wordings are in ``wordings.toml``, one set for dev and a
different one for test, and each split draws from its own seed, so no question is
in both. Tools are those of the hand-written suite (``cases.jsonl``), by name.
Choose thresholds on dev; report figures on test only.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import tomllib
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))  # case_families sits beside this script
from case_families import FAMILIES, Draft, Family  # noqa: E402

HERE = Path(__file__).parent
# split -> seed; test2's, test3's and test4's wordings were written blind (by a helper that read
# neither the code nor any result), each after the split before it had been run: each reports
# what was chosen after the run before it. test10's, test11's and test12's wordings were written
# blind too (each by a helper that read only evals/wordings.toml).
SPLITS = {"dev": 2301, "test": 2302, "test2": 2303, "test3": 2304, "test4": 2305, "test5": 2306, "test6": 2307, "test7": 2308, "test8": 2309, "test9": 2310, "test10": 2311, "test11": 2312, "test12": 2313}
# Cases per category in each split; several-calls and no-call are the kinds issue 23 measures.
COUNTS = {"one_tool": 24, "choose_tool": 21, "multiple_calls": 45, "no_tool": 44, "nested_args": 20, "enums": 20, "number_words": 20}
TRIES = 200  # draws of one case before a family is judged unable to give a new question


def tool_defs() -> dict[str, dict[str, Any]]:
    """The tools of the hand-written suite by name (the first definition of each)."""
    out: dict[str, dict[str, Any]] = {}
    for line in (HERE / "cases.jsonl").read_text(encoding="utf-8").splitlines():
        for t in json.loads(line)["tools"] if line.strip() else []:
            out.setdefault(t["function"]["name"], t)
    return out


def load_wordings() -> dict[str, dict[str, list[str]]]:
    """Each family's wordings per split, from ``wordings.toml``."""
    return tomllib.loads((HERE / "wordings.toml").read_text(encoding="utf-8"))


def generate(split: str) -> list[dict[str, Any]]:
    """Every case of ``split`` (dev, test or a later test split), in a fixed order: categories as in ``COUNTS``,
    their families in turn, each family's wordings in turn."""
    rng = random.Random(SPLITS[split])
    tools, wordings = tool_defs(), load_wordings()
    cases: list[dict[str, Any]] = []
    seen: set[str] = set()
    for category, count in COUNTS.items():
        fams = [f for f in FAMILIES if f.category == category]
        made = {f.name: 0 for f in fams}
        for i in range(count):
            fam = fams[i % len(fams)]
            says = wordings[fam.name][split]
            made[fam.name] += 1
            d, text = _draw(fam, says[(i // len(fams)) % len(says)], rng, seen)
            case: dict[str, Any] = {
                "id": f"{split}-{fam.name}-{made[fam.name]:02d}",
                "category": category,
                "messages": [{"role": "user", "content": text}, *d.after],
                "tools": [tools[t] for t in fam.tools],
                "expected": d.expected,
            }
            if d.answer:
                case["expected_answer"] = d.answer
            cases.append(case)
    return cases


def _draw(fam: Family, wording: str, rng: random.Random, seen: set[str]) -> tuple[Draft, str]:
    """One case of ``fam`` worded so, whose question is not in ``seen`` (then added to it)."""
    for _ in range(TRIES):
        d = fam.draw(rng)
        text = wording.format(**d.slots)
        if missed := [a for a in d.answer if not re.search(a, d.example)]:
            raise SystemExit(f"family '{fam.name}': its example answer {d.example!r} misses {missed[0]!r}")
        if text not in seen:
            seen.add(text)
            return d, text
    raise SystemExit(f"family '{fam.name}' gives no new question after {TRIES} draws of {wording!r}: widen its values")


def render(cases: list[dict[str, Any]]) -> str:
    """The JSONL text of ``cases``, as written to disk."""
    return "".join(json.dumps(c, ensure_ascii=False) + "\n" for c in cases)


def path(split: str) -> Path:
    """Where ``split`` is written."""
    return HERE / f"cases-{split}.jsonl"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 when a file differs from what would be written")
    args = ap.parse_args(argv)
    stale = []
    for split in SPLITS:
        text = render(generate(split))
        if args.check:
            if not path(split).exists() or path(split).read_text(encoding="utf-8") != text:
                stale.append(str(path(split)))
        else:
            path(split).write_text(text, encoding="utf-8")
            print(f"{path(split)}: {text.count(chr(10))} cases")
    if stale:
        print(f"not what the generator writes: {', '.join(stale)}; run python evals/generate_cases.py", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
