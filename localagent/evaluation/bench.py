"""The benchmark: every figure measured side by side in one run, on one model.

Absolute times on a shared 2-core machine mean little; the ratios between
paths measured in the same process, minutes apart, are what to read.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..backends.base import GenerateOptions, Generation
from ..constraint.grammar import Constraint, ToolChoice, build_constraint, build_grammar, clear_grammar_cache
from ..decoding import decoding_options, first_token_threshold
from ..loop import AgentConfig
from ..messages import Message

TASK = "What is the launch code written in notes.txt?"


def _options(
    max_tokens: int, constraint: Constraint | None = None, choice: ToolChoice | None = None, *, jump_forward: bool = True
) -> GenerateOptions:
    """The options ``run`` would use for one step (``decoding_options`` on run's defaults,
    one call per reply), at most ``max_tokens``; ``constraint`` None is free text."""
    config = AgentConfig(max_tokens=max_tokens, parallel_calls=False, jump_forward=jump_forward)
    threshold = first_token_threshold(config, choice) if choice else None
    return decoding_options(config, constraint, threshold=threshold, choice=choice)


def _ms_per_token(gen: Generation) -> float:
    """Decode time per generated token, the prompt evaluation left out."""
    first = gen.first_token_seconds or 0.0
    n = max(1, gen.completion_tokens - 1)
    return 1000 * (gen.seconds - first) / n


def ten_tools() -> list[dict[str, Any]]:
    """Ten varied tool schemas (strings, enums, numbers, arrays, nested objects)."""
    tools = []
    for i in range(10):
        tools.append(
            {
                "type": "function",
                "function": {
                    "name": f"tool_{i}",
                    "description": f"Tool number {i}.",
                    "parameters": {
                        "type": "object",
                        "properties": {
                            "path": {"type": "string", "description": "A path."},
                            "mode": {"type": "string", "enum": ["fast", "slow", "auto"]},
                            "count": {"type": "integer", "minimum": 0},
                            "ratio": {"type": "number"},
                            "tags": {"type": "array", "items": {"type": "string"}},
                            "opts": {
                                "type": "object",
                                "properties": {"dry_run": {"type": "boolean"}, "label": {"type": "string"}},
                                "required": ["dry_run"],
                                "additionalProperties": False,
                            },
                        },
                        "required": ["path", "mode"],
                        "additionalProperties": False,
                    },
                },
            }
        )
    return tools


def grammar_build_ms(tools: list[dict[str, Any]], repeats: int = 5) -> float:
    """Cold build time of one step's grammar (the cache cleared each time), best of ``repeats``."""
    best = float("inf")
    for _ in range(repeats):
        clear_grammar_cache()
        t0 = time.perf_counter()
        build_grammar(tools)
        best = min(best, time.perf_counter() - t0)
    return 1000 * best


@dataclass
class Setup:
    """The model, the tools and the folder the benchmark runs against."""

    backend: Any
    root: Path
    tools: list[Any]
    schemas: list[dict[str, Any]]
    system: str


def _setup(backend: Any) -> Setup:
    from ..tools.builtin import workspace_tools
    from ..loop import overview
    from ..prompt import load_prompt
    from ..tools import ToolSet
    from ..tools.workspace import Workspace

    root = Path(tempfile.mkdtemp(prefix="localagent-bench-"))
    (root / "notes.txt").write_text("The launch code is PURPLE-42.\n")
    (root / "src").mkdir()
    (root / "src" / "main.py").write_text("def main():\n    print('hello')\n")
    tools = workspace_tools(Workspace(root))
    system = load_prompt("system").strip() + "\n\n" + overview(root)
    return Setup(backend, root, tools, ToolSet(tools).schemas(), system)


