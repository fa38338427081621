"""Generated GBNF constraints against strings they must and must not accept.

The strings are checked by llama.cpp's grammar sampler itself, token by token, with
only the tokenizer of the default model loaded (``vocab_only``: no weights, no
inference), so what passes here is exactly what the decoder will allow. The llguidance
engine's own strings: tests/test_llguidance_engine.py.
"""

from __future__ import annotations

import json
import time
from typing import Any, Iterator

import pytest

from localagent.errors import ConstraintError
from localagent.constraint.grammar import Constraint, ToolChoice, build_constraint

READ = {
    "type": "function",
    "function": {
        "name": "read_file",
        "description": "Read a file.",
        "parameters": {
            "type": "object",
            "properties": {"path": {"type": "string"}, "offset": {"type": "integer"}},
            "required": ["path"],
            "additionalProperties": False,
        },
    },
}
UNITS = {
    "type": "function",
    "function": {
        "name": "convert",
        "description": "Convert units.",
        "parameters": {
            "type": "object",
            "properties": {
                "value": {"type": "number"},
                "unit": {"type": "string", "enum": ["km", "mi"]},
                "tags": {"type": "array", "items": {"type": "string"}},
                "opts": {
                    "type": "object",
                    "properties": {"round": {"type": "boolean"}},
                    "required": ["round"],
                    "additionalProperties": False,
                },
            },
            "required": ["value", "unit"],
            "additionalProperties": False,
        },
    },
}
TOOLS = [READ, UNITS]


def call(name: str, args: dict[str, Any]) -> str:
    body = json.dumps({"name": name, "arguments": args}, ensure_ascii=False)
    return "<tool_call>\n" + body + "\n</tool_call>"


def _load_vocab(model_id: str) -> Any:
    from llama_cpp import Llama

    from localagent.provision import resolve_model

    return Llama(str(resolve_model(model_id, progress=False)), vocab_only=True, verbose=False)


@pytest.fixture(scope="session")
def qwen_vocab() -> Any:
    return _load_vocab("qwen2.5-coder-0.5b")


@pytest.fixture
def vocab(qwen_vocab: Any) -> Any:
    return qwen_vocab


def build(tools: list[dict[str, Any]], choice: ToolChoice = ToolChoice(), **kw: Any) -> Constraint:
    return build_constraint(tools, choice, engine="gbnf", **kw)


def accepts(vocab: Any, c: Constraint, text: str) -> bool:
    """Whether the constraint accepts ``text`` in full, then allows end of sequence."""
    import llama_cpp

    from localagent.constraint.llama_grammar import GrammarMatcher

    m = GrammarMatcher(llama_cpp.llama_model_get_vocab(vocab.model), vocab.n_vocab(), c.text)
    try:
        for tok in vocab.tokenize(text.encode(), add_bos=False, special=True):
            if not m.allows(tok):
                return False
            m.accept(tok)
        return m.allows(vocab.token_eos())
    finally:
        m.close()


GOOD_CALLS = [
    call("read_file", {"path": "src/main.py"}),
    call("read_file", {"path": "a b.txt", "offset": 10}),
    call("read_file", {"path": "caf\u00e9/\u00fcber.md"}),
    call("convert", {"value": 3.5, "unit": "km"}),
    call("convert", {"value": -2, "unit": "mi", "tags": ["x", "y"], "opts": {"round": True}}),
    call("convert", {"value": 1e3, "unit": "km", "tags": []}),
]
BAD_CALLS = [
    call("read_fil", {"path": "a"}),  # unknown tool
    call("read_file", {}),  # missing required argument
    call("read_file", {"path": 3}),  # wrong type
    call("read_file", {"path": "a", "extra": 1}),  # unexpected argument
    call("convert", {"value": "3", "unit": "km"}),  # number as string
    call("convert", {"value": 3, "unit": "miles"}),  # not in the enum
    call("convert", {"value": 3, "unit": "km", "opts": {}}),  # nested required missing
    call("convert", {"value": 3, "unit": "km", "tags": [1]}),  # wrong item type
    '<tool_call>\n{"name": "read_file", "arguments": {"path": "a"}\n</tool_call>',  # malformed JSON
    '<tool_call>\n{"name": "read_file", "arguments": {"path": "a"}}',  # not closed
    '{"name": "read_file", "arguments": {"path": "a"}}',  # bare JSON: a call in disguise
    '```json\n{"name": "read_file", "arguments": {"path": "a"}}\n```',  # fenced JSON
    ' <tool_call>\n{"name": "read_file", "arguments": {"path": "a"}}\n</tool_call>',  # leading space
    "",  # nothing at all
]
PROSE = [
    "The answer is 4.", "Paris.", "It is 4 lines long, and it says: hello, world.",
    "It says: hello <b>world</b>.", "Use `ls` to list files.", "A dict like {1: 2}.",  # tags, backticks, braces
]
BAD_PROSE = [
    "Sure! <tool_call>\n" + call("read_file", {"path": "a"}),
    "Here it is: ```json\n{}\n```",
    'Call {"name": "read_file"} now',
    'It is ``\n{\n  "name": "read_file"\n}',  # a call across lines, seen in the eval
    "\nHello",
]


