"""Tool-call accuracy: does the model call the right tool with the right arguments?

A case is a chat, the tools offered, and the calls expected in the first
assistant turn (none when it should answer in prose, then optionally patterns
the answer must match). Scoring is pure: it reads the turn's text, matches its
calls to the expected ones in any order, comparing values as the tool would
receive them, and gives each wrong case one error class. ``run_eval`` asks a
backend once per case, constrained by the tools' grammar or left free, with the
options the agent loop would use (``decoding.decoding_options``).
"""

from __future__ import annotations

import itertools
import json
import math
import re
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from enum import Enum
from pathlib import Path
from typing import Any, Callable, Literal, Sequence

import jsonschema
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ..backends.base import Backend, Generation, GenerateOptions
from .. import policy
from ..decoding import ask, decoding_options, first_token_threshold, first_turn, several_calls
from ..errors import ConfigError, ConstraintError
from ..formats import CALL_OPEN, ParsedCall, parse, render_call
from ..constraint.grammar import Engine, ToolChoice, build_constraint
from ..loop import AgentConfig
from ..messages import Message, ToolCall, canonical, last_user_text

Mode = Literal["constrained", "free"]
MAX_EXPECTED_CALLS = 6  # matching tries every order of the calls


class ErrorClass(str, Enum):
    """Why a case was judged wrong: exactly one per wrong case."""

    FORMAT_FAILURE = "format_failure"  # a call that does not parse, or one outside the envelope
    WRONG_TOOL = "wrong_tool"
    WRONG_COUNT = "wrong_number_of_calls"  # includes no call when one was expected
    MISSING_ARGUMENT = "missing_argument"
    UNEXPECTED_ARGUMENT = "unexpected_argument"
    WRONG_VALUE = "wrong_value"
    UNNEEDED_CALL = "called_when_not_needed"
    WRONG_ANSWER = "wrong_answer"  # no call, as expected, but the prose misses the expected answer


# Within one call, the first of these that applies is the call's error.
_CALL_ERRORS = (ErrorClass.WRONG_TOOL, ErrorClass.MISSING_ARGUMENT, ErrorClass.UNEXPECTED_ARGUMENT, ErrorClass.WRONG_VALUE)


# --- the case file (pydantic at the edge) ------------------------------------------------


class _Function(BaseModel):
    model_config = ConfigDict(extra="allow")
    name: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_\-]{0,63}$")
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})

    @field_validator("parameters")
    @classmethod
    def _is_schema(cls, v: dict[str, Any]) -> dict[str, Any]:
        try:
            jsonschema.validators.validator_for(v).check_schema(v)
        except jsonschema.SchemaError as e:
            raise ValueError(f"not a valid JSON schema: {e.message}") from None
        return v


class _ToolDef(BaseModel):
    type: Literal["function"] = "function"
    function: _Function


class _CallDef(BaseModel):
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class _MessageDef(BaseModel):
    role: Literal["system", "user", "assistant", "tool"]
    content: str = ""
    tool_calls: list[_CallDef] = Field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None