def decode_speeds(s: Setup, max_tokens: int = 48, repeats: int = 3) -> dict[str, Any]:
    """ms per token: free, llama-cpp-python's stock grammar path, and ours, on the same
    prompt; the four interleaved ``repeats`` times, medians reported."""
    import statistics

    from llama_cpp import LlamaGrammar

    b = s.backend
    msgs = [Message("system", s.system), Message("user", TASK)]
    choice = ToolChoice("required")
    c = build_constraint(s.schemas, choice, parallel=False)
    grammar = c.text
    prompt = b.prompt_ids(msgs, s.schemas)
    # The same constraint without jump-forward: every token sampled, to compare ours against.
    no_jump = _options(max_tokens, c, choice, jump_forward=False)
    runs: dict[str, list[float]] = {"free": [], "gbnf": [], "constrained": [], "constrained_no_jump": []}
    for _ in range(repeats):
        b.generate(msgs, s.schemas, _options(1))  # the prompt into the KV cache
        free = b.generate(msgs, s.schemas, _options(max_tokens))
        plain = b.generate(msgs, s.schemas, no_jump)
        ours = b.generate(msgs, s.schemas, _options(max_tokens, c, choice))
        t0 = time.monotonic()
        times = []
        text = ""
        for chunk in b.llm.create_completion(
            prompt, max_tokens=max_tokens, temperature=0.0, grammar=LlamaGrammar.from_string(grammar, verbose=False),
            stream=True,
        ):
            times.append(time.monotonic() - t0)
            text += chunk["choices"][0]["text"]
        b.llm.n_tokens = 0  # the stock path leaves its own cache state: start ours clean
        runs["free"].append(_ms_per_token(free))
        runs["gbnf"].append(1000 * (times[-1] - times[0]) / max(1, len(times) - 1))
        runs["constrained"].append(_ms_per_token(ours))
        runs["constrained_no_jump"].append(_ms_per_token(plain))
    med = {k: round(statistics.median(v), 2) for k, v in runs.items()}
    return {
        "free_ms_per_token": med["free"],
        "gbnf_ms_per_token": med["gbnf"],
        "constrained_ms_per_token": med["constrained"],
        "constrained_no_jump_ms_per_token": med["constrained_no_jump"],
        "ms_per_token_runs": {k: [round(x, 2) for x in v] for k, v in runs.items()},
        "free_tokens": free.completion_tokens,
        "constrained_tokens": ours.completion_tokens,
        "gbnf_tokens": len(times),
        "constrained_output_equals_stock": ours.text == text,
        "constrained_output_equals_no_jump": ours.text == plain.text,
        "grammar_rejections": ours.grammar_rejections,
        "forced_tokens": ours.forced_tokens,
    }


def call_seconds(s: Setup, max_tokens: int = 96, repeats: int = 5) -> dict[str, Any]:
    """Wall time to produce the same tool call, free versus constrained.

    Left free, the small model often writes no call at all, so "free" is the
    free decoder producing the very tokens the constrained path produced, one
    at a time (each step computing logits and choosing, as free decoding does,
    the end of the turn included); "constrained" is the default path (grammar
    check, jump-forward). The prompt is in the KV cache for both. The two are
    interleaved ``repeats`` times and the medians compared, since this machine's
    speed drifts from one second to the next.
    """
    import statistics

    import numpy as np

    from ..formats import parse

    b = s.backend
    msgs = [Message("system", s.system), Message("user", TASK)]
    choice = ToolChoice("required")
    options = _options(max_tokens, build_constraint(s.schemas, choice, parallel=False), choice)
    prompt = b.prompt_ids(msgs, s.schemas)
    b.generate(msgs, s.schemas, _options(1))  # the prompt into the KV cache
    free_times, constrained_times = [], []
    ours = None
    for _ in range(repeats):
        ours = b.generate(msgs, s.schemas, options)
        constrained_times.append(ours.seconds)
        tokens = list(b.decoder.last_tokens) + [b.llm.token_eos()]
        t0 = time.monotonic()
        b.prefill(prompt)
        for i, tok in enumerate(tokens):
            int(np.argmax(b.logits()))  # the choice a free step makes
            if i < len(tokens) - 1:
                b.llm.eval([tok])
        free_times.append(time.monotonic() - t0)
    assert ours is not None
    left_free = b.generate(msgs, s.schemas, _options(max_tokens))
    return {
        "call_seconds_free": round(statistics.median(free_times), 3),
        "call_seconds_constrained": round(statistics.median(constrained_times), 3),
        "call_seconds_runs": {"free": [round(t, 3) for t in free_times], "constrained": [round(t, 3) for t in constrained_times]},
        "call_tokens": ours.completion_tokens,
        "call_forced_tokens": ours.forced_tokens,
        "constrained_text": ours.text,
        "left_free_text": left_free.text[:300],
        "left_free_made_a_call": bool(parse(left_free.text).calls),
    }


def kv_reuse(s: Setup, steps: int = 10) -> dict[str, Any]:
    """A scripted 10-step history on the real model: tokens sent, evaluated, and new."""
    from ..formats import render_call

    b = s.backend
    b.llm.n_tokens = 0
    msgs = [Message("system", s.system), Message("user", "Read the files one by one.")]
    sent = evaluated = new = 0
    prev_len = 0
    per_step = []
    for i in range(steps):
        gen = b.generate(msgs, s.schemas, _options(1))
        sent += gen.prompt_tokens
        evaluated += gen.prompt_tokens_evaluated
        new += gen.prompt_tokens - prev_len
        per_step.append([gen.prompt_tokens, gen.prompt_tokens_evaluated, gen.prompt_tokens - prev_len])
        prev_len = gen.prompt_tokens
        raw = render_call("read_file", {"path": f"part{i}.txt"})
        msgs.append(Message("assistant", "", raw=raw))
        msgs.append(Message("tool", f"Part {i}: " + "lorem ipsum dolor sit amet " * 8, tool_call_id=f"c{i}"))
    return {
        "prompt_tokens_sent": sent,
        "prompt_tokens_evaluated": evaluated,
        "prompt_tokens_new": new,
        "kv_steps": per_step,
    }