@pytest.mark.parametrize("text", GOOD_CALLS)
def test_auto_accepts_well_formed_calls(vocab: Any, text: str) -> None:
    assert accepts(vocab, build(TOOLS), text)


@pytest.mark.parametrize("text", BAD_CALLS)
def test_auto_rejects_malformed_calls(vocab: Any, text: str) -> None:
    assert not accepts(vocab, build(TOOLS), text)


@pytest.mark.parametrize("text", PROSE)
def test_auto_accepts_prose(vocab: Any, text: str) -> None:
    assert accepts(vocab, build(TOOLS), text)


@pytest.mark.parametrize("text", BAD_PROSE)
def test_prose_cannot_open_a_call_in_disguise(vocab: Any, text: str) -> None:
    assert not accepts(vocab, build(TOOLS), text)


def test_tool_choice_is_enforced(vocab: Any) -> None:
    a_call, prose = GOOD_CALLS[0], PROSE[0]
    required = build(TOOLS, ToolChoice("required"))
    assert accepts(vocab, required, a_call) and not accepts(vocab, required, prose)
    none = build(TOOLS, ToolChoice("none"))
    assert accepts(vocab, none, prose) and not accepts(vocab, none, a_call)
    named = build(TOOLS, ToolChoice.parse("convert"))
    assert accepts(vocab, named, GOOD_CALLS[3]) and not accepts(vocab, named, a_call)
    assert not accepts(vocab, named, prose)


def test_parallel_calls_can_be_switched_off(vocab: Any) -> None:
    two = GOOD_CALLS[0] + "\n" + GOOD_CALLS[3]
    assert accepts(vocab, build(TOOLS, parallel=True), two)
    assert not accepts(vocab, build(TOOLS, parallel=False), two)
    assert accepts(vocab, build(TOOLS, parallel=False), GOOD_CALLS[0])
    nine = "\n".join([GOOD_CALLS[0]] * 9)
    assert not accepts(vocab, build(TOOLS, parallel=True), nine), "at most eight calls a turn"


def test_reason_option_puts_one_sentence_before_the_call(vocab: Any) -> None:
    g = build(TOOLS, ToolChoice("required"), reason=True)
    assert accepts(vocab, g, "I need the file first.\n" + GOOD_CALLS[0])
    assert not accepts(vocab, g, GOOD_CALLS[0])
    assert not accepts(vocab, g, "One.\nTwo.\n" + GOOD_CALLS[0])


def test_enum_narrowed_paths(vocab: Any) -> None:
    live = json.loads(json.dumps(READ))
    live["function"]["parameters"]["properties"]["path"] = {"enum": ["src/main.py", "notes.txt"]}
    g = build([live])
    assert accepts(vocab, g, call("read_file", {"path": "notes.txt"}))
    assert not accepts(vocab, g, call("read_file", {"path": "src/mian.py"}))


def test_enum_values_with_quotes_and_backslashes(vocab: Any) -> None:
    # llama-cpp-python's converter left backslashes unescaped: 'name = "x"' broke the grammar.
    live = json.loads(json.dumps(READ))
    values = ['name = "tidepool"', "C:\\temp\\a.txt", 'say "hi"\\n']
    live["function"]["parameters"]["properties"]["path"] = {"enum": values}
    g = build([live])
    for v in values:
        assert accepts(vocab, g, call("read_file", {"path": v}))
    assert not accepts(vocab, g, call("read_file", {"path": "name = "}))


def test_unknown_named_tool_fails_closed() -> None:
    with pytest.raises(ConstraintError, match="not a tool"):
        build(TOOLS, ToolChoice.parse("nope"))
    with pytest.raises(ConstraintError, match="no tools"):
        build([], ToolChoice("required"))


def test_unparseable_grammar_fails_closed(vocab: Any) -> None:
    import llama_cpp

    from localagent.constraint.llama_grammar import GrammarMatcher

    with pytest.raises(ConstraintError):
        GrammarMatcher(llama_cpp.llama_model_get_vocab(vocab.model), vocab.n_vocab(), "root ::= undefined-rule")


