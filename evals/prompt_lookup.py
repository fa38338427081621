"""Prompt-lookup decoding on answers that quote a tool result: tokens per second with and
without, greedy, the same output, side by side in one run.

Each case is the answer step of ``run`` after a tool result: the system turn and the user
turn the loop writes the answer from (``policy.answer_prompt``: the task and the evidence,
no tool list), under the constraint with tool choice none (prose) as the loop asks it, and
free. The prompt goes into the KV cache first, then the answer is generated with prompt
lookup off and on, interleaved ``--repeats`` times. Medians per case; the ratio
is tokens/s with lookup over tokens/s without, all cases' tokens and seconds summed. The
seconds are a whole step's (the prompt is cached: one token of it is evaluated).

    flock /tmp/model.lock python evals/prompt_lookup.py --model qwen2.5-coder-0.5b --json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from dataclasses import replace
from typing import Any, Callable

import numpy as np
from llama_cpp.llama_speculative import LlamaPromptLookupDecoding

from localagent.assemble import default_config
from localagent.backends import llama, load_llama
from localagent.backends.base import GenerateOptions
from localagent.constraint.grammar import ToolChoice, build_constraint
from localagent.decoding import decoding_options, first_token_threshold
from localagent.evaluation.bench import _setup
from localagent.formats import render_call
from localagent.messages import Message, ToolCall
from localagent import policy

CONFIG_TOML = """[server]
host = "0.0.0.0"
port = 8443
workers = 4

[database]
url = "postgres://app:secret@db.internal:5432/orders"
pool_size = 12
"""
MAIN_PY = """def load_orders(path: str) -> list[dict]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]
"""
SEARCH = """src/orders.py:14: # TODO: retry when the database is busy
src/api/routes.py:88: # TODO: paginate /orders
tests/test_orders.py:3: # TODO: cover the empty file
"""
LISTING = "src/\n  api/\n  orders.py\n  models.py\n  settings.py\ntests/\n  test_orders.py\nREADME.md\npyproject.toml\n"
# (task, tool, arguments, result)
CASES = [
    ("What is the launch code in notes.txt?", "read_file", {"path": "notes.txt"}, "The launch code is PURPLE-42.\n"),
    ("What is the database url in config.toml? Quote it.", "read_file", {"path": "config.toml"}, CONFIG_TOML),
    ("Show me the load_orders function in src/orders.py.", "read_file", {"path": "src/orders.py"}, MAIN_PY),
    ("Which files have a TODO? Give each file, line and comment.", "search", {"query": "TODO"}, SEARCH),
    ("List the Python files in this project.", "list_dir", {"path": "."}, LISTING),
]


def history(system: str, task: str, tool: str, args: dict[str, Any], result: str) -> list[Message]:
    """The answer step's prompt after one call and its result."""
    call = ToolCall("c0", tool, args)
    done = [
        Message("system", system),
        Message("user", task),
        Message("assistant", "", tool_calls=[call], raw=render_call(tool, args)),
        Message("tool", result, tool_call_id="c0", name=tool),
    ]
    return [done[0], Message("user", policy.answer_prompt(task, done))]


def latest_lookup(ids: np.ndarray, *, min_ngram: int = 2, max_ngram: int = 3, n: int = 8) -> np.ndarray:
    """A stricter prompt lookup (measured beside llama-cpp-python's):
    the ``n`` tokens that followed the latest earlier occurrence of the context's last
    ``max_ngram`` .. ``min_ngram`` tokens; no draft on a single-token match."""
    size = len(ids)
    for k in range(min(max_ngram, size - 1), min_ngram - 1, -1):
        windows = np.lib.stride_tricks.sliding_window_view(ids[:-1], k)  # the suffix itself left out
        hits = np.nonzero((windows == ids[-k:]).all(axis=1))[0]
        if hits.size:
            start = int(hits[-1]) + k
            return ids[start : start + n]
    return ids[:0]


# The drafters compared: llama-cpp-python's prompt lookup as shipped (the last 2 tokens, else
# the last 1, matched at their first occurrence; 10 drafted), and a stricter one (3 or 2
# tokens matched at their latest occurrence; 8 drafted; no draft on a 1-token match).
DRAFTERS: dict[str, Callable[[], Any]] = {
    "shipped": lambda: LlamaPromptLookupDecoding(max_ngram_size=2, num_pred_tokens=10),
    "latest": lambda: latest_lookup,
}