def loop_overhead(s: Setup, n_files: int = 5000) -> dict[str, Any]:
    """Share of a real run's wall time outside the model's generation (which holds our
    decoder's per-token work): the walks of a root of ``n_files`` files, the policy, the
    tools, rendering and the trace file written, on the code path of `localagent run`."""
    from ..assemble import assemble, workspace_setup

    root = Path(tempfile.mkdtemp(prefix="localagent-bench-big-"))
    (root / "notes.txt").write_text("The launch code is PURPLE-42.\n")
    for i in range(n_files - 1):
        folder = root / f"d{i // 100:02d}"
        folder.mkdir(exist_ok=True)
        (folder / f"f{i}.txt").write_text(f"line {i}\n")
    agent = assemble(s.backend, workspace_setup(root, yes=True))
    trace = root.parent / f"{root.name}.jsonl"
    t0 = time.monotonic()
    r = agent.run(TASK, trace=trace)
    wall = time.monotonic() - t0
    model = sum(rec.generation.seconds for rec in r.records)
    return {
        "loop_overhead_pct": round(100 * (wall - model) / wall, 2),
        "loop_run_seconds": round(wall, 3),
        "loop_run_steps": r.steps,
        "loop_run_answer": r.answer,
        "loop_root_files": n_files,
        "loop_trace_bytes": trace.stat().st_size,
    }


def first_token(model_path: Path, s: Setup, n_ctx: int) -> dict[str, Any]:
    """Time to the first token of a new run, without and with the warm-start cache."""
    from ..backends.llama import LlamaBackend
    from ..backends.prefix_cache import PrefixCache

    msgs = [Message("system", s.system), Message("user", TASK)]
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as d:
        for name in ("cold", "warm"):
            b = LlamaBackend(model_path, n_ctx=n_ctx, prefix_cache=PrefixCache(Path(d)))
            gen = b.generate(msgs, s.schemas, _options(1))
            out[f"first_token_seconds_{name}"] = round(gen.first_token_seconds or gen.seconds, 3)
            out[f"first_token_{name}_warm_start"] = gen.warm_start
            del b
    return out


TASK_FILES = {"notes/launch.txt": "Owner: ops\nLaunch code: 4821\n", "README.md": "# demo\n", "src/app.py": "x = 1\n"}
TASK_PROMPT = "What is the launch code in notes/launch.txt?"


class _DecodeClock:
    """Time spent inside llama.cpp's decode calls while the clock is entered, to tell the
    model's share of a task from ours: every evaluation, ``Llama.eval``'s and the
    decoder's batched forced tokens alike, goes through the C API's ``llama_decode``."""

    def __init__(self) -> None:
        self.seconds = 0.0

    def __enter__(self) -> "_DecodeClock":
        from llama_cpp import llama_cpp as lib

        self._lib, inner = lib, lib.llama_decode

        def timed(*args: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return inner(*args)
            finally:
                self.seconds += time.perf_counter() - t0

        lib.llama_decode, self._inner = timed, inner
        return self

    def __exit__(self, *exc: object) -> None:
        self._lib.llama_decode = self._inner


class _TimedCache:
    """A prefix cache whose saves are timed, so that a cold start is reported without them."""

    def __init__(self, folder: Path):
        from ..backends.prefix_cache import PrefixCache

        self.inner = PrefixCache(folder)
        self.save_seconds = 0.0

    def load(self, ctx: Any, key: str, tokens: list[int]) -> bool:
        return self.inner.load(ctx, key, tokens)

    def masks(self, model_path: Path) -> Any:
        return self.inner.masks(model_path)

    def save(self, ctx: Any, key: str, tokens: list[int]) -> bool:
        t0 = time.perf_counter()
        try:
            return self.inner.save(ctx, key, tokens)
        finally:
            self.save_seconds += time.perf_counter() - t0


def _evict(folder: Path) -> bool:
    """Drop the cache files from the page cache, so a warm start reads the disk."""
    ok = True
    for p in folder.glob("*.state"):
        try:
            fd = os.open(p, os.O_RDONLY)
            try:
                os.fsync(fd)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)
        except (OSError, AttributeError):
            ok = False
    return ok