def test_grammar_is_built_once_and_fast() -> None:
    tools = []
    for i in range(10):
        t = json.loads(json.dumps(UNITS))
        t["function"]["name"] = f"tool_{i}"
        tools.append(t)
    t0 = time.perf_counter()
    g1 = build(tools).text
    first_ms = (time.perf_counter() - t0) * 1000
    t0 = time.perf_counter()
    g2 = build(tools).text
    cached_ms = (time.perf_counter() - t0) * 1000
    assert g1 == g2 and cached_ms < first_ms
    assert first_ms < 200  # generous for a loaded CI machine; the bench reports the real figure
    for i in range(10):
        assert f'\\"tool_{i}\\"' in g1


def test_large_bounds_are_left_to_the_validator(vocab: Any) -> None:
    # A maxLength of 500 once crashed llama.cpp's grammar parser (stack overflow).
    big = {
        "type": "function",
        "function": {
            "name": "note",
            "description": "Write a note.",
            "parameters": {
                "type": "object",
                "properties": {"text": {"type": "string", "maxLength": 500}, "tag": {"type": "string", "maxLength": 3}},
                "required": ["text", "tag"],
                "additionalProperties": False,
            },
        },
    }
    c = build([big], ToolChoice("required"))
    assert accepts(vocab, c, call("note", {"text": "x" * 80, "tag": "abc"}))
    assert not accepts(vocab, c, call("note", {"text": "x", "tag": "abcd"}))


# -- strings are always JSON; formats and patterns where the engine has a safe rule ---------

def _one(schema: dict[str, Any], name: str = "f") -> list[dict[str, Any]]:
    props = {"x": schema}
    return [{"type": "function", "function": {"name": name, "parameters": {
        "type": "object", "properties": props, "required": ["x"], "additionalProperties": False}}}]


def _arg(x: str, name: str = "f") -> str:
    """A call whose argument ``x`` is written exactly as given (raw text between the quotes)."""
    return "<tool_call>\n" + '{"name": "' + name + '", "arguments": {"x": "' + x + '"}}' + "\n</tool_call>"


def _is_json(x: str) -> bool:
    try:
        json.loads('"' + x + '"')
        return True
    except ValueError:
        return False


RAW_CONTROL = ["line one\nline two", "a\tb", "bell\x07"]


@pytest.mark.parametrize("schema", [{"type": "string"}, {"type": "string", "maxLength": 20}, {"type": "string", "pattern": "^.+$"}])
def test_strings_cannot_hold_raw_control_characters(vocab: Any, schema: dict[str, Any]) -> None:
    # llama-cpp-python's converter allowed them ([^"\\]): a raw newline in an argument
    # made a call that is not JSON, under the constraint.
    c = build(_one(schema), ToolChoice("required"))
    for x in RAW_CONTROL:
        assert not _is_json(x) and not accepts(vocab, c, _arg(x)), repr(x)
    if "pattern" in schema:  # a patterned string is written without escapes ('.' is no newline anyway)
        assert accepts(vocab, c, _arg("line one"))
    else:
        assert accepts(vocab, c, _arg("line one\\nline two"))  # the escaped form


def test_free_form_object_values_are_json_too(vocab: Any) -> None:
    c = build(_one({"type": "object"}), ToolChoice("required"))
    ok = '<tool_call>\n{"name": "f", "arguments": {"x": {"k": "v\\n"}}}\n</tool_call>'
    bad = '<tool_call>\n{"name": "f", "arguments": {"x": {"k": "v\n"}}}\n</tool_call>'
    assert accepts(vocab, c, ok) and not accepts(vocab, c, bad)


def test_a_value_described_but_not_typed_takes_any_json_value(vocab: Any) -> None:
    # A schema of words only ({"description": ...}) allows any value in JSON Schema; the
    # converter reads only an empty schema that way and refused such a tool outright.
    c = build(_one({"description": "The training data."}), ToolChoice("required"))
    for x in ('"rows.csv"', "[1, 2]", '{"k": null}', "3.5"):
        assert accepts(vocab, c, '<tool_call>\n{"name": "f", "arguments": {"x": ' + x + '}}\n</tool_call>'), x
    assert not accepts(vocab, c, '<tool_call>\n{"name": "f", "arguments": {"x": rows}}\n</tool_call>')


