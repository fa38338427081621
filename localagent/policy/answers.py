"""The answer: written from the evidence, checked against it, completed with what it leaves
out; the expressions a calculation is offered; what a change did."""

from __future__ import annotations

import json
import posixpath
import re
from dataclasses import dataclass

from rapidfuzz import fuzz

from ..errors import ErrorKind
from ..messages import Message, ToolCall, ToolResult
from ..prompt import load_prompt
from ..tools.calculate import evaluate
from ..tools.workspace import WorkspaceError
from .calls import call_results
from .looks import search_hits
from .wording import _OPERATIONS, _QUOTE, asks_only, asks_which_file, computes, quoted, task_words, wants_change


@dataclass
class Evidence:
    """A successful call and what it returned."""

    call: ToolCall
    result: ToolResult

    def render(self, limit: int) -> str:
        text = self.result.content
        if len(text) > limit:
            text = text[:limit] + "\n[... cut]"
        if text.startswith("error ("):  # 'error (not_found): path ...' -> what it means
            return f"{_heading(self.call)} none: {text.split(': ', 1)[-1]}"
        return f"{_heading(self.call)}\n{text}"


def _heading(call: ToolCall) -> str:
    """What a result is, in words (not as a call, which a small model copies back)."""
    a = call.arguments
    if call.name == "read_file":
        return f"Contents of {a.get('path')}:"
    if call.name == "list_dir":
        return f"Entries of the folder {a.get('path', '.')}:"
    if call.name == "search":
        return f"Lines holding {a.get('pattern')!r} under {a.get('path', '.')}:"
    if call.name == "find_files":
        return f"Files named like {a.get('pattern')!r} under {a.get('path', '.')}:"
    if call.name == "calculate":
        return "Calculated:"
    return f"Result of {call.name}:"


def echoes_task(answer: str, task: str) -> bool:
    """Whether an answer only writes the task back (a 0.5B model's way of not answering)."""
    a, t = " ".join(answer.lower().split()), " ".join(task.lower().split())
    # or the task whole inside it: "The folder you work in holds: ...\n\n<the task>"
    return bool(a) and fuzz.ratio(a, t) >= 80 or (len(a) > 12 and a in t) or (len(t) > 12 and t in a)


_NUMBER = re.compile(r"\d+(?:[.:/-]\d+)*")


def unsupported(answer: str, task: str, history: list[Message]) -> list[str]:
    """Numbers in an answer that neither the task nor any tool result holds: a sign it was
    made up ("version 1.0.0" after reading only the README). A sum is such a number too,
    so the check asks for one more look, not for silence."""
    seen = task + "\n" + "\n".join(m.content for m in history if m.role == "tool")
    return [n for n in _NUMBER.findall(answer) if n not in seen]


def evidence(history: list[Message]) -> list[Evidence]:
    """Every successful call of the history with its result, each distinct result once, and
    the calls that failed with nothing to correct (a file that is not there is a finding)."""
    out: list[Evidence] = []
    seen: set[str] = set()
    for c, r in call_results(history):
        if "to retry:" in r or r in seen:
            continue
        seen.add(r)
        out.append(Evidence(c, ToolResult(c.id, c.name, r)))
    return out


