"""Folding old tool results into stubs; nothing else is ever dropped."""

from __future__ import annotations

from localagent.history import fold, stub
from localagent.messages import Message, ToolCall


def history(n: int, size: int = 100) -> list[Message]:
    msgs = [Message("system", "sys"), Message("user", "the task")]
    for i in range(n):
        call = ToolCall(f"c{i}", "read_file", {"path": f"f{i}.txt"})
        msgs.append(Message("assistant", "", tool_calls=[call]))
        body = "error (not_found): nope" if i == 1 else " ".join(["word"] * size)
        msgs.append(Message("tool", body, tool_call_id=f"c{i}", name="read_file"))
    msgs.append(Message("assistant", "done"))
    return msgs


def words(msgs: list[Message]) -> int:
    return sum(len(m.content.split()) for m in msgs)


def test_a_history_that_fits_is_returned_as_is() -> None:
    h = history(3)
    assert fold(h, lambda _: True) is h


def test_folds_oldest_first_only_as_far_as_needed() -> None:
    h = history(5)
    before = [m.content for m in h]
    out = fold(h, lambda m: words(m) <= 300)
    assert [m.content for m in h] == before  # pure: the input is untouched
    tools = [m for m in out if m.role == "tool"]
    assert [m.folded for m in tools] == [True, True, True, False, False]
    assert words(out) <= 300
    # Everything but tool results is the very same object.
    for a, b in zip(h, out):
        if a.role != "tool":
            assert a is b
    assert len(out) == len(h)


def test_the_recent_results_stay_whole_even_if_it_does_not_fit() -> None:
    out = fold(history(4), lambda _: False, keep_recent=2)
    tools = [m for m in out if m.role == "tool"]
    assert [m.folded for m in tools] == [True, True, False, False]
    assert out[0].content == "sys" and out[1].content == "the task"
    out = fold(history(4), lambda _: False, keep_recent=0)
    assert all(m.folded for m in out if m.role == "tool")


def test_stub_names_the_call_and_the_outcome() -> None:
    out = fold(history(3), lambda _: False, keep_recent=0)
    tools = [m for m in out if m.role == "tool"]
    assert tools[0].content == (
        '[folded to save context: read_file({"path": "f0.txt"}) returned 499 characters; '
        "call it again to see them]"
    )
    assert "failed" in tools[1].content
    assert all(m.tool_call_id == f"c{i}" and m.name == "read_file" for i, m in enumerate(tools))


def test_folded_results_are_not_folded_again() -> None:
    once = fold(history(4), lambda _: False, keep_recent=2)
    twice = fold(once, lambda _: False, keep_recent=1)
    tools = [m for m in twice if m.role == "tool"]
    assert [m.folded for m in tools] == [True, True, True, False]
    assert tools[0].content == [m for m in once if m.role == "tool"][0].content


def test_stub_without_a_matching_call() -> None:
    msg = Message("tool", "xyz", tool_call_id="zz", name="grep")
    assert stub(msg, {}).startswith("[folded to save context: grep returned 3 characters")
