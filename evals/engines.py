"""The constraint engines side by side, in one run, on one model's tokenizer.

    python evals/engines.py --model qwen2.5-coder-0.5b   # writes evals/results/engines-<model>.json

Only the tokenizer is loaded (``vocab_only``): nothing here runs the model. For gbnf
(llama.cpp's grammar) and llguidance it measures (outlines-core's index was measured beside
them until it was removed: its figures are in evals/results/engines-qwen2.5-coder-0.5b.json):

- **build**: the constraint for 1 and for 10 tools (``bench.ten_tools``; tool choice auto, one
  call a turn, as ``run`` asks), cold: the text, then the engine's own compile (llama.cpp's
  parse, llguidance's compile), then the first mask;
- **per token**: what the decoder does for each token it keeps: ``allows`` on the sampled
  token, ``accept``, and the jump-forward look-up (``jump.forced_text`` for gbnf,
  the engine's forced tokens for llguidance), along a call to one of 10 tools and along prose;
- **mask**: a full mask at each of those positions (what sampling above temperature 0 needs,
  and what the decoder falls back to when the sampled token is refused);
- **jump-forward**: over the expected call of every eval case, the tokens each method inserts
  without sampling, and those it proposes that the call's own tokens do not start with (which
  the decoder evaluates and drops). The call's tokenization stands in for the model's choice;
  that replies are the same as without jump-forward is shown on the model by
  tests/test_real_fast_path.py;
- **coverage**: every tool schema in evals/*.jsonl, the built-in tools and a set of probes
  (patterns, bounds, formats, numbers, unions): whether the engine builds the constraint, what
  it is not given (``left_to_validator``: what ``grammar.engine_safe`` drops or rewrites for
  gbnf, the patterns llguidance cannot compile), and, over random walks (tokens
  drawn at random among those the engine allows, then closing the call), whether each call it
  allowed validates against the schema as written (jsonschema with the schema's draft's
  format checks, plus our own for time, date-time, uri and hostname; the built-in tools' own
  validator too). A keyword an engine silently ignores shows here, as invalid walks.

Read the ratios, not the absolute times: the machine's speed drifts.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import jsonschema
import numpy as np

from localagent.constraint import FailClosed
from localagent.evaluation.bench import ten_tools
from localagent.formats import parse, render_call
from localagent.constraint.grammar import Constraint, ToolChoice, build_constraint, engine_safe
from localagent.constraint.jump import forced_text

ENGINES = ("gbnf", "llguidance")
EVALS = Path(__file__).parent
CALL_TEN = render_call("tool_3", {"path": "src/main.py", "mode": "fast", "count": 3, "ratio": 0.5,
                                  "tags": ["a", "b"], "opts": {"dry_run": True, "label": "x"}})
PROSE = "The file is 12 lines long, and it says: hello, world. The answer is 4."


def _one(name: str, schema: dict[str, Any], required: bool = True) -> dict[str, Any]:
    params = {"type": "object", "properties": {"x": schema}, "required": ["x"] if required else []}
    return {"type": "function", "function": {"name": name, "description": name, "parameters": params}}


PROBES = [  # what each engine enforces, beyond what the eval and built-in schemas ask
    _one("pattern_code", {"type": "string", "pattern": "^[A-Z]{3}-[0-9]+$"}),
    _one("pattern_search", {"type": "string", "pattern": "[0-9]"}),
    _one("pattern_dot", {"type": "string", "pattern": "^a.c$"}),
    _one("pattern_quote", {"type": "string", "pattern": '^say "hi"$'}),
    _one("pattern_lookahead", {"type": "string", "pattern": "^(?=a)\\w+$"}),
    _one("pattern_big_bound", {"type": "string", "pattern": "^[a-z]{1,500}$"}),
    _one("max_length_500", {"type": "string", "maxLength": 500}),
    _one("min_length_70", {"type": "string", "minLength": 70}),
    _one("max_items_3", {"type": "array", "items": {"type": "integer"}, "maxItems": 3}),
    _one("min_items_70", {"type": "array", "items": {"type": "integer"}, "minItems": 70}),
    *[_one(f"format_{f}".replace("-", "_"), {"type": "string", "format": f})
      for f in ("date", "time", "date-time", "uuid", "email", "uri", "ipv4", "hostname")],
    _one("int_range", {"type": "integer", "minimum": 1, "maximum": 10}),
    _one("exclusive_min", {"type": "number", "exclusiveMinimum": 0}),
    _one("multiple_of", {"type": "integer", "multipleOf": 5}),
    _one("any_of", {"anyOf": [{"type": "string", "maxLength": 3}, {"type": "integer"}]}),
    _one("nullable", {"type": ["string", "null"]}),
    _one("const", {"const": "exact"}),
    _one("dict_of_ints", {"type": "object", "additionalProperties": {"type": "integer"}}),
    _one("tuple", {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}], "items": False}),
    _one("unique_items", {"type": "array", "items": {"type": "integer"}, "uniqueItems": True}),
    _one("free_object", {"type": "object"}),
    {"type": "function", "function": {"name": "ref", "description": "ref", "parameters": {
        "type": "object", "properties": {"at": {"$ref": "#/$defs/point"}}, "required": ["at"],
        "$defs": {"point": {"type": "object", "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}},
                            "required": ["x", "y"], "additionalProperties": False}}}}},
]


# -- the engines over one tokenizer ------------------------------------------------------------


class Engines:
    """The model's tokenizer as each engine reads it, and each engine's build and matcher."""

    def __init__(self, model_path: Path):
        import llama_cpp
        from llama_cpp import Llama

        from localagent.backends.llama import token_pieces
        from localagent.constraint.llguidance_engine import tokenizer

        self.llm = Llama(str(model_path), vocab_only=True, verbose=False)
        self.vocab = llama_cpp.llama_model_get_vocab(self.llm.model)
        self.n = self.llm.n_vocab()
        self.prep_s: dict[str, float] = {"gbnf": 0.0}
        t0 = time.perf_counter()
        self.pieces, eog = token_pieces(self.llm)
        self.tok = tokenizer(self.pieces, self.llm.token_eos(), self.encode)
        self.prep_s["llguidance"] = time.perf_counter() - t0
        self.eog, self.eos = set(eog), self.llm.token_eos()

    def encode(self, text: bytes) -> list[int]:
        return list(self.llm.tokenize(text, add_bos=False, special=True))

    def text(self, tokens: list[int]) -> str:
        return b"".join(self.pieces[t].removeprefix(b"\xff") for t in tokens).decode("utf-8", errors="replace")

    def constraint(self, engine: str, tools: list[dict[str, Any]], choice: ToolChoice) -> Constraint:
        return build_constraint(tools, choice, engine=engine, parallel=False)  # type: ignore[arg-type]

    def compile(self, engine: str, c: Constraint) -> Any:
        """What each reply's matcher starts from: the text (llama.cpp parses it per reply), the
        llguidance start matcher."""
        if engine == "llguidance":
            from localagent.constraint.llguidance_engine import start_matcher

            return start_matcher(self.tok, c.text)
        return c.text

    def matcher(self, engine: str, compiled: Any) -> FailClosed:
        from localagent.constraint.llama_grammar import GrammarMatcher
        from localagent.constraint.llguidance_engine import LLGuidanceMatcher

        if engine == "gbnf":
            return FailClosed(GrammarMatcher(self.vocab, self.n, compiled))
        return FailClosed(LLGuidanceMatcher(compiled, self.eog, self.n))

    def jump_tokens(self, m: FailClosed, c: Constraint, emitted: list[int]) -> list[int]:
        """The tokens the decoder would insert after ``emitted`` (backends/llama.py's rule)."""
        engine_says = m.jump()
        if engine_says is not None:
            return engine_says[0]
        forced, ends = forced_text(self.text(emitted), c.heads, parallel=False, keys=dict(c.keys))
        fixed = self.encode(forced.encode()) if forced else []
        if not ends and len(fixed) > 1 and not self.text(fixed[-1:]).strip():
            fixed.pop()
        return fixed


def _clear_caches() -> None:
    from localagent.constraint import grammar
    from localagent.constraint import llguidance_engine

    grammar.clear_grammar_cache()
    llguidance_engine._lark_cached.cache_clear()


def _ms(f: Callable[[], Any]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = f()
    return 1000 * (time.perf_counter() - t0), out


def _median(xs: list[float]) -> float:
    return round(statistics.median(xs), 2) if xs else float("nan")


def build_times(e: Engines, engine: str, repeats: int) -> dict[str, Any]:
    """Cold build of 1 and of 10 tools' constraint: text, engine compile, first mask (ms, best of ``repeats``)."""
    out: dict[str, Any] = {}
    logits = np.zeros(e.n, dtype=np.float32)
    for label, tools in (("1_tool", ten_tools()[:1]), ("10_tools", ten_tools())):
        best: dict[str, float] = {}
        for _ in range(repeats):
            _clear_caches()
            text_ms, c = _ms(lambda: e.constraint(engine, tools, ToolChoice("auto")))
            compile_ms, compiled = _ms(lambda: e.compile(engine, c))
            matcher_ms, m = _ms(lambda: e.matcher(engine, compiled))
            mask_ms, _ = _ms(lambda: m.mask(logits))
            row = {"text_ms": text_ms, "compile_ms": compile_ms + matcher_ms, "first_mask_ms": mask_ms}
            row["total_ms"] = sum(row.values())
            best = row if not best or row["total_ms"] < best["total_ms"] else best
        out[label] = {k: round(v, 2) for k, v in best.items()}
    return out


def per_token(e: Engines, engine: str, rounds: int) -> dict[str, Any]:
    """Median microseconds per token of the decoder's check and jump look-up, and of a full mask."""
    rng = np.random.default_rng(0)
    logits = rng.standard_normal(e.n).astype(np.float32)
    out: dict[str, Any] = {}
    for label, text in (("call", CALL_TEN), ("prose", PROSE)):
        c = e.constraint(engine, ten_tools(), ToolChoice("auto"))
        compiled = e.compile(engine, c)
        tokens = e.encode(text.encode())
        check: list[float] = []
        jump: list[float] = []
        mask: list[float] = []
        for _ in range(rounds):  # the masks apart: one evicts the caches the next check would use
            m = e.matcher(engine, compiled)
            for i, t in enumerate(tokens):
                t1 = time.perf_counter_ns()
                ok = m.allows(t)
                m.accept(t)
                t2 = time.perf_counter_ns()
                e.jump_tokens(m, c, tokens[: i + 1])
                t3 = time.perf_counter_ns()
                assert ok, f"{engine} refused token {i} of {text!r}"
                check.append((t2 - t1) / 1000)
                jump.append((t3 - t2) / 1000)
            m = e.matcher(engine, compiled)
            for t in tokens:
                t0 = time.perf_counter_ns()
                m.mask(logits)
                mask.append((time.perf_counter_ns() - t0) / 1000)
                m.accept(t)
        out[label] = {"tokens": len(tokens), "check_us": _median(check), "jump_us": _median(jump),
                      "check_and_jump_us": _median([a + b for a, b in zip(check, jump)]),
                      "mask_us": _median(mask), "mask_p90_us": round(float(np.percentile(mask, 90)), 1)}
    return out


# -- jump-forward --------------------------------------------------------------------------------


def _cases() -> Iterator[dict[str, Any]]:
    seen: set[str] = set()
    for name in ("cases-dev.jsonl", "cases-test.jsonl", "cases.jsonl"):
        for line in (EVALS / name).read_text(encoding="utf-8").splitlines():
            if line.strip() and (d := json.loads(line))["id"] not in seen:
                seen.add(d["id"])
                yield d


def _expected_call(case: dict[str, Any]) -> str | None:
    """The case's first expected call, each argument at its first acceptable value."""
    if not case.get("expected"):
        return None
    exp = case["expected"][0]
    args = {k: v[0] for k, v in exp["arguments"].items() if v and v[0] != ""}
    return render_call(exp["name"], args)


def jump_forward(e: Engines, engine: str, cases: list[dict[str, Any]]) -> dict[str, Any]:
    """Over every case's expected call: tokens the decoder inserts, and proposes in vain."""
    total = inserted = proposed_in_vain = calls = refused = 0
    for case in cases:
        text = _expected_call(case)
        if text is None:
            continue
        c = e.constraint(engine, case["tools"], ToolChoice("auto"))
        m = e.matcher(engine, e.compile(engine, c))
        tokens = e.encode(text.encode())
        pos = kept_here = vain_here = 0
        while pos < len(tokens) and m.allows(tokens[pos]):
            m.accept(tokens[pos])
            pos += 1
            draft = e.jump_tokens(m, c, tokens[:pos])
            kept = 0
            while kept < len(draft) and pos + kept < len(tokens) and draft[kept] == tokens[pos + kept] and m.allows(draft[kept]):
                m.accept(draft[kept])
                kept += 1
            kept_here += kept
            vain_here += len(draft) - kept
            pos += kept
        if pos < len(tokens):  # the engine refuses the expected call: not counted
            refused += 1
            continue
        calls, total = calls + 1, total + len(tokens)
        inserted, proposed_in_vain = inserted + kept_here, proposed_in_vain + vain_here
    return {"calls": calls, "refused": refused, "tokens": total, "inserted": inserted,
            "inserted_share": round(inserted / max(total, 1), 3), "proposed_in_vain": proposed_in_vain}


# -- coverage ----------------------------------------------------------------------------------


def _schemas() -> list[tuple[str, dict[str, Any], Callable[[dict[str, Any]], str | None] | None]]:
    """(group, tool, the tool's own validator or None) for every distinct tool schema."""
    from localagent.tools.builtin import workspace_tools
    from localagent.tools.workspace import Workspace

    out: list[tuple[str, dict[str, Any], Any]] = []
    seen: set[str] = set()
    for case in _cases():
        for t in case["tools"]:
            key = json.dumps(t["function"].get("parameters"), sort_keys=True) + t["function"]["name"]
            if key not in seen:
                seen.add(key)
                out.append(("evals", t, None))
    with tempfile.TemporaryDirectory() as root:
        for tool in workspace_tools(Workspace(root), allow_commands=True):
            def own(args: dict[str, Any], model: Any = tool.args_model) -> str | None:
                try:
                    model.model_validate(args)
                    return None
                except Exception as ex:  # pydantic's ValidationError, one line
                    return str(ex).splitlines()[0]
            out.append(("builtin", tool.openai_schema(), own))
    out += [("probes", t, None) for t in PROBES]
    return out


def _format_checker(cls: Any) -> Any:
    """The schema's draft's format checker, plus checks of the formats it cannot make without
    optional packages (rfc3339-validator, rfc3987, fqdn). ``jsonschema.FormatChecker()``, which
    evaluate.schema_errors uses, is not it: it holds draft 3's ``time`` (HH:MM:SS only), which
    refuses RFC 3339's ``10:30:00Z``."""
    import datetime
    import re
    from urllib.parse import urlsplit

    checker = cls.FORMAT_CHECKER
    rfc3339 = r"\d{2}:\d{2}:\d{2}(\.\d+)?([zZ]|[+-]\d{2}:\d{2})"

    def timed(pattern: str, parse: Callable[[str], Any]) -> Callable[[object], bool]:
        def check(x: object) -> bool:
            if not isinstance(x, str) or not re.fullmatch(pattern, x):
                return False
            parse(re.sub(r"(\d{2}:\d{2}):60", r"\1:59", x.upper().replace("Z", "+00:00")))  # RFC 3339 allows a leap second
            return True
        return check

    extra = {
        "time": timed(rfc3339, datetime.time.fromisoformat),
        "date-time": timed(r"\d{4}-\d{2}-\d{2}[tT]" + rfc3339, datetime.datetime.fromisoformat),
        "uri": lambda x: not isinstance(x, str) or (bool(urlsplit(x).scheme) and re.fullmatch(r"[A-Za-z][A-Za-z0-9+.-]*:[^\s]*", x) is not None),
        "hostname": lambda x: not isinstance(x, str) or re.fullmatch(
            r"(?=.{1,253}$)([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*", x) is not None,
    }
    out = jsonschema.FormatChecker([])
    out.checkers = dict(checker.checkers)
    for name, fn in extra.items():
        out.checkers.setdefault(name, (fn, (ValueError,)))
    return out


def _schema_error(schema: dict[str, Any], args: Any) -> str | None:
    cls = jsonschema.validators.validator_for(schema)
    check = cls(schema, format_checker=_format_checker(cls))
    err = jsonschema.exceptions.best_match(check.iter_errors(args))
    return None if err is None else f"{'/'.join(map(str, err.absolute_path)) or 'arguments'}: {err.message}"


def _left_to_validator(engine: str, schema: dict[str, Any]) -> list[str]:
    """The keywords the engine is not given (gbnf: ``engine_safe``'s drops and
    rewrites) or does not implement (llguidance: dropped patterns, its own warnings)."""
    if engine == "llguidance":
        from localagent.constraint.llguidance_engine import engine_ready

        return sorted(set(_diff(schema, engine_ready(schema))) - {"additionalProperties"})
    return sorted(set(_diff(schema, engine_safe(schema))))


def _diff(a: Any, b: Any) -> Iterator[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        for k in a.keys() | b.keys():
            if k not in b or k not in a:
                yield k
            elif k not in ("enum", "const", "default", "examples", "required"):
                yield from _diff(a[k], b[k])
    elif isinstance(a, list) and isinstance(b, list):
        for x, y in zip(a, b):
            yield from _diff(x, y)
    elif a != b:
        yield "pattern (rewritten)" if isinstance(a, str) else "value"


def _walk(
    e: Engines, m: FailClosed, rng: np.random.Generator, explore: int, cap: int, closers: list[int], short: list[int]
) -> tuple[list[int], bool]:
    """Tokens drawn uniformly from those ``m`` allows (by rejection: 128 draws; else a printable
    character or closing token it allows; else from its mask), for ``explore`` tokens; then a
    closing token or a printable character, so that the call ends (a pattern or a format may
    need a character no random token holds). (tokens, ended)"""
    tokens: list[int] = []
    zeros = np.zeros(e.n, dtype=np.float32)
    while len(tokens) < cap:
        if m.allows(e.eos):
            return tokens, True
        pick = None
        if len(tokens) >= explore:  # close what is open, else one character at a time
            if rng.random() < 0.5:
                pick = next((t for t in closers if m.allows(t)), None)
            if pick is None and (chars := [t for t in short if m.allows(t)]):
                pick = int(rng.choice(chars))
        if pick is None:
            pick = next((int(t) for t in rng.integers(0, e.n, 128) if int(t) not in e.eog and m.allows(int(t))), None)
        if pick is None and (chars := [t for t in short + closers if m.allows(t)]):
            pick = int(rng.choice(chars))  # before the mask, which takes milliseconds under gbnf
        if pick is None:
            allowed = [t for t in np.flatnonzero(np.isfinite(m.mask(zeros))).tolist() if t not in e.eog]
            if not allowed:
                return tokens, False
            pick = int(rng.choice(allowed))
        m.accept(pick)
        tokens.append(pick)
    return tokens, False


def coverage(e: Engines, engine: str, walks: int, explore: int) -> dict[str, Any]:
    closers = [ids[0] for s in (b'"', b"}", b"]", b",", b"\n", b"</tool_call>") if len(ids := e.encode(s)) == 1]
    short = [ids[0] for c in range(0x20, 0x7F) if len(ids := e.encode(bytes([c]))) == 1]
    rows = []
    for group, tool, own in _schemas():
        fn = tool["function"]
        schema = fn.get("parameters") or {"type": "object", "properties": {}}
        row: dict[str, Any] = {"group": group, "tool": fn["name"], "builds": True, "left_to_validator": _left_to_validator(engine, schema)}
        try:
            c = e.constraint(engine, [tool], ToolChoice("required"))
            compiled = e.compile(engine, c)
        except Exception as ex:  # ConstraintError, or an engine's own
            row.update(builds=False, error=str(ex).splitlines()[0][:200])
            rows.append(row)
            continue
        ended = valid = 0
        bad: list[str] = []
        for w in range(walks):
            tokens, done = _walk(e, e.matcher(engine, compiled), np.random.default_rng([w, len(rows)]), explore, 600, closers, short)
            if not done:
                continue
            ended += 1
            text = e.text(tokens)
            calls = parse(text).calls
            err = "not one call to the tool" if len(calls) != 1 or calls[0].name != fn["name"] else None
            err = err or _schema_error(schema, calls[0].arguments) or (own(calls[0].arguments) if own else None)
            if err is None:
                valid += 1
            elif len(bad) < 3:
                bad.append(f"{err} in {text[:160]!r}")
        row.update(walks=walks, ended=ended, valid=valid, invalid_examples=bad)
        rows.append(row)
    groups: dict[str, Any] = {}
    for g in ("evals", "builtin", "probes"):
        rs = [r for r in rows if r["group"] == g]
        groups[g] = {
            "schemas": len(rs),
            "built": sum(r["builds"] for r in rs),
            "nothing_dropped": sum(r["builds"] and not r["left_to_validator"] for r in rs),  # given to the engine whole
            "every_allowed_call_valid": sum(r["builds"] and r["ended"] > 0 and r["valid"] == r["ended"] for r in rs),
            "walks_ended": sum(r.get("ended", 0) for r in rs),
            "walks_valid": sum(r.get("valid", 0) for r in rs),
        }
    return {"groups": groups, "schemas": rows}


# -- the run -------------------------------------------------------------------------------------


def main() -> None:
    from localagent.provision import resolve_model

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="qwen2.5-coder-0.5b", help="model id or .gguf path (its tokenizer only)")
    ap.add_argument("--engines", default=",".join(ENGINES), help="comma-separated, of " + ", ".join(ENGINES))
    ap.add_argument("--walks", type=int, default=20, help="random walks per schema and engine")
    ap.add_argument("--explore", type=int, default=32, help="tokens drawn at random before a walk closes the call")
    ap.add_argument("--repeats", type=int, default=5, help="cold builds per figure (best kept)")
    ap.add_argument("--rounds", type=int, default=3, help="passes over the call and the prose for per-token figures")
    ap.add_argument("--out", type=Path, default=None, help="default: evals/results/engines-<model>.json")
    args = ap.parse_args()
    engines = [x for x in args.engines.split(",") if x]
    path = resolve_model(args.model, progress=False)
    e = Engines(path)
    cases = list(_cases())
    result: dict[str, Any] = {"model": path.name, "vocabulary": e.n, "command": " ".join(["python", "evals/engines.py"] + sys.argv[1:]),
                              "formats_the_validator_checks": sorted(jsonschema.FormatChecker().checkers),
                              "vocabulary_prep_s": {k: round(v, 2) for k, v in e.prep_s.items() if k in engines}}
    for engine in engines:
        print(f"[{engine}] build, per token, jump-forward, coverage ...", file=sys.stderr, flush=True)
        t0 = time.perf_counter()
        result[engine] = {
            "build": build_times(e, engine, args.repeats),
            "per_token": per_token(e, engine, args.rounds),
            "jump_forward": jump_forward(e, engine, cases),
            "coverage": coverage(e, engine, args.walks, args.explore),
        }
        result[engine]["seconds"] = round(time.perf_counter() - t0, 1)
    out = args.out or EVALS / "results" / f"engines-{args.model.removesuffix('.gguf').split('/')[-1]}.json"
    out.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(summary(result, engines))
    print(f"written: {out}", file=sys.stderr)


def summary(r: dict[str, Any], engines: list[str]) -> str:
    """The figures as a table, with each engine's ratio to gbnf."""
    def ratio(v: float, base: float) -> str:
        return f"{v:g} ({v / base:.2g}x)" if base and engines[0] == "gbnf" else f"{v:g}"

    rows: list[tuple[str, Callable[[dict[str, Any]], float | str]]] = [
        ("build 1 tool, ms", lambda d: d["build"]["1_tool"]["total_ms"]),
        ("build 10 tools, ms", lambda d: d["build"]["10_tools"]["total_ms"]),
        ("check + jump per call token, us", lambda d: d["per_token"]["call"]["check_and_jump_us"]),
        ("check + jump per prose token, us", lambda d: d["per_token"]["prose"]["check_and_jump_us"]),
        ("full mask in a call, us (median)", lambda d: d["per_token"]["call"]["mask_us"]),
        ("full mask in prose, us (median)", lambda d: d["per_token"]["prose"]["mask_us"]),
    ]
    lines = [f"{'':38}" + "".join(f"{x:>24}" for x in engines)]
    for name, get in rows:
        base = get(r[engines[0]])
        lines.append(f"{name:38}" + "".join(f"{ratio(float(get(r[x])), float(base)):>24}" for x in engines))
    jf = {x: r[x]["jump_forward"] for x in engines if isinstance(r[x]["jump_forward"], dict)}
    lines.append(f"{'jump-forward: inserted / call tokens':38}" + "".join(
        f"{(str(jf[x]['inserted']) + ' / ' + str(jf[x]['tokens'])) if x in jf else 'as gbnf':>24}" for x in engines))
    lines.append(f"{'jump-forward: proposed in vain':38}" + "".join(f"{jf[x]['proposed_in_vain'] if x in jf else '':>24}" for x in engines))
    lines.append("coverage: schemas built, given whole, every allowed call valid; random walks valid")
    for g in ("evals", "builtin", "probes"):
        for x in engines:
            d = r[x]["coverage"]["groups"][g]
            lines.append(f"  {g:8} {x:11} {d['built']:>3}/{d['schemas']} built, {d['nothing_dropped']:>3} whole, "
                         f"{d['every_allowed_call_valid']:>3} all valid; {d['walks_valid']}/{d['walks_ended']} walks valid")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