def _task_run(backend: Any) -> tuple[Any, Any, float, float]:
    """The task in a new folder, through the code path of ``run``: (agent, result, wall s,
    decode s)."""
    from ..assemble import assemble, workspace_setup

    root = Path(tempfile.mkdtemp(prefix="localagent-bench-task-"))
    for rel, text in TASK_FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    agent = assemble(backend, workspace_setup(root, yes=True))
    with _DecodeClock() as clock:
        t0 = time.monotonic()
        r = agent.run(TASK_PROMPT, trace=root.parent / f"{root.name}.jsonl")
        wall = time.monotonic() - t0
    return agent, r, wall, clock.seconds


def task_figures(model_path: Path, n_ctx: int) -> dict[str, Any]:
    """A 2-3 step task timed whole: cold (an empty prefix cache, the save left out and
    reported apart), then warm in another new folder (a new process state, the cache
    filled by the cold run, its file evicted from the page cache first)."""
    from ..backends.llama import LlamaBackend

    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as d:
        cache = _TimedCache(Path(d))
        cold = LlamaBackend(model_path, n_ctx=n_ctx, prefix_cache=cache)  # type: ignore[arg-type]
        agent, r, wall, _ = _task_run(cold)
        schemas, first_two = agent.tools.schemas(), r.history[:2]
        out["prefix_tokens"] = cold.prefix_tokens(first_two, schemas)
        out["task_seconds_cold"] = round(wall - cache.save_seconds, 3)
        out["prefix_save_seconds"] = round(cache.save_seconds, 3)
        out["task_cold_steps"], out["task_cold_answer"] = r.steps, r.answer
        del cold
        out["warm_cache_file_evicted"] = _evict(Path(d))
        warm = LlamaBackend(model_path, n_ctx=n_ctx, prefix_cache=cache)  # type: ignore[arg-type]
        _, r, wall, decode = _task_run(warm)
        first = r.records[0].generation
        out["task_seconds_warm_new_folder"] = round(wall, 3)
        out["task_warm_steps"], out["task_warm_answer"] = r.steps, r.answer
        out["task_warm_start"] = first.warm_start
        out["first_step_evaluated_share_warm"] = round(first.prompt_tokens_evaluated / first.prompt_tokens, 3)
        out["task_seconds_model_share"] = round(decode / wall, 3)
        del warm
    return out


def eval_seconds(backend: Any, n: int = 20) -> dict[str, Any]:
    """Seconds per case of the eval, constrained and free, on the same ``n`` dev cases."""
    from .evaluate import load_cases, run_eval, sample

    cases = sample(load_cases(Path(__file__).resolve().parents[2] / "evals" / "cases-dev.jsonl"), n)
    out: dict[str, Any] = {}
    for mode in ("constrained", "free"):
        rep = run_eval(backend, cases, mode).to_dict()
        out[f"eval_seconds_per_case_{mode}"] = rep["seconds_per_case"]
        out[f"eval_accuracy_{mode}"] = rep["accuracy"]
    return out


def run_bench(model: str | None = None, n_ctx: int = 4096) -> dict[str, Any]:
    """All figures, in one process, one after another."""
    from ..backends.llama import LlamaBackend
    from ..provision import default_model_id, resolve_model

    model_id = model or default_model_id()
    path = resolve_model(model_id)
    backend = LlamaBackend(path, n_ctx=n_ctx, warm_start=False)
    s = _setup(backend)
    result: dict[str, Any] = {"model": model_id, "n_ctx": n_ctx}
    result["grammar_build_ms_10_tools"] = round(grammar_build_ms(ten_tools()), 2)
    result.update(decode_speeds(s))
    result.update(call_seconds(s))
    result.update(kv_reuse(s))
    result.update(loop_overhead(s))
    result.update(eval_seconds(backend))
    del backend, s.backend
    result.update(first_token(path, s, n_ctx))
    result.update(task_figures(path, n_ctx))
    r = result
    result["ratios"] = {
        "constrained_over_free_ms_per_token": round(r["constrained_ms_per_token"] / r["free_ms_per_token"], 3),
        "gbnf_over_free_ms_per_token": round(r["gbnf_ms_per_token"] / r["free_ms_per_token"], 3),
        "call_seconds_constrained_over_free": round(r["call_seconds_constrained"] / r["call_seconds_free"], 3),
        "evaluated_over_new": round(r["prompt_tokens_evaluated"] / r["prompt_tokens_new"], 3),
        "first_token_warm_over_cold": round(r["first_token_seconds_warm"] / r["first_token_seconds_cold"], 3),
    }
    return result


def to_json(result: dict[str, Any]) -> str:
    """The benchmark's one JSON object."""
    return json.dumps(result, ensure_ascii=False)