FORMATS = {  # format: (values that must be accepted, values that must not)
    "date": (["2024-02-29", "1999-12-31"], ["2024-13-01", "24-01-01", "2024/01/01", "today"]),
    "date-time": (["2024-02-29T10:30:00Z"], ["2024-02-29 10:30:00", "2024-02-29T25:00:00Z", "now"]),
    "uuid": (["123e4567-e89b-42d3-a456-426614174000"], ["123e4567e89b42d3a456426614174000", "not-a-uuid"]),
    "time": (["10:30:00Z", "23:59:59+02:00"], ["24:00:00Z", "10:30", "noon"]),
}


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_string_formats_the_engine_has_a_rule_for(vocab: Any, fmt: str) -> None:
    from localagent.constraint.grammar import GRAMMAR_FORMATS

    good, bad = FORMATS[fmt]
    c = build(_one({"type": "string", "format": fmt}), ToolChoice("required"))
    for x in good:
        assert accepts(vocab, c, _arg(x)), x
    enforced = fmt in GRAMMAR_FORMATS
    for x in bad:
        assert accepts(vocab, c, _arg(x)) != enforced, x


@pytest.mark.parametrize("fmt", ["email", "uri", "hostname", "ipv4"])
def test_other_formats_fall_back_to_a_plain_string(vocab: Any, fmt: str) -> None:
    # The converter has no JSON-safe rule for these: the grammar builds, allows any JSON
    # string, and leaves the format to the validator. It does not fail the step.
    c = build(_one({"type": "string", "format": fmt}), ToolChoice("required"))
    assert accepts(vocab, c, _arg("anything at all"))
    assert not accepts(vocab, c, _arg("raw\nnewline"))


PATTERNS = [  # pattern: (accepted, rejected), as JSON Schema means it (a search)
    ("^[A-Z]{3}-[0-9]+$", ["ABC-12"], ["AB-12", "ABC-", "abc-12", "xABC-12"]),
    ("^\\d{4}$", ["2024"], ["202", "20245", "abcd"]),
    ("^[a-z]+(?:_[a-z]+)*$", ["snake_case"], ["Snake", "a__b", "_a"]),
    ("^a.c$", ["abc", "a c"], ["ac", 'a\\"c', "a\\\\c"]),  # '.' never writes a quote or backslash
    ("[0-9]", ["room 101", "7"], ["no digits"]),  # unanchored: contains a digit
    ("^v|beta$", ["v1.2", "v", "1.0-beta"], ["1.0", "beta1"]),
    ("^[a-z]{1,500}$", ["abc"], ["ABC", ""]),  # a bound this big is left to the validator, not crashed on
]


@pytest.mark.parametrize("pattern,good,bad", PATTERNS, ids=[p[0] for p in PATTERNS])
def test_patterns(vocab: Any, pattern: str, good: list[str], bad: list[str]) -> None:
    c = build(_one({"type": "string", "pattern": pattern}), ToolChoice("required"))
    for x in good:
        assert accepts(vocab, c, _arg(x)), x
    for x in bad:
        assert not accepts(vocab, c, _arg(x)), x


@pytest.mark.parametrize("pattern", ["^(?=a)\\w+$", "\\bword\\b", '^say "hi"$', "^(a)\\1$", "^(a$", "a^b"])
def test_patterns_the_rewrite_cannot_take_are_left_to_the_validator(vocab: Any, pattern: str) -> None:
    # llama-cpp-python's converter refuses an unanchored pattern (the whole grammar failed
    # to build): a pattern is a check the validator makes
    # anyway, so it must not stop the step; the string stays JSON.
    c = build(_one({"type": "string", "pattern": pattern}), ToolChoice("required"))
    assert accepts(vocab, c, _arg("anything"))
    assert not accepts(vocab, c, _arg('a"b'))


def test_properties_named_like_keywords_are_not_keywords(vocab: Any) -> None:
    # The search tool has an argument called "pattern": it is a name, not a regex.
    t = [{"type": "function", "function": {"name": "search", "parameters": {
        "type": "object",
        "properties": {"pattern": {"type": "string"}, "format": {"type": "string", "enum": ["a", "b"]},
                       "maxLength": {"type": "integer"}},
        "required": ["pattern", "format", "maxLength"], "additionalProperties": False}}}]
    c = build(t, ToolChoice("required"))
    assert accepts(vocab, c, call("search", {"pattern": "TODO", "format": "a", "maxLength": 3}))
    assert not accepts(vocab, c, call("search", {"pattern": "TODO", "format": "c", "maxLength": 3}))


REWRITTEN = ["^[A-Z]{3}-[0-9]+$", "^a.c$", "[0-9]", "^v|beta$", "^[^x]+$", "^\\w+@\\w+\\.com$", "^[ -~]{2,5}$",
             "^(?:ab|cd)+$", "colou?r", "^\\S+\\s\\S+$", "^[\\d.]+$", "^caf\u00e9|th\u00e9$"]


