"""A scripted fake model for deterministic loop tests and fault injection."""

from __future__ import annotations

import json
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from ..formats import render_call
from ..messages import Message
from .base import Generation, GenerateOptions

# A reply: text, a ready Generation, or a function of the history it was asked with.
Script = str | Generation | Callable[[list[Message]], "str | Generation"]


def call_text(name: str, **arguments: Any) -> str:
    """The text of one call in the model's envelope (for scripts)."""
    return render_call(name, arguments)


@dataclass
class FakeBackend:
    """Replies from a queue; records every request it was given, and its options.

    Token counts are whitespace words, so tests can reason about budgets. The
    KV cache is simulated: a step evaluates only what is new since the last.
    """

    replies: deque[Script] = field(default_factory=deque)
    name: str = "fake"
    context_size: int = 8192
    native_tools: bool = True
    reuses_kv_cache: bool = False  # its cache is simulated; a test sets True to check the loop's reuse check
    decides_each_call: bool = True  # its turns are scripted, several calls included
    requests: list[list[Message]] = field(default_factory=list)  # a snapshot per call
    options: list[GenerateOptions] = field(default_factory=list)  # what each call was asked under (the grammar, ...)
    tools_seen: list[list[dict[str, Any]]] = field(default_factory=list)  # the tool list each prompt showed
    relevance: list[float] | None = None  # what tool_relevance answers for every request
    _cached: list[str] = field(default_factory=list)

    @classmethod
    def scripted(cls, replies: Iterable[Script], **kw: Any) -> "FakeBackend":
        """A fake that answers with ``replies`` in order."""
        return cls(replies=deque(replies), **kw)

    def enqueue(self, *replies: Script) -> None:
        """Add replies to the end of the queue."""
        self.replies.extend(replies)

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def _render(self, messages: list[Message], tools: list[dict[str, Any]]) -> list[str]:
        words = json.dumps(tools).split()
        for m in messages:
            # Assistant turns as generated, like the real backend, so the cache prefix holds.
            text = m.raw if m.role == "assistant" and m.raw is not None else m.content
            words += [m.role] + text.split()
        return words

    def prompt_tokens(self, messages: list[Message], tools: list[dict[str, Any]]) -> int:
        return len(self._render(messages, tools))

    def tool_relevance(self, request: str, tools: list[dict[str, Any]]) -> list[float] | None:
        return None if self.relevance is None else self.relevance[: len(tools)]

    def generate(
        self, messages: list[Message], tools: list[dict[str, Any]], options: GenerateOptions
    ) -> Generation:
        self.requests.append(list(messages))  # the loop keeps appending to its own list
        self.options.append(options)
        self.tools_seen.append(list(tools))
        prompt = self._render(messages, tools)
        common = 0
        for a, b in zip(prompt, self._cached):
            if a != b:
                break
            common += 1
        if not self.replies:
            reply: Script = "(the script has no more replies)"
        else:
            reply = self.replies.popleft()
        if callable(reply):
            reply = reply(messages)
        gen = reply if isinstance(reply, Generation) else Generation(text=reply)
        gen.prompt_tokens = gen.prompt_tokens or len(prompt)
        gen.prompt_tokens_evaluated = gen.prompt_tokens_evaluated or (len(prompt) - common)
        gen.completion_tokens = gen.completion_tokens or self.count_tokens(gen.text)
        self._cached = prompt + ["assistant"] + gen.text.split()
        if options.on_text and gen.text:
            options.on_text(gen.text)
        return gen