def measure(b: Any, s: Any, msgs: list[Message], constrained: bool, repeats: int, max_tokens: int) -> dict[str, Any]:
    """Lookup off and each drafter, interleaved: seconds, tokens, texts and what was kept."""
    config = default_config(constrained=constrained, max_tokens=max_tokens)
    choice = ToolChoice("none")
    c = build_constraint(s.schemas, choice, parallel=False) if constrained else None
    threshold = first_token_threshold(config, choice) if c else None
    runs: dict[str, list[Any]] = {"off": [], **{k: [] for k in DRAFTERS}}
    b.generate(msgs, [], GenerateOptions(max_tokens=1))  # the prompt into the KV cache
    for _ in range(repeats):
        for variant in runs:
            if variant != "off":
                llama.make_drafter = DRAFTERS[variant]
            opts = decoding_options(replace(config, prompt_lookup=variant != "off"), c, threshold=threshold, choice=choice)
            runs[variant].append(b.generate(msgs, [], opts))
    off = runs["off"]
    out: dict[str, Any] = {"tokens": off[0].completion_tokens, "text": off[0].text[:160]}
    for variant, gens in runs.items():
        out[f"seconds_{variant}"] = [round(g.seconds, 3) for g in gens]
        out[f"identical_{variant}"] = all(g.text == off[0].text for g in gens)
        out[f"lookup_{variant}"] = gens[0].details.to_json()
    out["differing"] = sorted({g.text for gens in runs.values() for g in gens} - {off[0].text})[:2]
    return out


def batch_cost(b: Any, msgs: list[Message], sizes: tuple[int, ...] = (1, 3, 9), repeats: int = 5) -> dict[str, float]:
    """ms to evaluate a batch of k tokens with logits for each (as a draft is checked) after the
    cached prompt, k interleaved ``repeats`` times, medians: what one draft costs."""
    import time

    b.generate(msgs, [], GenerateOptions(max_tokens=1))
    base = b.llm.n_tokens
    filler = b.tokenize(" the launch code is PURPLE-42 in notes.txt")
    times: dict[int, list[float]] = {k: [] for k in sizes}
    for _ in range(repeats):
        for k in sizes:
            b.llm.n_tokens = base
            t0 = time.perf_counter()
            b._eval_rows(filler[:k])
            times[k].append(1000 * (time.perf_counter() - t0))
    b.llm.n_tokens = base
    return {f"batch_{k}_ms": round(statistics.median(v), 1) for k, v in times.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=None)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--max-tokens", type=int, default=96)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--mode", action="append", choices=["constrained", "free"], help="default: both")
    ap.add_argument("--batch-cost-only", action="store_true", help="only the cost of a draft's batch")
    a = ap.parse_args()
    b = load_llama(a.model, n_ctx=4096)
    s = _setup(b)
    out: dict[str, Any] = {"model": b.name, "repeats": a.repeats, "cases": []}
    variants = ["off", *DRAFTERS]
    modes = a.mode or ["constrained", "free"]
    totals = {m: {v: 0.0 for v in variants} | {"tokens": 0} for m in modes}
    out["batch_cost"] = batch_cost(b, history(s.system, *CASES[3]))
    for task, tool, args, result in [] if a.batch_cost_only else CASES:
        msgs = history(s.system, task, tool, args, result)
        for mode in modes:
            r = measure(b, s, msgs, mode == "constrained", a.repeats, a.max_tokens)
            r.update(task=task, mode=mode)
            out["cases"].append(r)
            t = totals[mode]
            for v in variants:
                t[v] += statistics.median(r[f"seconds_{v}"])
            t["tokens"] += r["tokens"]
            print(json.dumps(r, ensure_ascii=False), file=sys.stderr)
    for mode, t in totals.items() if not a.batch_cost_only else []:
        out[mode] = {"tokens": t["tokens"]}
        for v in variants:
            out[mode][f"tokens_per_s_{v}"] = round(t["tokens"] / t[v], 2)
            out[mode][f"speedup_{v}"] = round(t["off"] / t[v], 3)
    for v in DRAFTERS:
        out[f"all_identical_{v}"] = all(c[f"identical_{v}"] for c in out["cases"])
    print(json.dumps(out, ensure_ascii=False, indent=None if a.json else 2))


if __name__ == "__main__":
    main()