@pytest.mark.parametrize("pattern", REWRITTEN)
def test_the_rewritten_pattern_allows_only_strings_the_original_matches(pattern: str) -> None:
    import re

    from hypothesis import given, settings
    from hypothesis import strategies as st

    from localagent.constraint.grammar import json_safe_pattern

    safe = json_safe_pattern(pattern)
    assert safe is not None and safe.startswith("^") and safe.endswith("$")
    unsafe = re.compile(r'["\\\x00-\x1f]')
    # JSON Schema's regexes are ECMA-262's: \d and \w are ASCII, \s is Unicode white space.
    space = "\t\n\x0b\x0c\r \xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
    original = re.compile(pattern.replace("\\S", f"[^{space}]").replace("\\s", f"[{space}]"), re.ASCII)

    @settings(max_examples=150)
    @given(st.one_of(st.from_regex(pattern), st.text(max_size=12)))
    def check(s: str) -> None:
        ok_json = unsafe.search(s) is None
        # Sound: whatever the rewrite allows matches the original and needs no JSON escape.
        if re.fullmatch(safe, s):
            assert original.search(s) and ok_json, s
        # And complete for those strings (no bound here is above the grammar's cap).
        if ok_json and original.search(s):
            assert re.fullmatch(safe, s), s

    check()


def test_the_grammar_files_spell_the_envelope_formats_defines() -> None:
    # grammars/calls.gbnf is data, so it cannot import formats.CALL_OPEN: this keeps its spelling
    # the one formats defines (the Lark text and the generic prompt are built from the constants).
    from localagent.constraint.grammar import load_grammar_file
    from localagent.constraint.llguidance_engine import CALLS
    from localagent.formats import CALL_CLOSE, CALL_OPEN

    block = f"{json.dumps(CALL_OPEN + chr(10))} call {json.dumps(chr(10) + CALL_CLOSE)}"
    assert f"call-block ::= {block}" in load_grammar_file("calls")
    assert f"call_block: {block}" in CALLS


def test_both_grammars_bound_a_turn_at_max_calls() -> None:
    # calls.gbnf is data: this keeps its bound the policy's (the Lark text is built from it).
    from localagent.constraint.grammar import load_grammar_file
    from localagent.constraint.llguidance_engine import CALLS
    from localagent.constraint import MAX_CALLS

    repeat = f'("\\n" call-block){{0,{MAX_CALLS - 1}}}'
    assert f"calls-many ::= call-block {repeat}" in load_grammar_file("calls")
    assert f"calls_many: call_block {repeat.replace('-', '_')}" in CALLS


def test_an_auto_grammar_decided_keeps_its_calls_or_its_prose() -> None:
    from localagent.constraint.grammar import build_grammar, decided_grammar

    tools = [{"type": "function", "function": {"name": "read_file", "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}}]
    for parallel, calls in ((False, "calls-one"), (True, "calls-many")):
        auto = build_grammar(tools, ToolChoice("auto"), parallel=parallel)
        call, prose = decided_grammar(auto, "call"), decided_grammar(auto, "prose")
        assert call is not None and prose is not None
        assert call.splitlines()[0] == f"root ::= {calls}" and prose.splitlines()[0] == "root ::= prose"
        assert call.splitlines()[1:] == auto.splitlines()[1:] == prose.splitlines()[1:]
    assert decided_grammar(build_grammar(tools, ToolChoice("required")), "call") is None
    assert decided_grammar(build_grammar(tools, ToolChoice("auto"), reason=True), "prose") is None


def test_a_string_whose_examples_are_codes_takes_a_code_in_capitals(vocab: Any) -> None:
    def tool(description: str, **extra: Any) -> dict[str, Any]:
        return {"type": "function", "function": {"name": "get_stock_price", "parameters": {"type": "object", "properties": {
            "symbol": {"type": "string", "description": description, **extra}}, "required": ["symbol"]}}}

    ticker = build([tool("Ticker symbol, e.g. 'AAPL'.")])
    assert accepts(vocab, ticker, call("get_stock_price", {"symbol": "NFLX"}))
    assert accepts(vocab, ticker, call("get_stock_price", {"symbol": "BRK.B"}))
    assert not accepts(vocab, ticker, call("get_stock_price", {"symbol": "Netflix"}))
    # Not where an example is no code, or the schema says what the string is.
    for free in (tool("Ticker symbol or company name, e.g. 'AAPL' or 'Apple'."), tool("Ticker symbol."),
                 tool("Ticker, e.g. 'AAPL'.", enum=["AAPL", "Netflix"])):
        assert accepts(vocab, build([free]), call("get_stock_price", {"symbol": "Netflix"}))
