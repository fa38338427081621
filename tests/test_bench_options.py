"""The benchmark asks the model through run's options path (``decoding_options``), and what the
in-process backend reads from those options is what the benchmark used to build by hand."""

from __future__ import annotations

from localagent.backends.base import GenerateOptions
from localagent.constraint import grammar
from localagent.constraint.grammar import ToolChoice, build_constraint, build_grammar, clear_grammar_cache
from localagent.evaluation.bench import _options, ten_tools

# What LlamaBackend and its decoder read (tool_choice is for servers; the seed is unused at
# temperature 0, where the sampler takes the argmax).
READ = (
    "max_tokens", "temperature", "top_k", "top_p", "min_p", "repeat_penalty", "prompt_lookup",
    "grammar", "lark", "call_threshold", "call_heads", "call_keys",
)


def _read(o: GenerateOptions, *, parallel: bool = True) -> dict[str, object]:
    out = {k: getattr(o, k) for k in READ}
    if parallel:  # only read by jump-forward, under a constraint
        out["parallel"] = o.parallel
    return out


def test_the_bench_options_are_those_it_built_by_hand() -> None:
    tools = ten_tools()
    c = build_constraint(tools, ToolChoice("required"), parallel=False)
    ours = _options(48, c, ToolChoice("required"))
    hand = GenerateOptions(max_tokens=48, constraint=c, jump_forward=True, parallel=False)
    assert _read(ours) == _read(hand) and ours.call_heads
    no_jump = _options(48, c, ToolChoice("required"), jump_forward=False)
    assert _read(no_jump) == _read(GenerateOptions(max_tokens=48, constraint=c, parallel=False))
    for n in (1, 48):
        assert _read(_options(n), parallel=False) == _read(GenerateOptions(max_tokens=n), parallel=False)


def test_clear_grammar_cache_makes_the_next_build_cold() -> None:
    build_grammar(ten_tools())
    assert grammar._build_cached.cache_info().currsize > 0
    clear_grammar_cache()
    assert grammar._build_cached.cache_info().currsize == 0
