"""Can the default model tell whether an offered tool fits a request, by a signal other than
its call mass? For each first-turn case of a split, and each tool it offers, how much more
likely the model finds the tool's name and description after the request than after no
request (pointwise mutual information, per token and summed); the case's score is its best
tool's. Printed: the ranking quality (AUC: a case that needs a call above one that does not)
of each signal, to choose a signal and a threshold on dev:

    python evals/relevance_probe.py evals/cases-dev.jsonl > evals/results/relevance-probe-dev-qwen2.5-coder-0.5b.json

One process, the default model, greedy scoring only (no generation)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
from llama_cpp import Llama

from localagent.backends.llama import RELEVANCE_LEAD, RELEVANCE_NEUTRAL, RELEVANCE_SYSTEM, tool_line
from localagent.evaluation.evaluate import load_cases
from localagent.provision import resolve_model

# The default model's chat template (ChatML), with the scoring prompt the gate uses
# (LlamaBackend.tool_relevance, which scores the sum only).
SYS = RELEVANCE_SYSTEM
HEAD = "<|im_start|>system\n{sys}<|im_end|>\n<|im_start|>user\n{req}<|im_end|>\n<|im_start|>assistant\n" + RELEVANCE_LEAD


def logprob(llm: Llama, prefix: str, tail: str) -> tuple[float, int]:
    """Sum of the log-probabilities of ``tail``'s tokens after ``prefix``, and their count."""
    pre = llm.tokenize(prefix.encode(), add_bos=False, special=True)
    ids = llm.tokenize((prefix + tail).encode(), add_bos=False, special=True)
    n = len(pre)
    while n > 0 and ids[:n] != pre[:n]:
        n -= 1  # the tail's first token may merge with the prefix's last
    llm.reset()
    llm.eval(ids)
    scores = np.asarray(llm.scores[: len(ids)], dtype=np.float64)
    total = 0.0
    for i in range(n, len(ids)):
        row = scores[i - 1]
        total += float(row[ids[i]] - np.logaddexp.reduce(row))
    return total, len(ids) - n


def auc(pos: list[float], neg: list[float]) -> float:
    wins = sum((p > q) + 0.5 * (p == q) for p in pos for q in neg)
    return wins / max(1, len(pos) * len(neg))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cases", type=Path)
    args = ap.parse_args()
    cases = [c for c in load_cases(args.cases) if len(c.messages) == 1 and c.messages[0]["role"] == "user"]
    llm = Llama(model_path=str(resolve_model("qwen2.5-coder-0.5b")), n_ctx=1024, logits_all=True, verbose=False, n_threads=2)
    rows = []
    for c in cases:
        req = c.messages[0]["content"]
        per_tool = []
        for t in c.tools:
            text = tool_line(t)
            lp, n = logprob(llm, HEAD.format(sys=SYS, req=req), text)
            base, _ = logprob(llm, HEAD.format(sys=SYS, req=RELEVANCE_NEUTRAL), text)
            per_tool.append({"tool": text.split(":")[0].strip(), "pmi": lp - base, "pmi_token": (lp - base) / n, "logprob_token": lp / n})
        best = {k: max(p[k] for p in per_tool) for k in ("pmi", "pmi_token", "logprob_token")}
        rows.append({"id": c.id, "category": c.category, "needs_call": bool(c.expected), **best, "tools": per_tool})
        print(c.id, c.category, {k: round(v, 2) for k, v in best.items()}, file=sys.stderr, flush=True)
    out = {"cases": rows, "auc": {}}
    for k in ("pmi", "pmi_token", "logprob_token"):
        out["auc"][k] = auc([r[k] for r in rows if r["needs_call"]], [r[k] for r in rows if not r["needs_call"]])
    print(json.dumps(out, indent=1))
    print({k: round(v, 3) for k, v in out["auc"].items()}, file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