def answer_prompt(task: str, history: list[Message], *, forced: str | None = None, limit: int = 6000) -> str:
    """The user turn an answer is written from: the question and the evidence alone, not
    the whole conversation with its errors and repeated calls. ``forced``: why the run
    stopped early, so that the answer says what was found and what was not done."""
    found = evidence(history)
    per = max(400, limit // max(1, len(found)))
    body = "\n\n".join(e.render(per) for e in found) or "(no tool call succeeded)"
    value = calculated(found)
    if value is not None and not forced:
        # Shown only the calculation, the 0.5B model wrote "the lamps in south.txt are larger", no number.
        return load_prompt("answer_calculated").strip().format(task=task, evidence=body, value=value)
    name = "answer_forced" if forced else "answer"
    return load_prompt(name).strip().format(task=task, evidence=body, reason=forced or "")


def what_was_found(history: list[Message], limit: int = 1500) -> str:
    """The evidence itself as the answer, for a model that twice wrote the task back instead
    of answering ("can you give me a list of all the functions in src/tools.py?")."""
    found = evidence(history)
    per = max(200, limit // max(1, len(found)))
    return "What was found:\n\n" + ("\n\n".join(e.render(per) for e in found) or "nothing")


def with_calculation(answer: str, found: list[Evidence]) -> str:
    """An answer that leaves out the value its calculation gave, with the calculation added:
    asked "which is larger? Give the number" and shown max(63, 48) = 63, the 0.5B model
    wrote "the lamps in south.txt are larger" with no number, however the prompt asked."""
    value = calculated(found)
    if value is None or value in answer:
        return answer
    line = next(e.result.content for e in reversed(found) if e.call.name == "calculate" and " = " in e.result.content)
    return f"{answer} ({line})" if answer else line


def calculated(found: list[Evidence]) -> str | None:
    """The value of the last calculation that succeeded, if any."""
    for e in reversed(found):
        if e.call.name == "calculate" and " = " in e.result.content:
            return e.result.content.rsplit(" = ", 1)[1].strip()
    return None


def with_found_files(answer: str, task: str, history: list[Message]) -> str:
    """A which-file answer that names none of the files the search found, with them added:
    shown "data/juniper.txt:2: The volcano ...", the 0.5B model wrote "The document in data
    talks about volcano." """
    hits = search_hits(history) if asks_which_file(task) else []
    if not hits or any(h in answer or posixpath.basename(h) in answer for h in hits):
        return answer
    return f"{answer} (found in {', '.join(hits)})" if answer else ", ".join(hits)


_NEGATIVE = re.compile(r"^(?:no files named like|no matches for) ")
_DENIES = re.compile(r"\b(not|no|none|nothing|never|missing|cannot|unable|absent)\b|n't\b", re.IGNORECASE)


def finished_answer(answer: str, task: str, history: list[Message]) -> str:
    """The answer a question's run ends with: what it leaves out of the evidence added (a
    calculated value, the files a search found, the one value read for the thing asked),
    or, when every look found nothing and the answer denies nothing, that finding."""
    found = evidence(history)
    answer = with_found_files(with_calculation(answer, found), task, history)
    if not found:
        return with_worked_out(answer, task)
    if not asks_only(task):
        return answer
    misses = [e.result.content.split(": ", 1)[-1] if e.result.content.startswith("error (") else e.result.content.splitlines()[0]
              for e in found if e.result.content.startswith(f"error ({ErrorKind.NOT_FOUND})") or _NEGATIVE.match(e.result.content)]
    if len(misses) == len(found) and not _DENIES.search(answer):
        # Shown only "no files named like 'roadmap.md'", the 0.5B model answered "docs/roadmap.md".
        return "Not found: " + "; ".join(misses)
    answer = with_functions_read(with_return_read(with_value_read(answer, task, found), task, found), task, found)
    return with_values_returned(answer, found)


def with_values_returned(answer: str, found: list[Evidence]) -> str:
    """An answer that leaves out values a tool returned as one flat JSON object, with them
    added ("(temperature: 1, unit: celsius)"), those the call itself gave aside (the city
    asked for). Asked for the weather in Budapest, the 0.5B model wrote "The weather in
    Budapest is fog." from a result that held its temperature."""
    missing = []
    for e in found:
        try:
            value = json.loads(e.result.content)
        except ValueError:
            continue
        if not isinstance(value, dict):
            continue
        given = {str(v).lower() for v in e.call.arguments.values()}
        for k, v in value.items():
            text = str(v)
            if isinstance(v, (str, int, float)) and not isinstance(v, bool) and text.lower() not in given and text.lower() not in answer.lower():
                missing.append(f"{k}: {text}")
    return f"{answer} ({', '.join(missing)})" if missing and answer else answer


def _reads(found: list[Evidence]) -> list[Evidence]:
    """The reads of ``found`` that returned the file's text (not an error)."""
    return [e for e in found if e.call.name == "read_file" and not e.result.content.startswith("error (")]


_KEYED = re.compile(r"^\s*([A-Za-z][\w .-]{1,40}?)\s*[:=]\s*(\S.{0,80}?)\s*$")
_STATED = re.compile(r"^\s*(?:the\s+)?([A-Za-z][\w -]{1,40}?)\s+(?:is|was)\s+(\S.{0,80}?)\.?\s*$", re.IGNORECASE)  # "The door code is 7779."


def with_value_read(answer: str, task: str, found: list[Evidence]) -> str:
    """An answer that leaves out the one value the reads hold for what the question names
    ("Launch code: 1605" for "the launch code"), with that line added: asked to "dig out"
    the launch code, the 0.5B model wrote "The launch code was found in ops/launch.txt."."""
    if computes(task) or asks_which_file(task):
        return answer
    words = set(re.findall(r"[a-z0-9]+", task.lower()))
    lines: dict[str, str] = {}
    for e in _reads(found):
        for line in e.result.content.splitlines():
            m = _KEYED.match(line) or _STATED.match(line)
            key = re.findall(r"[a-z0-9]+", m.group(1).lower().replace("_", " ")) if m else []
            if m and key and all(k in words for k in key):
                lines.setdefault(m.group(2).strip().strip("\"'").lower(), line.strip())
    if len(lines) != 1 or next(iter(lines)) in answer.lower():
        return answer
    return f"{answer} ({next(iter(lines.values()))})" if answer else next(iter(lines.values()))


_RETURNS = re.compile(r"\breturn\w*|\bgives? back\b|\bcomes? back\b|\bhands? back\b|\boutputs?\b", re.IGNORECASE)


def returned(source: str, name: str) -> list[str]:
    """The values the function ``name`` returns in a source text (``def name(...):`` and its
    indented body's ``return X`` lines), each once."""
    m = re.search(rf"^([ \t]*)def\s+{re.escape(name)}\s*\(.*$", source, re.MULTILINE)
    if m is None:
        return []
    out: list[str] = []
    for line in source[m.end():].splitlines()[1:]:
        if line.strip() and len(line) - len(line.lstrip()) <= len(m.group(1)):
            break  # the body ends where the indentation does
        if r := re.match(r"\s+return\s+(.+?)\s*$", line):
            out += [r.group(1)] if r.group(1) not in out else []
    return out


_FUNCTIONS = re.compile(r"\bfunctions\b|\bfunction names\b|\b(what|which|every|each|all the) functions?\b", re.IGNORECASE)


def with_functions_read(answer: str, task: str, found: list[Evidence]) -> str:
    """An answer to which functions a file defines that leaves some out, with the names its
    code read defines added: asked "functions in app/utils.py? names please", the 0.5B model
    named one of three."""
    if not _FUNCTIONS.search(task) or _RETURNS.search(task):
        return answer
    for e in _reads(found):
        names = list(dict.fromkeys(re.findall(r"^[ \t]*(?:async\s+)?def\s+([A-Za-z_]\w*)\s*\(", e.result.content, re.MULTILINE)))
        if names and any(not re.search(rf"\b{re.escape(n)}\b", answer) for n in names):
            listed = f"the functions in {e.call.arguments.get('path', 'the file')}: {', '.join(names)}"
            return f"{answer} ({listed})" if answer else listed[0].upper() + listed[1:]
    return answer


def with_return_read(answer: str, task: str, found: list[Evidence]) -> str:
    """An answer to what a function returns that leaves out the one value its code read
    returns, replaced by that value: asked what merge_maps returns, the 0.5B model gave
    the return value of the function after it."""
    if not _RETURNS.search(task):
        return answer
    values = {
        (name, v, str(e.call.arguments.get("path", "")))
        for e in _reads(found)
        for name in re.findall(r"[A-Za-z_]\w*", task) for v in returned(e.result.content, name)
    }
    if len(values) != 1:
        return answer
    name, value, path = values.pop()
    if value.strip("\"'") in answer:
        return answer
    return f"{name} in {path} returns {value}."


def expressions(task: str, history: list[Message], limit: int = 6) -> list[str]:
    """The expressions ``calculate`` is offered for a question that asks for something
    worked out: over the numbers the task gives, or those on the lines of the results that
    name the task's words, and over the text the task quotes. Empty: none to offer (the
    expression is free). Free, the 0.5B model wrote 'tickets + bottles' after reading
    'tickets: 40' and 'tickets: 56', and "stone == 'stone'" for 'stone' backwards."""
    words = [w for w in task_words(task) if not any(rx.fullmatch(w) for rx in _OPERATIONS.values())]
    rx = re.compile(r"\b(" + "|".join(map(re.escape, words)) + r")\b", re.IGNORECASE) if words else None
    nums = re.findall(r"(?<![\w.])\d+(?:\.\d+)?(?![\w.])", task)
    for m in (m for m in history if m.role == "tool" and not m.content.startswith("error (")):
        for line in m.content.splitlines():
            if rx is not None and rx.search(line) and not line.startswith("[end of"):
                nums += re.findall(r"(?<![\w.-])\d+(?:\.\d+)?(?![\w.-])", line)
    ops: dict[str, list[str]] = {}
    if 2 <= len(nums) <= limit:
        ops["sum"], ops["max"], ops["min"] = [" + ".join(nums)], [f"max({', '.join(nums)})"], [f"min({', '.join(nums)})"]
        if len(nums) == 2:
            ops["difference"], ops["product"] = [f"{nums[0]} - {nums[1]}"], [f"{nums[0]} * {nums[1]}"]
    texts = quoted(task)
    if texts:
        ops["reverse"], ops["length"] = [f"{q!r}[::-1]" for q in texts], [f"len({q!r})" for q in texts]
        ops["upper"], ops["lower"] = [f"{q!r}.upper()" for q in texts], [f"{q!r}.lower()" for q in texts]
    # The operation the question names, when it names exactly one: given the choice, the
    # 0.5B model summed for "which is larger" and took the length for "backwards".
    named = [op for op, rx in _OPERATIONS.items() if op in ops and rx.search(task)]
    if len(named) > 1:  # "convert every lowercase letter to uppercase": the one it turns into
        named = [op for op in named if re.search(r"\b(?:to|into)\s+(?:all\s+)?(?:" + _OPERATIONS[op].pattern + ")", task, re.IGNORECASE)] or named
    return ops[named[0]] if len(named) == 1 else [e for es in ops.values() for e in es]


_HOW_MANY = re.compile(r"\bhow many\b|\bcount\b|\bnumber of\b", re.IGNORECASE)
# A count of part of the list: "how many of these are red", "which of them start with b".
_PART_OF = re.compile(r"\b(?:of|among)\s+(?:these|them|those|the following)\b|\b(?:which|that|whose)\s+(?:are|is|start|end|have|has)\b", re.IGNORECASE)
_ITEM = re.compile(r"[A-Za-z][A-Za-z'-]*(?: [A-Za-z][A-Za-z'-]*){0,2}")


def counted(task: str) -> list[str] | None:
    """The items of a list a question asks to count: three or more short items set apart by
    commas (the last perhaps by "and"), a sentence, a colon's whole tail or a clause set apart
    by a dash of their own ("How many items are in this list: pear, plum, fig?", "fig, kiwi,
    plum - how many is that?"); None where the question counts a
    part of them or there is no such list. A list inside the question's own sentence is not
    given to count ("How many lights are on in the kitchen, office and bedroom?")."""
    if not _HOW_MANY.search(task) or _PART_OF.search(task):
        return None
    for chunk in re.split(r"[:?.!](?:\s+|$)|\s[-\u2013\u2014]\s", task):  # a spaced dash sets a clause apart too
        items = [i.strip() for i in re.split(r",\s*(?:and\s+)?|\s+and\s+", chunk.strip())]
        if len(items) >= 3 and all(_ITEM.fullmatch(i) for i in items):
            return items
    return None


def worked_out(task: str) -> tuple[str, str] | None:
    """The one expression a question that asks for something worked out names over its own
    numbers or quoted text ("What is 36 plus 79?": 36 + 79), or the count of a list it gives
    (``counted``), with its exact value; None where it names none, or several. For a
    question no offered tool fits: asked to spell "necessary" backwards, the 0.5B model
    wrote "necessary"; to count five fruits, it searched the folder for them."""
    exprs = expressions(task, []) if computes(task) else []
    if not exprs and (items := counted(task)):
        exprs = [f"len({items!r})"]
    if len(exprs) != 1:
        return None
    try:
        value = evaluate(exprs[0])
    except WorkspaceError:
        return None
    return exprs[0], str(value)


def with_worked_out(answer: str, task: str) -> str:
    """An answer that leaves out the value its question works out (``worked_out``): that value,
    in its place. Given "'Where is the station'.upper() = WHERE IS THE STATION", the 0.5B model
    answered "The station is in the capital letters."."""
    done = worked_out(task)
    return answer if done is None or done[1] in answer else done[1]


def worked_out_prompt(task: str) -> str | None:
    """The user turn that asks for the answer to ``task`` with its value worked out
    (``worked_out``); None where there is none."""
    done = worked_out(task)
    if done is None:
        return None
    return load_prompt("answer_worked_out").strip().format(task=task, expression=done[0], value=done[1])


_TOLD = re.compile(r"\b(what|which|who|where|when|why|how|tell|say|report|show|let me know|explain|confirm|list)\b", re.IGNORECASE)


def change_report(task: str, history: list[Message]) -> str | None:
    """What a change task's changes did, in the tools' own words (with the text written),
    as its answer; None when the task also asks to be told something, or nothing changed."""
    if not wants_change(task) or _TOLD.search(_QUOTE.sub("", task)):
        return None
    lines = []
    for c, r in call_results(history):
        if c.name not in ("write_file", "edit_file") or r.startswith("error ("):
            continue
        a = c.arguments
        what = f"{a.get('old')!r} -> {a.get('new')!r}" if c.name == "edit_file" else repr(a.get("content", ""))
        lines.append(f"{r.splitlines()[0]}: {what}" if len(what) <= 200 else r.splitlines()[0])
    return "Done: " + "; ".join(lines) if lines else None