class _ExpectedDef(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    arguments: dict[str, list[Any]] = Field(default_factory=dict)
    loose: list[str] = Field(default_factory=list)  # arguments compared ignoring case and runs of white space

    @field_validator("arguments")
    @classmethod
    def _alternatives(cls, v: dict[str, list[Any]]) -> dict[str, list[Any]]:
        for arg, values in v.items():
            if not values:
                raise ValueError(f"argument '{arg}' lists no acceptable values")
        return v


class _CaseDef(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str = Field(min_length=1)
    category: str = Field(min_length=1)
    messages: list[_MessageDef] = Field(min_length=1)
    tools: list[_ToolDef] = Field(min_length=1)
    expected: list[_ExpectedDef] = Field(max_length=MAX_EXPECTED_CALLS)
    expected_answer: list[str] = Field(default_factory=list)  # regexes the prose must all match

    @field_validator("expected_answer")
    @classmethod
    def _patterns(cls, v: list[str]) -> list[str]:
        for p in v:
            try:
                re.compile(p)
            except re.error as e:
                raise ValueError(f"pattern {p!r} is not a valid regex: {e}") from None
        return v

    @model_validator(mode="after")
    def _answer_only_without_calls(self) -> "_CaseDef":
        if self.expected_answer and self.expected:
            raise ValueError("expected_answer is for a case that expects no call; this one expects calls")
        return self

    @model_validator(mode="after")
    def _expected_fits_tools(self) -> "_CaseDef":
        # A case no call could satisfy is a bug in the case file, not a model error.
        tools = {t.function.name: t.function.parameters for t in self.tools}
        for e in self.expected:
            if e.name not in tools:
                raise ValueError(f"expected call '{e.name}' is not one of the tools ({', '.join(tools)})")
            props = tools[e.name].get("properties", {})
            for arg in tools[e.name].get("required", []):
                if "" in e.arguments.get(arg, [""]):
                    raise ValueError(f"'{e.name}' requires '{arg}': the expected call must give it values, not \"\"")
            for arg in e.loose:
                if arg not in e.arguments:
                    raise ValueError(f"'{e.name}': loose argument '{arg}' is not among the expected arguments")
            for arg, values in e.arguments.items():
                if arg not in props:
                    raise ValueError(f"'{e.name}' has no parameter '{arg}'")
                check = jsonschema.validators.validator_for(props[arg])(props[arg])
                for v in values:
                    if v != "" and (err := jsonschema.exceptions.best_match(check.iter_errors(v))) is not None:
                        raise ValueError(f"'{e.name}': acceptable value {json.dumps(v)} of '{arg}' breaks its schema: {err.message}")
        return self


@dataclass
class ExpectedCall:
    """One call a case expects: the tool, the acceptable values of each argument, and
    the arguments compared ignoring case and white space (``loose``)."""

    name: str
    arguments: dict[str, list[Any]]
    loose: frozenset[str] = frozenset()


@dataclass
class Case:
    """One evaluation case."""

    id: str
    category: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]  # OpenAI-style {"type": "function", "function": {...}}
    expected: list[ExpectedCall]
    expected_answer: list[str] = field(default_factory=list)  # regexes a no-call reply must match

    def history(self) -> list[Message]:
        """The case's chat as the backends take it."""
        out: list[Message] = []
        pending: list[str] = []  # a result without an id answers the earliest call not yet answered
        for i, m in enumerate(self.messages):
            calls = [ToolCall(f"case_{i}_{j}", c["name"], c.get("arguments", {})) for j, c in enumerate(m.get("tool_calls", []))]
            pending += [c.id for c in calls]
            call_id = m.get("tool_call_id") or (pending[0] if m["role"] == "tool" and pending else None)
            if call_id in pending:
                pending.remove(call_id)
            out.append(Message(m["role"], m.get("content", ""), calls, call_id, m.get("name")))
        return out

    def schema(self, name: str) -> dict[str, Any] | None:
        """The parameters schema of tool ``name``, or None when it is not offered."""
        for t in self.tools:
            if t["function"]["name"] == name:
                return t["function"].get("parameters") or {"type": "object", "properties": {}}
        return None


def load_cases(path: Path | str) -> list[Case]:
    """Read a JSONL case file; any bad line is a ``ConfigError`` naming the line and field."""
    p = Path(path)
    try:
        lines = p.read_text(encoding="utf-8").splitlines()
    except OSError as e:
        raise ConfigError(f"cannot read case file {p}: {e.strerror or e}") from None
    cases: list[Case] = []
    seen: dict[str, int] = {}
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{p}, line {n}"
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as e:
            raise ConfigError(f"{where}: not valid JSON ({e.msg}, column {e.colno})") from None
        try:
            d = _CaseDef.model_validate(raw)
        except ValidationError as e:
            err = e.errors()[0]
            loc = ".".join(str(x) for x in err["loc"]) or "case"
            raise ConfigError(f"{where}: {loc}: {err['msg']}") from None
        if d.id in seen:
            raise ConfigError(f"{where}: case id '{d.id}' is already used on line {seen[d.id]}")
        seen[d.id] = n
        cases.append(
            Case(
                id=d.id,
                category=d.category,
                messages=[m.model_dump(exclude_none=True) for m in d.messages],
                tools=[t.model_dump() for t in d.tools],
                expected=[ExpectedCall(e.name, e.arguments, frozenset(e.loose)) for e in d.expected],
                expected_answer=d.expected_answer,
            )
        )
    if not cases:
        raise ConfigError(f"case file {p} holds no cases")
    return cases


def in_categories(cases: list[Case], categories: list[str]) -> list[Case]:
    """The cases of ``categories`` (all when it is empty); an unknown one is a ``ConfigError``."""
    known = list(dict.fromkeys(c.category for c in cases))
    if unknown := [c for c in categories if c not in known]:
        raise ConfigError(f"no category {unknown[0]!r} in the case file; its categories: {', '.join(known)}")
    return [c for c in cases if not categories or c.category in categories]


def sample(cases: list[Case], limit: int | None) -> list[Case]:
    """At most ``limit`` cases, taken in turn from each category (file order within one)."""
    if limit is None or limit >= len(cases):
        return list(cases)
    by_cat: dict[str, list[Case]] = {}
    for c in cases:
        by_cat.setdefault(c.category, []).append(c)
    picked: list[Case] = []
    for row in itertools.zip_longest(*by_cat.values()):
        picked += [c for c in row if c is not None]
    chosen = {id(c) for c in picked[:limit]}
    return [c for c in cases if id(c) in chosen]


# --- normalising and matching ----------------------------------------------------------

def normalize(value: Any, loose: bool = False) -> Any:
    """The form values are compared in: numbers as floats, lists and objects recursively,
    strings exactly as the tool would receive them; with ``loose``, strings case-folded
    and white space collapsed (nothing else: no punctuation is dropped)."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        return " ".join(value.split()).casefold() if loose else value
    if isinstance(value, list):
        return [normalize(v, loose) for v in value]
    if isinstance(value, dict):
        return {k: normalize(v, loose) for k, v in value.items()}
    return value


def values_equal(actual: Any, acceptable: Any, *, loose: bool = False) -> bool:
    """Whether ``actual`` matches one acceptable value, after ``normalize``.

    Types must agree (``true`` is not ``1``, ``"3"`` is not ``3``), except that an
    integer equals the same float. Lists compare element by element, in order.
    """
    return _same(normalize(actual, loose), normalize(acceptable, loose))


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def check_call(call: ParsedCall, expected: ExpectedCall) -> tuple[ErrorClass, str] | None:
    """None when ``call`` is right for ``expected``; else its error and one line why."""
    if call.name != expected.name:
        return ErrorClass.WRONG_TOOL, f"called '{call.name}', expected '{expected.name}'"
    for arg, ok in expected.arguments.items():
        if arg not in call.arguments and "" not in ok:
            return ErrorClass.MISSING_ARGUMENT, f"{call.name}: missing argument '{arg}'"
    for arg in call.arguments:
        if arg not in expected.arguments:
            return ErrorClass.UNEXPECTED_ARGUMENT, f"{call.name}: unexpected argument '{arg}'"
    for arg, ok in expected.arguments.items():
        loose = arg in expected.loose
        if arg in call.arguments and not any(values_equal(call.arguments[arg], v, loose=loose) for v in ok):
            got = json.dumps(call.arguments[arg], ensure_ascii=False)
            return ErrorClass.WRONG_VALUE, f"{call.name}: '{arg}' is {got}, expected one of {json.dumps(ok, ensure_ascii=False)}"
    return None


def match_calls(calls: list[ParsedCall], expected: list[ExpectedCall]) -> tuple[ErrorClass, str] | None:
    """None when the calls are exactly the expected ones, in any order; else the error.

    With the counts equal, the pairing with the most right calls (then the
    mildest errors) is the one judged, and its worst error is the case's.
    """
    if not expected:
        return (ErrorClass.UNNEEDED_CALL, f"called {', '.join(c.name for c in calls)}; expected an answer without a call") if calls else None
    if len(calls) != len(expected):
        return ErrorClass.WRONG_COUNT, f"{len(calls)} call(s), expected {len(expected)}"
    best: list[tuple[ErrorClass, str]] | None = None
    best_key: tuple[int, int] | None = None
    for order in itertools.permutations(calls):
        errors = [e for c, x in zip(order, expected) if (e := check_call(c, x)) is not None]
        if not errors:
            return None
        key = (len(errors), sum(len(_CALL_ERRORS) - _CALL_ERRORS.index(e[0]) for e in errors))
        if best_key is None or key < best_key:
            best, best_key = errors, key
    assert best
    return min(best, key=lambda e: _CALL_ERRORS.index(e[0]))


# --- scoring one turn -------------------------------------------------------------------


@dataclass
class CaseResult:
    """One case as run and judged; ``calls`` are exactly what the model produced."""

    id: str
    category: str
    calls: list[ParsedCall]
    text: str
    right: bool
    error: ErrorClass | None = None
    detail: str = ""
    schema_errors: list[str] = field(default_factory=list)  # calls that break their tool's schema
    attempts: int = 0  # calls the reply makes or tries to make (see call_attempts)
    lenient: list[ParsedCall] = field(default_factory=list)  # call-shaped JSON objects anywhere in the text
    lenient_errors: list[str] = field(default_factory=list)  # those that break their tool's schema
    decision: str | None = None  # the decoder's first-token decision (call or prose), when it made one
    call_mass: float | None = None  # the model's probability of a call at the first token, with that decision
    relevance: float | None = None  # the best tool's fit to the request, where the first-turn gate scored it
    more_masses: list[float] | None = None  # after each call: the probability of another (MoreCalls)
    repeated: bool = False  # the turn only repeated answered calls and was asked again (answer_on_repeat)
    finish_reason: str = "stop"
    prompt_tokens: int = 0
    prompt_tokens_evaluated: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "category": self.category,
            "calls": [{"name": c.name, "arguments": c.arguments} for c in self.calls],
            "right": self.right,
            "error": self.error.value if self.error else None,
            "detail": self.detail,
            "schema_valid": not self.schema_errors,
            "schema_errors": self.schema_errors,
            "attempts": self.attempts,
            "lenient_calls": len(self.lenient),
            "lenient_errors": self.lenient_errors,
            "decision": self.decision,
            "call_mass": self.call_mass,
            "relevance": self.relevance,
            "more_masses": self.more_masses,
            "repeated": self.repeated,
            "text": self.text,
            "finish_reason": self.finish_reason,
            "prompt_tokens": self.prompt_tokens,
            "prompt_tokens_evaluated": self.prompt_tokens_evaluated,
            "completion_tokens": self.completion_tokens,
            "seconds": round(self.seconds, 3),
        }


def disguised_call(text: str, tool_names: list[str]) -> str | None:
    """The tool a prose reply tries to call outside the envelope (a JSON object
    naming it, or ``name(`` opening a line), or None."""
    for name in tool_names:
        n = re.escape(name)
        if re.search(rf'"name"\s*:\s*"{n}"|"{n}"\s*:\s*\{{|^\W*{n}\s*\(', text, re.M):
            return name
    return None


def schema_errors(case: Case, calls: list[ParsedCall]) -> list[str]:
    """One line per call that names no offered tool or breaks its tool's JSON schema
    (string formats included, where jsonschema can check them)."""
    out = []
    for c in calls:
        schema = case.schema(c.name)
        if schema is None:
            out.append(f"'{c.name}' is not one of the tools")
            continue
        check = jsonschema.validators.validator_for(schema)(schema, format_checker=jsonschema.FormatChecker())
        err = jsonschema.exceptions.best_match(check.iter_errors(c.arguments))
        if err is not None:
            where = "/".join(str(p) for p in err.absolute_path) or "arguments"
            out.append(f"{c.name}: {where}: {err.message}")
    return out


_OBJECTS = json.JSONDecoder()


def lenient_calls(text: str) -> list[ParsedCall]:
    """Every JSON object in ``text`` shaped like a call (a string ``name`` and object
    ``arguments`` or ``parameters``), wherever it is: inside the envelope, bare, in a
    fence. How a reader that forgives the format would take the reply."""
    out, i = [], text.find("{")
    while i >= 0:
        try:
            obj, end = _OBJECTS.raw_decode(text, i)
        except (ValueError, RecursionError):
            i = text.find("{", i + 1)
            continue
        args = obj.get("arguments", obj.get("parameters")) if isinstance(obj, dict) else None
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except (ValueError, RecursionError):
                pass
        if isinstance(obj, dict) and isinstance(obj.get("name"), str) and isinstance(args, dict):
            out.append(ParsedCall(obj["name"], args))
            i = text.find("{", end)
        else:
            i = text.find("{", i + 1)
    return out


def call_attempts(text: str, calls: list[ParsedCall], tool_names: list[str]) -> int:
    """How many calls a reply makes or tries to make: its ``<tool_call>`` blocks,
    parsed or not; in a reply with none, its call-shaped JSON objects, or 1 for a
    call in disguise (``disguised_call``)."""
    blocks = max(text.count(CALL_OPEN), len(calls))
    if blocks:
        return blocks
    return len(lenient_calls(text)) or int(disguised_call(text, tool_names) is not None)


def check_answer(prose: str, patterns: list[str]) -> tuple[ErrorClass, str] | None:
    """None when ``prose`` matches every pattern (``re.search``); else the first it misses."""
    for p in patterns:
        if not re.search(p, prose):
            return ErrorClass.WRONG_ANSWER, f"the answer does not match {p!r}"
    return None


def score_turn(case: Case, gen: Generation) -> CaseResult:
    """Judge one generated turn against the case's expected calls."""
    parsed = parse(gen.text)
    calls, errors, content = parsed.calls, parsed.errors, parsed.content
    if gen.finish_reason in ("error", "context"):
        errors = [gen.error or f"the generation failed ({gen.finish_reason})"] + errors
    names = [t["function"]["name"] for t in case.tools]
    if not errors and not calls and (hidden := disguised_call(content, names)):
        errors = [f"a call to '{hidden}' outside {CALL_OPEN} tags"]
    verdict = (ErrorClass.FORMAT_FAILURE, errors[0]) if errors else match_calls(calls, case.expected)
    if verdict is None and not calls:
        verdict = check_answer(content, case.expected_answer)
    return CaseResult(
        id=case.id,
        category=case.category,
        calls=calls,
        text=gen.text,
        right=verdict is None,
        error=verdict[0] if verdict else None,
        detail=verdict[1] if verdict else "",
        schema_errors=schema_errors(case, calls),
        attempts=call_attempts(gen.text, calls, names),
        lenient=(lenient := lenient_calls(gen.text)),
        lenient_errors=schema_errors(case, lenient),
        decision=gen.decision,
        call_mass=gen.call_mass,
        relevance=gen.relevance,
        more_masses=gen.more_masses,
        repeated=gen.repeat_guard is not None,
        finish_reason=gen.finish_reason,
        prompt_tokens=gen.prompt_tokens,
        prompt_tokens_evaluated=gen.prompt_tokens_evaluated,
        completion_tokens=gen.completion_tokens,
        seconds=gen.seconds,
    )


def reference_turn(case: Case) -> str:
    """The calls a perfect model would write for ``case`` (each argument's first acceptable
    value, optional ones left out), or "" for a no-call case: a check of the case file."""
    calls = []
    for e in case.expected:
        args = {k: next(v for v in vs if v != "") for k, vs in e.arguments.items() if any(v != "" for v in vs)}
        calls.append(render_call(e.name, args))
    return "\n".join(calls)


# --- running and summarising ------------------------------------------------------------


@dataclass
class EvalReport:
    """Every case's result, and the summary of them."""

    model: str
    mode: Mode
    parallel: bool
    results: list[CaseResult]
    seconds: float = 0.0
    tool_choice: str = "auto"
    expects_call: dict[str, bool] = field(default_factory=dict)  # case id -> a call was expected
    call_threshold: float | None = AgentConfig.call_threshold
    more_calls: tuple[float, float] | None = None  # the MoreCalls probabilities (None: greedy)
    relevance_floor: tuple[float, float] | None = None  # the first-turn gate's (None: off)
    relevance_ceiling: float | None = None  # the fit at which the first turn is a call (None: off)

    def to_dict(self) -> dict[str, Any]:
        """The summary and every result, as ``--json`` prints it."""
        rs = self.results
        n = len(rs)
        cats: dict[str, list[CaseResult]] = {}
        for r in rs:
            cats.setdefault(r.category, []).append(r)
        fmt = sum(r.error is ErrorClass.FORMAT_FAILURE for r in rs)
        return {
            "model": self.model,
            "mode": self.mode,
            "parallel_calls": self.parallel if self.mode == "constrained" else None,
            "tool_choice": self.tool_choice if self.mode == "constrained" else None,
            "call_threshold": self.call_threshold if self.mode == "constrained" else None,
            "more_calls": list(self.more_calls) if self.more_calls and self.mode == "constrained" and self.parallel else None,
            "relevance_floor": list(self.relevance_floor) if self.relevance_floor and self.mode == "constrained" else None,
            "relevance_ceiling": self.relevance_ceiling if self.relevance_floor and self.mode == "constrained" else None,
            "repeats_answered_again": sum(r.repeated for r in rs),
            "cases": n,
            "right": sum(r.right for r in rs),
            "accuracy": _pct(sum(r.right for r in rs), n),
            "format_failures": fmt,
            "format_failure_rate": _pct(fmt, n),
            "by_category": {c: _pct(sum(r.right for r in v), len(v)) for c, v in cats.items()},
            "category_cases": {c: len(v) for c, v in cats.items()},
            "category_errors": {c: dict(Counter(r.error.value for r in v if r.error).most_common()) for c, v in cats.items()},
            "errors": dict(Counter(r.error.value for r in rs if r.error).most_common()),
            "schema_invalid_calls": sum(len(r.schema_errors) for r in rs),
            "calls": sum(len(r.calls) for r in rs),
            **validity(rs),
            "decision": decision_rates(self.results, self.expects_call),
            "threshold_curve": self.curve(),
            "prompt_tokens_per_case": _mean([r.prompt_tokens for r in rs]),
            "prompt_tokens_evaluated_per_case": _mean([r.prompt_tokens_evaluated for r in rs]),
            "completion_tokens_per_case": _mean([r.completion_tokens for r in rs]),
            "seconds_per_case": _mean([r.seconds for r in rs], 3),
            "seconds": round(self.seconds, 1),
            "results": [r.to_dict() for r in rs],
        }

    def curve(self) -> list[dict[str, float]]:
        """``threshold_curve`` over the cases whose first-token call mass was recorded."""
        rs = [r for r in self.results if r.call_mass is not None]
        if not rs:
            return []
        return threshold_curve([r.call_mass for r in rs if r.call_mass is not None], [self.expects_call.get(r.id, True) for r in rs])


def validity(results: list[CaseResult]) -> dict[str, Any]:
    """How well-formed the calls are: of the calls tried (``call_attempts``), those the
    agent would run (in the envelope, parsed) that fit their schema; and, read
    leniently (``lenient_calls``), the call-shaped objects that fit theirs."""
    attempts = sum(r.attempts for r in results)
    valid = sum(len(r.calls) - len(r.schema_errors) for r in results)
    lenient = sum(len(r.lenient) for r in results)
    lenient_valid = lenient - sum(len(r.lenient_errors) for r in results)
    return {
        "call_attempts": attempts,
        "valid_calls": valid,
        "valid_call_rate": _pct(valid, attempts),
        "lenient_calls": lenient,
        "lenient_valid_calls": lenient_valid,
        "lenient_valid_rate": _pct(lenient_valid, lenient),
    }


def decision_rates(results: list[CaseResult], expects_call: dict[str, bool]) -> dict[str, Any]:
    """Call or prose, judged per case: a call where one was expected, none where none
    was. The call is the decoder's own first-token decision where it made one, and
    otherwise a call tried (``attempts`` > 0), in the envelope or not."""
    def called(r: CaseResult) -> bool:
        return r.decision == "call" if r.decision in ("call", "prose") else r.attempts > 0

    need = [r for r in results if expects_call.get(r.id, True)]
    none = [r for r in results if not expects_call.get(r.id, True)]
    n_called = sum(called(r) for r in need)
    quiet = sum(not called(r) for r in none)
    return {
        "call_needed": len(need),
        "called_when_needed": n_called,
        "called_when_needed_rate": _pct(n_called, len(need)),
        "no_call_needed": len(none),
        "no_call_when_not_needed": quiet,
        "no_call_when_not_needed_rate": _pct(quiet, len(none)),
        # The two errors of the call-or-prose decision, as rates of the cases that could make them.
        "called_when_not_needed_rate": _pct(len(none) - quiet, len(none)),
        "no_call_when_needed_rate": _pct(len(need) - n_called, len(need)),
    }


THRESHOLDS = tuple(round(0.05 * i, 2) for i in range(1, 20))  # 0.05 .. 0.95


def threshold_curve(
    masses: Sequence[float], needs_call: Sequence[bool], grid: Sequence[float] = THRESHOLDS
) -> list[dict[str, float]]:
    """The two decision errors at each threshold of ``grid``, had each case called
    exactly when its first-token call mass is at least the threshold (as the decoder
    decides): called when no call was needed, as a % of those cases, and no call
    when one was, as a % of those."""
    if len(masses) != len(needs_call):
        raise ValueError(f"{len(masses)} masses but {len(needs_call)} labels")
    need = [m for m, n in zip(masses, needs_call) if n]
    none = [m for m, n in zip(masses, needs_call) if not n]
    return [
        {
            "threshold": t,
            "called_when_not_needed_rate": _pct(sum(m >= t for m in none), len(none)),
            "no_call_when_needed_rate": _pct(sum(m < t for m in need), len(need)),
        }
        for t in grid
    ]


def pick_threshold(curve: list[dict[str, float]]) -> float:
    """The threshold with the smallest sum of the two error rates (ties: nearest 0.5)."""
    if not curve:
        raise ValueError("no curve to pick from: no call masses were recorded")
    best = min(curve, key=lambda p: (p["called_when_not_needed_rate"] + p["no_call_when_needed_rate"], abs(p["threshold"] - 0.5)))
    return best["threshold"]


def _pct(part: int, whole: int) -> float:
    return round(100 * part / whole, 1) if whole else 0.0


def _mean(xs: list[float] | list[int], digits: int = 1) -> float:
    return round(sum(xs) / len(xs), digits) if xs else 0.0


def eval_config(
    mode: Mode = "constrained",
    *,
    max_tokens: int = 256,
    parallel: bool = True,
    reason: bool = False,
    engine: Engine = "gbnf",
    tool_choice: str = "auto",
    call_threshold: float | None = AgentConfig.call_threshold,
    more_calls: tuple[float, float] | None = AgentConfig.more_calls,
    parts_named: bool = AgentConfig.parts_named,
    part_tools: bool = AgentConfig.part_tools,
    relevance_floor: tuple[float, float] | None = AgentConfig.relevance_floor,
    relevance_ceiling: float | None = AgentConfig.relevance_ceiling,
) -> AgentConfig:
    """The agent settings a case is asked with: greedy, seed 0, everything else (jump-forward
    included) as ``run`` has it. ``parallel`` allows up to eight calls a turn under the grammar;
    ``tool_choice`` "required" makes every reply a call (a validity check for models that
    never start one by themselves)."""
    return AgentConfig(
        max_tokens=max_tokens, temperature=0.0, seed=0, constrained=mode == "constrained", engine=engine,
        tool_choice=tool_choice, parallel_calls=parallel, reason=reason, call_threshold=call_threshold,
        more_calls=more_calls, parts_named=parts_named, part_tools=part_tools, relevance_floor=relevance_floor,
        relevance_ceiling=relevance_ceiling,
    )


def generate_options(case: Case, config: AgentConfig, *, first: policy.FirstTurn | None = None) -> GenerateOptions:
    """How a case is asked, as the agent loop would ask it under ``config``: constrained,
    under the grammar of the case's tools, with call or prose decided at the first token
    for tool choice auto, unless the first-turn gate decided it (``first``: prose, or a
    call); unconstrained, free text."""
    if not config.constrained:
        return decoding_options(config, None, threshold=None, choice=None)
    # The same grammar for every case (up to eight calls, or one): allowing
    # several only where several are expected would tell the model the answer.
    choice = ToolChoice("none") if first == "prose" else ToolChoice.parse(config.tool_choice)
    c = build_constraint(case.tools, choice, engine=config.engine, parallel=several_calls(config), reason=config.reason)
    history = case.history()
    request = last_user_text(history)
    plan = policy.call_plan(request, history, case.tools)
    opening = request if _first_turn(history) else None
    threshold = config.ceiling_threshold if first == "call" else first_token_threshold(config, choice, opening)  # as run decides it
    return decoding_options(config, c, threshold=threshold, choice=choice, plan=plan, request=request)


def answer_no_tool(case: Case, backend: Backend, config: AgentConfig, options: GenerateOptions) -> Generation:
    """As ``run`` writes a first turn no offered tool fits: prose, with no tool list shown
    (``evidence_without_tools``), given the value a question works out (``policy.worked_out``)."""
    history = case.history()
    request = last_user_text(history)
    if worked := policy.worked_out_prompt(request):
        history = [m for m in history[:1] if m.role == "system"] + [Message("user", worked)]
    return backend.generate(history, [] if config.evidence_without_tools else case.tools, options)


def finished(case: Case, gen: Generation, config: AgentConfig) -> str:
    """A prose turn completed as ``run`` completes an answer (``policy.finished_answer``:
    what it leaves out of the evidence added, the value its question works out); any
    other turn as it stands."""
    parsed = parse(gen.text)
    if not (config.constrained and config.answer_from_evidence) or parsed.calls or parsed.errors or gen.finish_reason != "stop":
        return gen.text
    history = case.history()
    return policy.finished_answer(parsed.content.strip(), last_user_text(history), history)


def answer_due(case: Case, config: AgentConfig) -> bool:
    """As ``run`` does (``AgentConfig.answer_when_covered``): whether the results the case's
    history holds already answer its question (``policy.covered``)."""
    history = case.history()
    names = [t["function"]["name"] for t in case.tools]
    return config.answer_when_covered and config.constrained and policy.covered(last_user_text(history), history, names)


def first_turn_gate(backend: Backend, case: Case, config: AgentConfig) -> tuple[policy.FirstTurn | None, float | None]:
    """As ``run`` does at its first step: the kind of turn the case's request decides (prose,
    a call; ``decoding.first_turn``), for a case that is a first turn asked under tool choice auto."""
    history = case.history()
    if not (_first_turn(history) and config.constrained and first_token_threshold(config, ToolChoice.parse(config.tool_choice)) is not None):
        return None, None
    return first_turn(backend, last_user_text(history), case.tools, config)


def _first_turn(history: list[Message]) -> bool:
    """Whether ``history`` asks a run's first turn: the user's request, nothing answered yet."""
    return all(m.role in ("system", "user") for m in history) and bool(history) and history[-1].role == "user"


def answer_from_evidence(case: Case, backend: Backend, config: AgentConfig) -> Generation:
    """The case's turn as prose written from the evidence (``policy.answer_prompt``), with no
    call allowed, as ``run`` writes an answer that is due."""
    history = case.history()
    request = last_user_text(history)
    msgs = [m for m in history[:1] if m.role == "system"] + [Message("user", policy.answer_prompt(request, history))]
    shown = [] if config.evidence_without_tools else case.tools
    none = ToolChoice("none")
    c = build_constraint(case.tools, none, engine=config.engine, parallel=False)
    gen = backend.generate(msgs, shown, decoding_options(config, c, threshold=None, choice=none))
    gen.decision = "prose"
    return gen


def answer_on_repeat(case: Case, gen: Generation, backend: Backend, config: AgentConfig) -> Generation:
    """As ``run`` does (``AgentConfig.repeat_guard``): a turn that only repeats calls whose
    results the conversation holds is asked again, as prose written from the evidence
    (``policy.answer_prompt``), with no tool offered. Both turns' tokens and time count."""
    history = case.history()
    calls = parse(gen.text).calls
    answered = policy.answered(history)
    if not (config.repeat_guard and config.constrained and calls and all(canonical(c.name, c.arguments) in answered for c in calls)):
        return gen
    retry = answer_from_evidence(case, backend, config)
    retry.repeat_guard = [canonical(c.name, c.arguments) for c in calls]
    retry.pay_for(gen)
    retry.decision, retry.call_mass = gen.decision, gen.call_mass  # the first token's decision is the case's
    return retry


def call_asked_again(case: Case, gen: Generation, backend: Backend, config: AgentConfig) -> Generation:
    """As ``run`` does (``AgentConfig.retry_prose_calls``): a first turn the model chose to
    write as prose that writes out a call of an offered tool (``policy.call_in_prose``) is
    asked again, as a call. Both turns' tokens and time count."""
    history = case.history()
    names = [t["function"]["name"] for t in case.tools]
    prose = gen.decision == "prose" and not parse(gen.text).calls
    if not (config.retry_prose_calls and config.constrained and _first_turn(history) and prose and policy.call_in_prose(gen.text, names)):
        return gen
    options = replace(generate_options(case, config, first="call"), call_threshold=0.0)  # a call, same grammar
    retry = ask(backend, history, case.tools, options, last_user_text(history), config)
    retry.pay_for(gen)
    retry.decision, retry.call_mass = "call", gen.call_mass
    return retry


def prose_asked_again(case: Case, gen: Generation, backend: Backend, config: AgentConfig) -> Generation:
    """As ``run`` does (``AgentConfig.retry_answer_calls``): a first turn the model chose to
    call with a name the request does not say, the answer itself (``policy.answer_in_call``),
    is asked again, as prose. Both turns' tokens and time count."""
    history = case.history()
    calls = parse(gen.text).calls
    chosen = gen.decision == "call" and calls and _first_turn(history)
    if not (config.retry_answer_calls and config.constrained and chosen and policy.answer_in_call(last_user_text(history), [(c.name, c.arguments) for c in calls], case.tools)):
        return gen
    retry = answer_no_tool(case, backend, config, generate_options(case, config, first="prose"))
    retry.pay_for(gen)
    retry.decision, retry.call_mass = "prose", gen.call_mass
    return retry


def run_eval(
    backend: Backend,
    cases: list[Case],
    mode: Mode = "constrained",
    *,
    max_tokens: int = 256,
    parallel: bool = True,
    reason: bool = False,
    engine: Engine = "gbnf",
    tool_choice: str = "auto",
    call_threshold: float | None = AgentConfig.call_threshold,
    more_calls: tuple[float, float] | None = AgentConfig.more_calls,
    relevance_floor: tuple[float, float] | None = AgentConfig.relevance_floor,
    relevance_ceiling: float | None = AgentConfig.relevance_ceiling,
    on_result: Callable[[int, CaseResult], None] | None = None,
) -> EvalReport:
    """Ask ``backend`` for the first turn of every case and judge it, with the settings
    of ``eval_config``; ``parallel`` False allows one call per turn (what ``run`` does)."""
    config = eval_config(
        mode, max_tokens=max_tokens, parallel=parallel, reason=reason, engine=engine,
        tool_choice=tool_choice, call_threshold=call_threshold, more_calls=more_calls, relevance_floor=relevance_floor,
        relevance_ceiling=relevance_ceiling,
    )
    t0 = time.monotonic()
    results = []
    for i, case in enumerate(cases):
        kind, relevance = first_turn_gate(backend, case, config)
        none = kind == "prose"
        try:
            options = generate_options(case, config, first=kind)
        except ConstraintError as e:
            raise ConstraintError(f"case '{case.id}': {e}") from None
        if answer_due(case, config):
            gen = answer_from_evidence(case, backend, config)
        elif none:
            gen = answer_no_tool(case, backend, config, options)
        else:
            history = case.history()
            gen = ask(backend, history, case.tools, options, last_user_text(history), config)
            gen = answer_on_repeat(case, prose_asked_again(case, call_asked_again(case, gen, backend, config), backend, config), backend, config)
        gen.relevance = relevance
        if kind and gen.decision is None:
            gen.decision = kind  # decided before the first token, by the gate
        gen.text = finished(case, gen, config)
        r = score_turn(case, gen)
        results.append(r)
        if on_result:
            on_result(i, r)
    return EvalReport(
        backend.name, mode, parallel, results, time.monotonic() - t0, tool_choice,
        {c.id: bool(c.expected) for c in cases}, call_threshold, more_calls, relevance_floor, relevance_ceiling,
    )


def rescore(saved: dict[str, Any], cases: list[Case]) -> EvalReport:
    """A saved ``--json`` report judged again from the text of each reply (by this
    version of the scorer), its tokens and timings kept: results stay comparable when
    the scoring grows a new figure."""
    by_id = {c.id: c for c in cases}
    results = []
    for r in saved["results"]:
        case = by_id.get(r["id"])
        if case is None:
            raise ConfigError(f"case '{r['id']}' of the saved report is not in the case file")
        gen = Generation(
            r["text"], r.get("finish_reason", "stop"), r.get("prompt_tokens", 0), r.get("prompt_tokens_evaluated", 0),
            r.get("completion_tokens", 0), r.get("seconds", 0.0),
            decision=r.get("decision"), call_mass=r.get("call_mass"), relevance=r.get("relevance"), more_masses=r.get("more_masses"),
            repeat_guard=["?"] if r.get("repeated") else None,
        )
        results.append(score_turn(case, gen))
    parallel = saved.get("parallel_calls")
    return EvalReport(
        saved.get("model", "?"), saved.get("mode", "constrained"), True if parallel is None else bool(parallel),
        results, float(saved.get("seconds", 0.0)), saved.get("tool_choice") or "auto",
        {r.id: bool(by_id[r.id].expected) for r in results}, saved.get("call_threshold", AgentConfig.call_threshold),
        tuple(m) if (m := saved.get("more_calls")) else None, tuple(f) if (f := saved.get("relevance_floor")) else None,
        saved.get("relevance_ceiling"),
    )


def format_report(d: dict[str, Any]) -> str:
    """The summary of ``EvalReport.to_dict()`` as an aligned table and a few lines."""
    width = max([len(c) for c in d["by_category"]] + [len("overall")])
    grammar = {True: " (up to eight calls a turn)", False: " (one call a turn)", None: ""}[d["parallel_calls"]]
    if d.get("tool_choice") == "required":
        grammar += ", a call required"
    lines = [f"{d['model']} · {d['mode']}{grammar}", f"{'category':<{width}}  cases  accuracy"]
    for cat, acc in d["by_category"].items():
        lines.append(f"{cat:<{width}}  {d['category_cases'][cat]:>5}  {acc:>7.1f}%")
    lines.append(f"{'overall':<{width}}  {d['cases']:>5}  {d['accuracy']:>7.1f}%")
    lines.append(f"format failures: {d['format_failures']} ({d['format_failure_rate']:.1f}%)")
    errs = ", ".join(f"{k} {v}" for k, v in d["errors"].items()) or "none"
    lines.append(f"errors: {errs}")
    lines.append(f"calls breaking their tool's schema: {d['schema_invalid_calls']} of {d['calls']}")
    lines.append(
        f"calls tried: {d['call_attempts']}, well-formed and valid: {d['valid_calls']} ({d['valid_call_rate']:.1f}%); "
        f"read leniently: {d['lenient_valid_calls']} of {d['lenient_calls']} valid"
    )
    dec = d["decision"]
    lines.append(
        f"a call tried when one was needed: {dec['called_when_needed']}/{dec['call_needed']}, "
        f"none when none was: {dec['no_call_when_not_needed']}/{dec['no_call_needed']}"
    )
    if d.get("threshold_curve"):
        lines.append(f"first-token threshold with the fewest decision errors on these cases: {pick_threshold(d['threshold_curve'])}")
    lines.append(
        f"per case: {d['prompt_tokens_per_case']:.0f} prompt tokens ({d['prompt_tokens_evaluated_per_case']:.0f} evaluated), "
        f"{d['completion_tokens_per_case']:.1f} generated, {d['seconds_per_case']:.2f} s"
    )
    return "\n".join(lines)
