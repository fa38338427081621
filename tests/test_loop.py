"""The agent loop, driven by the scripted fake model: every way a run goes and ends."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from localagent.backends.base import Generation
from localagent.backends.fake import FakeBackend, call_text
from localagent.loop import Agent, AgentConfig, Events, RunResult
from localagent.messages import Message
from localagent.stops import Limits, StopReason
from localagent.tools import tool
from localagent.trace import read_lines
from runs import Trace, Traced, fake_run

release = threading.Event()  # lets the hanging tool end once the tests are over
executed: list[str] = []  # what the tools really ran, in order


@pytest.fixture(autouse=True)
def _reset() -> Any:
    executed.clear()
    release.clear()
    yield
    release.set()


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    executed.append(f"add({a},{b})")
    return a + b


@tool
def lookup(key: str) -> str:
    """Look a key up."""
    executed.append(f"lookup({key})")
    return f"value of {key}"


@tool
def fail(x: int) -> str:
    """Always raises."""
    executed.append(f"fail({x})")
    raise ValueError(f"no such thing as {x}")


@tool(max_retries=1)
def flaky(x: int) -> str:
    """Always raises; only one retry allowed."""
    raise RuntimeError("still broken")


@tool
def big(n: int) -> str:
    """Return n words."""
    executed.append(f"big({n})")
    return " ".join(f"w{i}" for i in range(n))


@tool(timeout=0.2)
def hang() -> str:
    """Never returns in time."""
    release.wait(10)
    return "late"


@tool
def slow(seconds: float) -> str:
    """Sleep a while."""
    time.sleep(seconds)
    return "slept"


TOOLS = [add, lookup, fail, flaky, big, hang, slow]


def run(tmp_path: Path, replies: list[Any], **config: Any) -> tuple[RunResult, Trace, FakeBackend]:
    return fake_run(tmp_path, replies, TOOLS, **config)


def steps_of(trace: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in trace if r["type"] == "step"]


def tool_msgs(result: RunResult) -> list[Message]:
    return [m for m in result.history if m.role == "tool"]


# -- natural end -------------------------------------------------------------------


def test_natural_end(tmp_path: Path) -> None:
    result, trace, fake = run(tmp_path, [call_text("add", a=2, b=3), "The sum is 5."])
    assert result.stop_reason is StopReason.ANSWERED and not result.forced
    assert result.answer == "The sum is 5."
    assert result.steps == 2 and len(result.records) == 2
    assert executed == ["add(2,3)"]
    assert [m.role for m in result.history if m.role != "system"] == ["user", "assistant", "tool", "assistant"]
    assert tool_msgs(result)[0].content == "5"
    assert len(fake.requests) == 2
    u = result.usage
    assert u.prompt_tokens_sent > 0 and u.completion_tokens > 0
    assert u.total == u.prompt_tokens_evaluated + u.completion_tokens

    assert [r["type"] for r in trace] == ["run_start", "step", "step", "run_end"]
    assert trace[0]["task"] == "the task" and "add" in trace[0]["tools"]
    assert trace[1]["calls"] == [{"id": "call_1_0", "name": "add", "arguments": {"a": 2, "b": 3}}]
    assert trace[1]["results"][0]["content"] == "5"
    end = trace[-1]
    assert end["stop_reason"] == "answered" and end["steps"] == 2 and end["answer"] == "The sum is 5."
    # The trace accounts for every token the run used.
    assert sum(s["prompt_tokens"] for s in steps_of(trace)) == u.prompt_tokens_sent
    assert sum(s["completion_tokens"] for s in steps_of(trace)) == u.completion_tokens
    assert end["usage"] == u.to_dict()


def test_events_are_called(tmp_path: Path) -> None:
    seen: list[str] = []
    ev = Events(
        on_text=lambda t: seen.append("text"),
        on_step_start=lambda n: seen.append(f"step{n}"),
        on_call=lambda c: seen.append(f"call:{c.name}"),
        on_result=lambda c, r: seen.append(f"result:{r.content}"),
    )
    fake = FakeBackend.scripted([call_text("add", a=1, b=1), "two"])
    Agent(fake, TOOLS).run("t", events=ev)
    assert seen == ["step1", "text", "call:add", "result:2", "step2", "text"]


def test_history_continues_a_conversation(tmp_path: Path) -> None:
    fake = FakeBackend.scripted(["first", "second"])
    agent = Agent(fake, TOOLS, config=AgentConfig(system_prompt="be brief"))
    one = agent.run("q1")
    two = agent.run("q2", history=one.history)
    assert [(m.role, m.content) for m in two.history] == [
        ("system", "be brief"),
        ("user", "q1"),
        ("assistant", "first"),
        ("user", "q2"),
        ("assistant", "second"),
    ]


# -- step and token limits ---------------------------------------------------------


def test_max_steps_forces_a_marked_answer(tmp_path: Path) -> None:
    replies = [call_text("lookup", key=str(i)) for i in range(3)] + ["what I found so far"]
    result, trace, fake = run(tmp_path, replies, limits=Limits(max_steps=3))
    assert result.stop_reason is StopReason.MAX_STEPS and result.forced
    assert result.steps == 3 and len(steps_of(trace)) == 3
    assert result.answer.startswith("[stopped: max_steps]")
    assert result.answer.endswith("what I found so far")
    # The forced final turn asked for prose from the task and every result, saying why it stopped.
    assert len(fake.requests) == 4
    final = fake.requests[-1]
    assert [m.role for m in final] == ["user"] and final[0].content.startswith("Task: the task")
    assert all(f"value of {i}" in final[0].content for i in range(3)) and "max_steps" in final[0].content
    assert trace[-1]["stop_reason"] == "max_steps"


def test_max_steps_without_final_turn(tmp_path: Path) -> None:
    replies = [call_text("lookup", key=str(i)) for i in range(3)]
    result, _, fake = run(tmp_path, replies, limits=Limits(max_steps=2), final_answer_on_stop=False)
    assert result.stop_reason is StopReason.MAX_STEPS
    assert len(fake.requests) == 2
    assert result.answer.startswith("[stopped: max_steps]")


def test_token_budget(tmp_path: Path) -> None:
    replies = [call_text("lookup", key=str(i)) for i in range(5)] + ["done"]
    probe, _, _ = run(tmp_path / "a", replies, limits=Limits(max_steps=1), final_answer_on_stop=False)
    one_step = probe.usage.total
    # Room for the first step only: the second starts over budget.
    result, trace, _ = run(tmp_path / "b", replies, limits=Limits(token_budget=one_step))
    assert result.stop_reason is StopReason.TOKEN_BUDGET
    assert result.steps == 1 and result.usage.total >= one_step
    assert result.answer.startswith("[stopped: token_budget]")
    # Tokens are whitespace words in the fake: the count is exact and repeatable.
    result2, _, _ = run(tmp_path / "c", replies, limits=Limits(token_budget=one_step + 1))
    assert result2.stop_reason is StopReason.TOKEN_BUDGET and result2.steps == 2
    assert trace[-1]["stop_reason"] == "token_budget"


def test_worst_case_tokens(traced: Traced) -> None:
    agent = Agent(FakeBackend(context_size=1000), TOOLS, config=AgentConfig(limits=Limits(max_steps=7)))
    assert agent.worst_case_tokens() == 7 * 1000
    agent.backend.enqueue("hi")  # type: ignore[attr-defined]
    _, trace = traced(agent, "t")
    assert trace[0]["worst_case_tokens"] == 7000


# -- no progress -------------------------------------------------------------------


def test_repeated_failing_call(tmp_path: Path) -> None:
    replies = [call_text("fail", x=1)] * 3 + ["I could not do it"]
    result, trace, _ = run(tmp_path, replies)
    assert result.stop_reason is StopReason.REPEATED_CALL
    assert result.steps == 3 and executed == ["fail(1)"] * 3
    assert "fail" in result.message and "3 times" in result.message
    assert result.answer.startswith("[stopped: no_progress_repeated_call]")
    assert result.answer.endswith("I could not do it")


def test_repeated_successful_call_in_free_mode(tmp_path: Path) -> None:
    # Without the constraint there is no repeat guard: the stop condition catches it.
    replies = [call_text("lookup", key="k")] * 3 + ["final"]
    result, _, _ = run(tmp_path, replies, constrained=False)
    assert result.stop_reason is StopReason.REPEATED_CALL
    assert executed == ["lookup(k)"] * 3


def test_consecutive_errors_with_different_calls(tmp_path: Path) -> None:
    replies = [call_text("fail", x=1), call_text("nope"), call_text("fail", x=2), "final"]
    result, trace, _ = run(tmp_path, replies)
    assert result.stop_reason is StopReason.CONSECUTIVE_ERRORS
    assert result.steps == 3 and "3 tool errors in a row" in result.message
    assert result.answer.startswith("[stopped: no_progress_errors]")
    assert all(s["results"][0]["error"] for s in steps_of(trace))


def test_a_success_resets_the_error_count(tmp_path: Path) -> None:
    replies = [call_text("fail", x=1), call_text("fail", x=2), call_text("add", a=1, b=1)]
    replies += [call_text("fail", x=3), call_text("nope"), "answer"]
    result, _, _ = run(tmp_path, replies)
    assert result.stop_reason is StopReason.ANSWERED and result.steps == 6


def test_the_retry_count_is_per_tool(tmp_path: Path) -> None:
    # Another tool's success does not reset fail's count: its fourth failure stops.
    replies = [call_text("fail", x=1), call_text("fail", x=2), call_text("add", a=1, b=1)]
    replies += [call_text("fail", x=3), call_text("fail", x=4), "final"]
    result, _, _ = run(tmp_path, replies)
    assert result.stop_reason is StopReason.RETRY_LIMIT and result.steps == 5


def test_retry_limit(tmp_path: Path) -> None:
    # Only the per-tool retry limit is on: flaky allows one retry, the third failure stops.
    replies = [call_text("flaky", x=i) for i in range(5)] + ["final"]
    result, _, _ = run(tmp_path, replies, limits=Limits(repeat_limit=0, error_limit=0))
    assert result.stop_reason is StopReason.RETRY_LIMIT
    assert result.steps == 2
    assert "retry limit reached for 'flaky'" in tool_msgs(result)[-1].content
    assert result.answer.startswith("[stopped: no_progress_retry_limit]")


def test_with_the_defaults_consecutive_errors_fires_before_the_retry_limit(tmp_path: Path) -> None:
    replies = [call_text("fail", x=i) for i in range(5)] + ["final"]
    result, _, _ = run(tmp_path, replies)
    assert result.stop_reason is StopReason.CONSECUTIVE_ERRORS and result.steps == 3


def test_repeat_guard_regenerates_as_prose(tmp_path: Path) -> None:
    replies = [call_text("lookup", key="k"), call_text("lookup", key="k"), "k has its value", "unused"]
    result, trace, fake = run(tmp_path, replies)
    assert executed == ["lookup(k)"]  # never run twice
    assert result.stop_reason is StopReason.ANSWERED
    assert result.answer == "k has its value" and result.steps == 2
    assert list(fake.replies) == ["unused"]
    step2 = steps_of(trace)[1]
    assert step2["info"]["repeat_guard"] == ['lookup{"key": "k"}']
    assert step2["text"] == "k has its value" and step2["calls"] == []
    # Both generations of the guarded step are counted, once each.
    assert sum(s["prompt_tokens"] for s in steps_of(trace)) == result.usage.prompt_tokens_sent
    assert sum(s["completion_tokens"] for s in steps_of(trace)) == result.usage.completion_tokens


def test_repeat_guard_spares_calls_that_failed(tmp_path: Path) -> None:
    replies = [call_text("fail", x=1), call_text("fail", x=1), "gave up"]
    result, _, _ = run(tmp_path, replies)
    assert executed == ["fail(1)", "fail(1)"]
    assert result.answer == "gave up"


def test_repeat_guard_catches_a_failed_call_whose_correction_succeeded(tmp_path: Path) -> None:
    from localagent.tools.builtin import workspace_tools
    from localagent.tools.workspace import Workspace

    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "main.py").write_text("VERSION = '3.2.1'\n")
    wrong, right = call_text("read_file", path="src/mian.py"), call_text("read_file", path="src/main.py")
    # Wrong path, its correction, then back to the wrong path: the third turn, read as its
    # correction, asks for nothing the history lacks, so it is generated again as prose.
    fake = FakeBackend.scripted([wrong, right, wrong, "VERSION is 3.2.1", "unused"])
    tools = workspace_tools(Workspace(root), write=False)
    result = Agent(fake, tools, root=root).run("Read src/mian.py", trace=tmp_path / "t.jsonl")
    assert result.stop_reason is StopReason.ANSWERED and result.answer == "VERSION is 3.2.1"
    step3 = steps_of(read_lines(tmp_path / "t.jsonl"))[2]
    assert step3["info"]["repeat_guard"] == ['read_file{"path": "src/main.py"}'] and step3["calls"] == []
    # Without the correction having run, the same failed call runs again, corrected.
    fake = FakeBackend.scripted([wrong, wrong, "gave up"])
    result = Agent(fake, tools, root=root).run("Read src/mian.py", trace=tmp_path / "u.jsonl")
    u = steps_of(read_lines(tmp_path / "u.jsonl"))
    assert [len(s["calls"]) for s in u] == [1, 1, 0] and u[1]["calls"][0]["arguments"]["path"] == "src/main.py"


def test_repeat_guard_backend_error_on_the_retry(tmp_path: Path) -> None:
    boom = Generation(text="", finish_reason="error", error="boom")
    replies = [call_text("lookup", key="k"), call_text("lookup", key="k"), boom]
    result, trace, _ = run(tmp_path, replies)
    assert result.stop_reason is StopReason.BACKEND_ERROR and result.message == "boom"
    assert trace[-1]["type"] == "run_end"


# -- deadline ----------------------------------------------------------------------


def test_deadline_with_a_slow_reply(tmp_path: Path) -> None:
    def sleepy(messages: list[Message]) -> str:
        time.sleep(0.3)
        return call_text("lookup", key="a")

    replies = [sleepy, call_text("lookup", key="b"), "never"]
    t0 = time.monotonic()
    result, trace, _ = run(tmp_path, replies, limits=Limits(deadline_s=0.2))
    assert time.monotonic() - t0 < 2
    assert result.stop_reason is StopReason.DEADLINE and result.steps == 1
    assert result.answer.startswith("[stopped: deadline]")
    assert trace[-1]["stop_reason"] == "deadline"


def test_deadline_with_a_slow_tool(tmp_path: Path) -> None:
    replies = [call_text("slow", seconds=0.3), "never"]
    result, _, _ = run(tmp_path, replies, limits=Limits(deadline_s=0.2))
    assert result.stop_reason is StopReason.DEADLINE and result.steps == 1


# -- calls and results -------------------------------------------------------------


def test_parallel_calls_one_result_each_in_order(tmp_path: Path) -> None:
    turn = "\n".join([call_text("add", a=1, b=2), call_text("fail", x=7), call_text("add", a=3, b=4)])
    result, trace, _ = run(tmp_path, [turn, "3 and 7"])
    assert result.stop_reason is StopReason.ANSWERED
    assert executed == ["add(1,2)", "fail(7)", "add(3,4)"]
    assistant = result.history[[m.role for m in result.history].index("assistant")]
    ids = [c.id for c in assistant.tool_calls]
    assert ids == ["call_1_0", "call_1_1", "call_1_2"]
    tools = tool_msgs(result)
    assert [m.tool_call_id for m in tools] == ids
    assert [m.name for m in tools] == ["add", "fail", "add"]
    assert tools[0].content == "3" and tools[2].content == "7"
    assert tools[1].content.startswith("error (tool_exception)")
    assert [r["call_id"] for r in steps_of(trace)[0]["results"]] == ids


def test_unknown_tool_lists_the_available_ones(tmp_path: Path) -> None:
    result, _, _ = run(tmp_path, [call_text("ad", a=1, b=2), "ok"])
    content = tool_msgs(result)[0].content
    assert content.startswith("error (unknown_tool): unknown tool 'ad'")
    assert "available tools: add" in content
    for name in ("lookup", "fail", "big"):
        assert name in content
    assert result.stop_reason is StopReason.ANSWERED


def test_raising_tool_gives_type_and_message_without_traceback(tmp_path: Path) -> None:
    result, trace, _ = run(tmp_path, [call_text("fail", x=3), "ok"])
    content = tool_msgs(result)[0].content
    assert content == "error (tool_exception): 'fail' raised ValueError: no such thing as 3"
    assert "Traceback" not in content
    # The traceback is kept for people, in the trace only.
    assert "Traceback" in steps_of(trace)[0]["results"][0]["error"]["detail"]["traceback"]


def test_hanging_tool_times_out(tmp_path: Path) -> None:
    t0 = time.monotonic()
    result, _, _ = run(tmp_path, [call_text("hang"), "ok"])
    assert time.monotonic() - t0 < 2
    content = tool_msgs(result)[0].content
    assert content.startswith("error (timeout)") and "0.2 s" in content
    assert result.stop_reason is StopReason.ANSWERED


def test_big_result_is_truncated(tmp_path: Path) -> None:
    result, trace, _ = run(tmp_path, [call_text("big", n=500), "ok"], max_result_tokens=50)
    content = tool_msgs(result)[0].content
    assert "[... truncated:" in content
    assert len(content.split()) <= 50
    assert content.startswith("w0 w1 w2")
    assert steps_of(trace)[0]["results"][0]["truncated_tokens"] > 0


# -- context -----------------------------------------------------------------------


def test_old_results_fold_when_the_context_is_small(tmp_path: Path) -> None:
    replies = [call_text("big", n=100 + i) for i in range(5)] + ["done"]
    result, _, fake = run(
        tmp_path,
        replies,
        backend={"context_size": 2000},
        context_limit=600,
        max_tokens=50,
        system_prompt="You are a test.",
        max_result_tokens=1000,
    )
    assert result.stop_reason is StopReason.ANSWERED, result.message
    assert len(executed) == 5
    hist = result.history
    assert (hist[0].role, hist[0].content) == ("system", "You are a test.")
    assert (hist[1].role, hist[1].content) == ("user", "the task")
    tools = tool_msgs(result)
    folded = [m.folded for m in tools]
    n = folded.count(True)
    assert n >= 2 and folded == [True] * n + [False] * (5 - n)  # oldest first, the last two whole
    for m in tools[:n]:
        assert m.content.startswith("[folded") and "big(" in m.content
    assert tools[-1].content.startswith("w0 w1") and len(tools[-1].content.split()) == 104
    # What the model was shown always fit, with room for the reply.
    schemas = Agent(fake, TOOLS).tools.schemas()
    assert all(fake.prompt_tokens(r, schemas) <= 600 - 50 for r in fake.requests)
    assert all(r[0].content == "You are a test." and r[1].content == "the task" for r in fake.requests)


def test_context_full_when_folding_is_not_enough(tmp_path: Path) -> None:
    replies = [call_text("big", n=300), call_text("big", n=301), "never"]
    result, trace, _ = run(
        tmp_path, replies, backend={"context_size": 700}, max_tokens=50, max_result_tokens=1000
    )
    assert result.stop_reason is StopReason.CONTEXT_FULL
    assert "even with old tool results folded" in result.message
    assert result.answer.startswith("[stopped: context_full]")
    assert result.steps == 2 and len(steps_of(trace)) == 2  # no step ran without a model call
    assert trace[-1]["steps"] == 2


def test_context_limit_caps_the_window(tmp_path: Path) -> None:
    result, _, fake = run(tmp_path, ["never"], backend={"context_size": 100000}, context_limit=10)
    assert result.stop_reason is StopReason.CONTEXT_FULL and fake.requests == []
    assert result.steps == 0


# -- format errors (free mode) -----------------------------------------------------


def test_format_errors_go_back_to_the_model(tmp_path: Path) -> None:
    unclosed = '<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2}}'
    bad_json = "<tool_call>\n{name: add}\n</tool_call>"
    result, trace, _ = run(tmp_path, [unclosed, bad_json, "ok"], constrained=False)
    assert result.stop_reason is StopReason.ANSWERED and result.answer == "ok"
    assert executed == []
    tools = tool_msgs(result)
    assert len(tools) == 2 and all(m.name == "(format)" for m in tools)
    assert tools[0].content.startswith("error (format_error): tool call not closed")
    assert "not valid JSON" in tools[1].content
    assert '<tool_call>\n{"name": ...' in tools[1].content  # says what would be right
    assert [len(s["parse_errors"]) for s in steps_of(trace)] == [1, 1, 0]


def test_a_reply_cut_inside_a_call_never_runs_it(tmp_path: Path) -> None:
    cut = Generation(text='<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2}}', finish_reason="length")
    result, _, _ = run(tmp_path, [cut, "ok"], constrained=False)
    assert executed == []
    assert "token limit" in tool_msgs(result)[0].content
    assert result.answer == "ok"


def test_complete_calls_before_a_cut_still_run(tmp_path: Path) -> None:
    text = call_text("add", a=1, b=2) + '\n<tool_call>\n{"name": "add", "arguments": {"a"'
    result, _, _ = run(tmp_path, [Generation(text=text, finish_reason="length"), "ok"], constrained=False)
    assert executed == ["add(1,2)"]
    assert [m.content for m in tool_msgs(result)][0] == "3"


# -- failures of the model and interrupts ------------------------------------------


def test_backend_error_keeps_the_partial_answer(tmp_path: Path) -> None:
    first = "Checking the sum first.\n" + call_text("add", a=1, b=2)
    boom = Generation(text="", finish_reason="error", error="boom")
    result, trace, _ = run(tmp_path, [first, boom])
    assert result.stop_reason is StopReason.BACKEND_ERROR and result.message == "boom"
    assert result.answer.startswith("[stopped: backend_error] boom")
    assert result.answer.endswith("Checking the sum first.")
    assert steps_of(trace)[-1]["error"] == "boom"
    assert trace[-1]["stop_reason"] == "backend_error"


def test_interrupt_ends_the_run_cleanly(tmp_path: Path) -> None:
    def ctrl_c(messages: list[Message]) -> str:
        raise KeyboardInterrupt

    result, trace, _ = run(tmp_path, ["Starting.\n" + call_text("add", a=1, b=2), ctrl_c])
    assert result.stop_reason is StopReason.INTERRUPTED
    assert result.answer.startswith("[stopped: interrupted]") and result.answer.endswith("Starting.")
    assert [r["type"] for r in trace] == ["run_start", "step", "step", "run_end"]
    assert steps_of(trace)[-1]["error"] == "interrupted while generating"  # the cut-off step is on record
    assert trace[-1]["stop_reason"] == "interrupted"


def test_interrupt_while_generating_keeps_the_text_streamed_so_far(traced: Traced) -> None:
    def ctrl_c_after_text(piece: str) -> None:
        if "halfway" in piece:
            raise KeyboardInterrupt

    agent = Agent(FakeBackend.scripted([call_text("add", a=1, b=2), "The sum is 3, halfway through"]), [add], config=AgentConfig())
    result, trace = traced(agent, "add", Events(on_text=ctrl_c_after_text))
    assert result.stop_reason is StopReason.INTERRUPTED and result.steps == 2
    assert result.answer.endswith("The sum is 3, halfway through")
    last = steps_of(trace)[-1]
    assert last["step"] == 2 and last["text"] == "The sum is 3, halfway through"


def test_interrupt_while_tools_run_answers_every_call(traced: Traced) -> None:
    def ctrl_c_on_call(call: Any) -> None:
        raise KeyboardInterrupt

    two = call_text("add", a=1, b=2) + "\n" + call_text("lookup", key="k")
    config = AgentConfig(parallel_calls=True)
    agent = Agent(FakeBackend.scripted([two]), [add, lookup], config=config)
    result, trace = traced(agent, "go", Events(on_call=ctrl_c_on_call))
    assert result.stop_reason is StopReason.INTERRUPTED and executed == []
    step = steps_of(trace)[-1]
    assert [c["id"] for c in step["calls"]] == [r["call_id"] for r in step["results"]]
    assert all("interrupted" in r["content"] for r in step["results"])
    assert trace[-1]["type"] == "run_end"


# -- token accounting --------------------------------------------------------------


def test_kv_cache_accounting(tmp_path: Path) -> None:
    replies = [call_text("big", n=20 + i) for i in range(5)] + ["done"]
    result, trace, _ = run(tmp_path, replies)
    steps = steps_of(trace)
    sent = [s["prompt_tokens"] for s in steps]
    evaluated = [s["prompt_tokens_evaluated"] for s in steps]
    u = result.usage
    assert u.prompt_tokens_evaluated < u.prompt_tokens_sent
    assert evaluated[0] == sent[0]  # nothing cached yet
    assert all(e < s for e, s in zip(evaluated[1:], sent[1:]))
    # Each step re-sends the whole history: sent per step grows, so the running
    # total grows faster than linearly, while evaluated per step stays small.
    assert all(b > a for a, b in zip(sent, sent[1:]))
    totals = [sum(sent[: i + 1]) for i in range(len(sent))]
    increments = [b - a for a, b in zip(totals, totals[1:])]
    assert all(b > a for a, b in zip(increments, increments[1:]))
    assert max(evaluated[1:]) < sent[0]
    assert all(s["prompt_tokens_reused"] == s["prompt_tokens"] - s["prompt_tokens_evaluated"] for s in steps)


def test_a_budget_below_the_first_prompt_is_refused_before_the_model_runs() -> None:
    from localagent.errors import ConfigError

    backend = FakeBackend.scripted(["never asked"])
    agent = Agent(backend, [add], config=AgentConfig(limits=Limits(token_budget=5)))
    with pytest.raises(ConfigError, match=r"token budget 5 cannot cover even the first prompt \(\d+ tokens"):
        agent.check_budget("add two numbers")
    assert backend.requests == []
    Agent(backend, [add], config=AgentConfig(limits=Limits(token_budget=10_000))).check_budget("add two numbers")
    Agent(backend, [add], config=AgentConfig()).check_budget("add two numbers")  # no budget, nothing to check


# -- KV-cache reuse ------------------------------------------------------------------


class _Counting(FakeBackend):
    """A template that numbers every message from the end: each new turn renders all
    earlier ones differently, which defeats the KV cache without any error."""

    def _render(self, messages: list[Message], tools: list[dict[str, Any]]) -> list[str]:
        words = super()._render(messages, tools)
        return [f"[{len(messages)}]"] + words


@pytest.mark.parametrize("backend_cls", [FakeBackend, _Counting])
def test_a_template_that_re_renders_earlier_turns_is_reported(traced: Traced, backend_cls: type) -> None:
    replies = [call_text("add", a=1, b=2), call_text("lookup", key="k"), "done"]
    fake = backend_cls(replies=__import__("collections").deque(replies))
    fake.reuses_kv_cache = True
    _, trace = traced(Agent(fake, TOOLS))
    lost = [s["info"].get("kv_reuse_lost") for s in steps_of(trace)]
    if backend_cls is FakeBackend:
        assert lost == [None, None, None]  # every step reused the whole previous prompt
    else:
        assert lost[0] is None and all(n and n > 0 for n in lost[1:]), lost


def test_folding_is_not_reported_as_a_re_render(traced: Traced) -> None:
    fake = FakeBackend.scripted([call_text("big", n=100 + i) for i in range(5)] + ["done"], context_size=2000)
    fake.reuses_kv_cache = True
    cfg = AgentConfig(context_limit=600, max_tokens=50, max_result_tokens=1000)
    result, trace = traced(Agent(fake, TOOLS, config=cfg))
    assert any(m.folded for m in result.history)
    assert all("kv_reuse_lost" not in s["info"] for s in steps_of(trace))


# -- state-aware grammars ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("live", "narrowed"),
    [(True, [True, True, True]), (False, [False, False, False]), ("after_error", [False, True, True])],
)
def test_when_paths_are_narrowed_by_the_grammar(tmp_path: Path, live: Any, narrowed: list[bool]) -> None:
    from localagent.tools.builtin import workspace_tools
    from localagent.tools.workspace import Workspace

    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "main.py").write_text("RELEASE = '3.2.1'\n")
    replies = [call_text("read_file", path="src/mian.py"), call_text("read_file", path="src/main.py"), "3.2.1"]
    fake = FakeBackend.scripted(replies)
    agent = Agent(fake, workspace_tools(Workspace(root), write=False), root=root, config=AgentConfig(live_grammar=live))
    # (not "What is VERSION?": a version asked with no path named starts with a search)
    assert agent.run("What is RELEASE?").answer == "3.2.1"
    # The file's name as a grammar literal means the path argument is an enum of what exists.
    assert [r'"\"src/main.py\""' in (o.grammar or "") for o in fake.options] == narrowed


def test_repeat_guard_takes_a_reread_of_a_whole_file_at_any_offset(tmp_path: Path) -> None:
    from localagent.tools.builtin import workspace_tools
    from localagent.tools.workspace import Workspace

    root = tmp_path / "ws"
    root.mkdir()
    (root / "owner.txt").write_text("Owner: Noor\nKeep it.\n")
    first = call_text("read_file", path="owner.txt")
    again = call_text("read_file", path="owner.txt", offset=2, length=1)
    tools = workspace_tools(Workspace(root), write=False)
    fake = FakeBackend.scripted([first, again, "The owner is Noor", "unused"])
    config = AgentConfig(answer_when_covered=False)  # else the read alone answers the question
    result = Agent(fake, tools, root=root, config=config).run("Who owns owner.txt?", trace=tmp_path / "t.jsonl")
    assert result.stop_reason is StopReason.ANSWERED and result.answer == "The owner is Noor"
    assert steps_of(read_lines(tmp_path / "t.jsonl"))[1]["calls"] == []  # not run: nothing new in it
    # A read that stopped before the end leaves the rest to read: that call runs.
    (root / "owner.txt").write_text("".join(f"line {i}\n" for i in range(300)))
    fake = FakeBackend.scripted([first, again, "done"])
    result = Agent(fake, tools, root=root).run("Who owns owner.txt?", trace=tmp_path / "u.jsonl")
    assert [len(s["calls"]) for s in steps_of(read_lines(tmp_path / "u.jsonl"))] == [1, 1, 0]


# -- no tool fits, and a question already answered -----------------------------------


def test_a_first_turn_no_tool_fits_is_prose_and_the_fit_is_traced(tmp_path: Path) -> None:
    result, trace, fake = run(tmp_path, ["Warsaw."], task="What is the capital of Poland?", backend={"relevance": [-3.0, 1.0]})
    assert result.answer == "Warsaw." and fake.options[0].tool_choice == "none" and fake.options[0].call_threshold is None
    assert fake.tools_seen[0] == []  # written as an answer is, with no tool list
    assert steps_of(trace)[0]["info"]["relevance"] == 1.0
    # A tool that fits (or a request sharing a word with one, under the first floor) is the model's to call.
    for relevance, task in (([5.0], "What is the capital of Poland?"), ([3.0], "Add 2 and 3.")):
        _, _, fake = run(tmp_path, ["ok"], task=task, backend={"relevance": relevance})
        assert fake.options[0].tool_choice == "auto" and fake.options[0].call_threshold == 0.5
    # Off, or a backend that cannot score: no gate.
    _, trace, fake = run(tmp_path, ["ok"], task="What is the capital of Poland?", backend={"relevance": [-3.0]}, relevance_floor=None)
    assert fake.options[0].tool_choice == "auto" and "relevance" not in steps_of(trace)[0]["info"]
    _, _, fake = run(tmp_path, ["ok"], task="What is the capital of Poland?")
    assert fake.options[0].tool_choice == "auto"


def test_a_first_turn_the_request_answers_is_prose_however_well_a_tool_fits(tmp_path: Path) -> None:
    result, _, fake = run(tmp_path, ["ok"], task='Write "see you soon" in capital letters.', backend={"relevance": [9.0]})
    assert fake.options[0].tool_choice == "none" and result.answer == "SEE YOU SOON"  # worked out, given in its place
    note = 'My note says: "The dentist moved to 14:00 on Friday." What time is the dentist now?'
    result, _, fake = run(tmp_path, ["14:00."], task=note, backend={"relevance": [9.0]})
    assert fake.options[0].tool_choice == "none" and fake.tools_seen[0] == [] and result.answer == "14:00."
    _, _, fake = run(tmp_path, ["14:00."], task=note)  # a backend that cannot score: the request still decides
    assert fake.options[0].tool_choice == "none"


def test_a_first_turn_a_tool_clearly_fits_is_a_call(tmp_path: Path) -> None:
    task = "Look up the key alpha."
    result, trace, fake = run(tmp_path, [call_text("lookup", key="alpha"), "done"], task=task, backend={"relevance": [11.5]})
    # A call in the same grammar, unless the first token all but rules one out.
    assert fake.options[0].tool_choice == "auto" and fake.options[0].call_threshold == AgentConfig.ceiling_threshold == 0.02
    assert steps_of(trace)[0]["info"]["relevance"] == 11.5 and result.answer == "done"
    _, _, fake = run(tmp_path, [call_text("lookup", key="alpha"), "done"], task=task, backend={"relevance": [10.5]})
    assert fake.options[0].call_threshold == 0.5  # under the ceiling: the first token decides
    _, _, fake = run(tmp_path, ["done"], task=task, backend={"relevance": [11.5]}, relevance_ceiling=None)
    assert fake.options[0].call_threshold == 0.5


def test_a_first_turn_that_writes_a_call_as_prose_is_asked_again_as_a_call(tmp_path: Path) -> None:
    task, prose = "Look up the key alpha, and say why it matters.", "You can use the `lookup` tool with the key alpha."
    result, _, fake = run(tmp_path, [prose, call_text("lookup", key="alpha"), "done"], task=task)
    assert [o.call_threshold for o in fake.options[:2]] == [0.1, 0.0] and result.answer == "done"
    result, _, fake = run(tmp_path, [prose], task=task, retry_prose_calls=False)
    assert result.answer == prose and len(fake.requests) == 1
    # After a result, prose naming the tool is the answer.
    result, _, fake = run(tmp_path, [call_text("lookup", key="alpha"), "I used `lookup`: it matters."], task=task)
    assert result.answer == "I used `lookup`: it matters." and len(fake.requests) == 2


def test_a_first_turn_whose_call_holds_a_name_the_task_does_not_say_is_asked_again_as_prose(tmp_path: Path) -> None:
    task = "What is the capital city of Ireland?"
    result, _, fake = run(tmp_path, [call_text("lookup", key="Dublin"), "Dublin."], task=task)
    assert [o.tool_choice for o in fake.options] == ["auto", "none"] and result.answer == "Dublin." and not tool_msgs(result)
    # The name the task says, or the rule off: the call is made.
    result, _, fake = run(tmp_path, [call_text("lookup", key="Dublin"), "done"], task="Look up the key Dublin.")
    assert len(tool_msgs(result)) == 1 and result.answer == "done"
    result, _, fake = run(tmp_path, [call_text("lookup", key="Dublin"), "done"], task=task, retry_answer_calls=False)
    assert len(tool_msgs(result)) == 1


def test_only_the_first_turn_is_gated(tmp_path: Path) -> None:
    task = "Look up the key alpha, and say why it matters."
    result, _, fake = run(tmp_path, [call_text("lookup", key="alpha"), "done"], task=task, backend={"relevance": [9.0]})
    assert [o.call_threshold for o in fake.options] == [0.1, 0.5] and result.answer == "done"


def test_a_question_a_result_already_answers_is_answered_from_it(tmp_path: Path) -> None:
    result, _, fake = run(tmp_path, [call_text("lookup", key="alpha"), "value of alpha", "unused"], task="What is the key alpha?")
    assert result.answer == "value of alpha" and len(fake.requests) == 2
    assert fake.options[1].tool_choice == "none" and fake.tools_seen[1] == []  # the evidence prompt, no tool
    assert "value of alpha" in fake.requests[1][-1].content
    # A part no call names yet: the model goes on.
    _, _, fake = run(tmp_path, [call_text("lookup", key="alpha"), call_text("lookup", key="beta"), "both"], task="What are the keys alpha and beta?")
    assert len(fake.requests) == 3 and fake.options[1].tool_choice == "auto"


def test_a_question_no_tool_fits_is_asked_with_the_value_it_works_out(tmp_path: Path) -> None:
    result, _, fake = run(tmp_path, ['"pyramid" backwards is "pyramid".'], task='Spell the word "pyramid" backwards.', backend={"relevance": [-3.0]})
    assert "Worked out exactly: 'pyramid'[::-1] = dimaryp" in fake.requests[0][-1].content
    assert result.answer == "dimaryp"  # left out, so given in its place
