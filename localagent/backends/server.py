"""The same agent against an OpenAI-compatible chat-completion server.

The loop does not know it talks to a server. The constraint goes out in the
dialect the server understands, and whatever comes back (text in our
``<tool_call>`` envelope, or OpenAI ``tool_calls``, which are turned into that
envelope) is parsed and validated by the loop as usual: a server that ignores
the constraint cannot slip a malformed call through.

Dialects:

- ``llama.cpp``: our own prompt (tools described in the system message, results
  as ``<tool_response>`` turns) and the GBNF in ``grammar``; llama.cpp's server
  and llama-cpp-python's.
- ``vllm``: the same prompt, the GBNF in ``structured_outputs.grammar``.
- ``vllm-legacy``: ``guided_grammar``, for vLLM before 0.12
  (0.12 dropped them, and newer servers ignore them silently).
- ``openai``: the tools as ``tools`` with ``tool_choice``; no grammar.
- ``auto``: ``GET /v1/models`` says who owns the model (``llamacpp``, ``vllm``,
  ``me`` for llama-cpp-python); anything else is spoken to as ``openai``.

HTTP is httpx2's (pydantic's maintained httpx, which huggingface-hub brings too):
one client per backend, so its connections are kept alive across the steps of a
run; the proxies set in the environment (``HTTPS_PROXY``, ``NO_PROXY``) are
honoured; connecting and waiting for the reply have their own timeouts; the
stream is read with its server-sent-events parser.
Connection errors, timeouts, 5xx and 429 answers, malformed and cut-off replies
are retried with capped exponential backoff; when the tries run out the step
ends as ``finish_reason="error"`` with the text streamed so far kept.
"""

from __future__ import annotations

import json
import math
import re
import socket
import time
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterator, Literal, get_args
from urllib.parse import urlsplit

import httpx2

from ..constraint.grammar import decided_grammar
from ..dispatch import estimate_tokens
from ..errors import ConfigError
from ..formats import CALL_CLOSE, CALL_OPEN, render_call, render_result, shown_schemas, text_messages
from ..messages import Message
from ..policy import STRUCTURED_STARTS
from .base import Decision, FinishReason, Generation, GenerateOptions, StepInfo

Dialect = Literal["auto", "llama.cpp", "vllm", "vllm-legacy", "openai"]
DIALECTS: tuple[str, ...] = get_args(Dialect)
_CONSTRAINT_KEYS = ("grammar", "structured_outputs", "guided_grammar", "tools")  # what the server was given
_OWNERS = {"llamacpp": "llama.cpp", "me": "llama-cpp-python", "vllm": "vllm"}  # /v1/models owned_by
TOP_LOGPROBS = 20  # first-token alternatives asked for the call-or-prose decision (vLLM's and OpenAI's most)


@dataclass(frozen=True)
class Retries:
    """How often a failed request is tried again, and how long to wait between tries."""

    attempts: int = 4  # tries in all, the first included
    backoff_s: float = 0.5  # the wait before the second try; doubled before each next one
    max_wait_s: float = 10.0  # cap on any wait, a server's Retry-After included

    def wait(self, attempt: int, retry_after: float | None) -> float:
        """Seconds to wait after failed try number ``attempt`` (1-based)."""
        base = self.backoff_s * 2 ** (attempt - 1)
        return min(self.max_wait_s, retry_after if retry_after is not None else base)


class _Failure(Exception):
    """One failed try. ``kind`` is ``retry`` (worth another try), ``fatal``,
    ``context`` (the prompt does not fit) or ``constraint`` (the server refused it)."""

    def __init__(
        self, message: str, kind: str = "retry", *, status: int | None = None,
        retry_after: float | None = None, network: bool = False,
    ):
        super().__init__(message)
        self.kind, self.status, self.retry_after = kind, status, retry_after
        self.network = network  # no answer at all (refused, timed out, cut off)


@dataclass
class _Reply:
    """A reply as it accumulates from stream events (or from one JSON body)."""

    text: list[str] = field(default_factory=list)
    calls: dict[int, dict[str, str]] = field(default_factory=dict)  # index -> name, arguments
    finish: str | None = None
    usage: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, Any] = field(default_factory=dict)
    first: float | None = None
    top: list[tuple[str, float]] | None = None  # the first token's alternatives and log-probabilities

    def add(self, chunk: Any, on_piece: Callable[[str], None]) -> None:
        if not isinstance(chunk, dict):
            raise _Failure("malformed reply: an event is not a JSON object")
        if "error" in chunk:
            raise _Failure(f"the server reported an error: {_message(chunk)}")
        if isinstance(chunk.get("usage"), dict):
            self.usage = chunk["usage"]
        if isinstance(chunk.get("timings"), dict):
            self.timings = chunk["timings"]
        choices = chunk.get("choices")
        if not isinstance(choices, list):
            raise _Failure("malformed reply: no 'choices' list")
        for choice in choices:
            if not isinstance(choice, dict):
                raise _Failure("malformed reply: a choice is not an object")
            delta = choice.get("delta") or choice.get("message") or {}
            piece = delta.get("content") if isinstance(delta, dict) else None
            if isinstance(piece, str) and piece:
                self.first = self.first or time.monotonic()
                self.text.append(piece)
                on_piece(piece)
            for tc in (delta.get("tool_calls") or []) if isinstance(delta, dict) else []:
                self.first = self.first or time.monotonic()
                fn = tc.get("function") or {}
                slot = self.calls.setdefault(int(tc.get("index", len(self.calls))), {"name": "", "arguments": ""})
                name = fn.get("name") or ""
                if name != slot["name"]:  # some servers repeat the whole name in every delta
                    slot["name"] += name
                args = fn.get("arguments")
                slot["arguments"] += args if isinstance(args, str) else json.dumps(args) if args is not None else ""
            if self.top is None and isinstance(choice.get("logprobs"), dict):
                self.top = _top_logprobs(choice["logprobs"])
            if choice.get("finish_reason"):
                self.finish = str(choice["finish_reason"])

    def full_text(self, one_call: bool = False) -> str:
        """The content, then each server-parsed call in our envelope, exactly as sent: a call
        whose arguments are not a JSON object fails the local parser like any other. With
        ``one_call`` (parallel calls off), a call after the first becomes a block that is no
        JSON, so the parser answers it with a format error and it never runs, as in-process,
        where the grammar allows one call."""
        out = "".join(self.text)
        for n, i in enumerate(sorted(self.calls)):
            c = self.calls[i]
            body = f'{{"name": {json.dumps(c["name"])}, "arguments": {c["arguments"].strip() or "{}"}}}'
            if one_call and n:
                name = re.sub(r"[^\w.-]", "", c["name"])[:24] or "?"
                body = f"not run: one call a turn; call {name} again next turn"  # the parser shows 80 characters
            out += ("\n" if out else "") + f"{CALL_OPEN}\n{body}\n{CALL_CLOSE}"
        return out


class ServerBackend:
    """A model behind an OpenAI-compatible ``/v1/chat/completions`` endpoint."""

    name: str
    native_tools: bool
    context_size: int
    # Not every server says what it evaluated (then the whole prompt counts): no reuse check.
    reuses_kv_cache = False
    decides_each_call = False  # the server samples the whole turn

    def __init__(
        self,
        base_url: str,
        *,
        model: str | None = None,
        api_key: str | None = None,
        dialect: str = "auto",
        n_ctx: int = 8192,
        timeout: float = 120.0,
        connect_timeout: float = 10.0,
        retries: Retries = Retries(),
        stream: bool = True,
        first_token: bool = True,
        template_tools: bool | None = None,
    ):
        if dialect not in DIALECTS:
            raise ConfigError(f"unknown server dialect '{dialect}'; one of: {', '.join(DIALECTS)}")
        url = urlsplit(base_url if "://" in base_url else "http://" + base_url)
        if url.scheme not in ("http", "https") or not url.hostname:
            raise ConfigError(f"`base_url` {base_url!r} is not an http(s) URL such as http://127.0.0.1:8080")
        self.base_url = base_url
        root = url.path.rstrip("/")
        root = root[: -len("/v1")] if root.endswith("/v1") else root  # /tokenize lives outside /v1
        self._root = f"{url.scheme}://{url.netloc}{root}"
        self.model, self.api_key, self.dialect = model, api_key, dialect
        self.timeout, self.connect_timeout = timeout, connect_timeout  # waiting for the reply; connecting
        self.retries, self.stream = retries, stream
        self._client: httpx2.Client | None = None  # made at the first request, kept for keep-alive
        self.context_size = n_ctx
        self.server: str | None = None  # who serves it, once asked (see probe)
        # Whether the server's chat template lists the tools itself (llama-cpp-python's can):
        # then the prompt is the one in-process renders. None: asked with the server.
        self.template_tools = template_tools
        self._tokenize_ok = True
        # Why call or prose is not decided at the first token (see _first_token): None while it is.
        self._no_logprobs: str | None = None if first_token else "turned off"
        self._counts: dict[tuple[int, int], int] = {}
        self._settle()

    def _settle(self) -> None:
        self.name = f"{self.model or 'model'} at {self.base_url}"
        # The server lists the tools itself (and its template, not our prompt, describes them).
        self.native_tools = self._dialect() == "openai" or bool(self.template_tools and self._dialect() == "llama.cpp")

    # -- who is serving --------------------------------------------------------------

    def probe(self) -> bool:
        """Ask ``GET /v1/models`` who serves the model, its name and its context size;
        False when the server cannot be reached (it is asked again at the next request)."""
        try:
            self._probe()
        except _Failure:
            return False
        return True

    def _probe(self) -> None:
        if self.server is not None:
            return
        try:
            data = self._get_json("/v1/models", timeout=min(self.timeout, 10.0))
        except _Failure as f:
            if f.network:
                raise  # not reachable: not known yet
            data = None  # a server without /v1/models
        cards = data.get("data") if isinstance(data, dict) else None
        card: dict[str, Any] = cards[0] if isinstance(cards, list) and cards and isinstance(cards[0], dict) else {}
        self.server = _OWNERS.get(str(card.get("owned_by", "")), "openai-compatible")
        if self.model is None and isinstance(card.get("id"), str):
            self.model = card["id"]
        meta = card.get("meta")
        n_ctx = card.get("max_model_len") or (meta.get("n_ctx") if isinstance(meta, dict) else None)
        if isinstance(n_ctx, int) and n_ctx > 0:
            self.context_size = min(self.context_size, n_ctx)
        if self.template_tools is None:
            self.template_tools = self.server == "llama-cpp-python" and self._lists_tools()
        self._settle()

    def _lists_tools(self) -> bool:
        """Whether the server's template renders a tool list: one token asked with a tool and
        without, the prompt tokens each reports compared. Asked of llama-cpp-python, which
        gives its template ``tools`` and still takes a grammar beside them."""
        tool = {"type": "function", "function": {"name": "probe", "description": "A tool.", "parameters": {"type": "object", "properties": {}}}}
        counts: list[int | None] = []
        for extra in ({"tools": [tool]}, {}):
            body = {"messages": [{"role": "user", "content": "Hi."}], "max_tokens": 1, "temperature": 0.0, "stream": False, **extra}
            if self.model:
                body["model"] = self.model
            try:
                data = self._post_json("/v1/chat/completions", body)
            except _Failure:
                return False  # our own prompt, which any template carries
            usage = data.get("usage") if isinstance(data, dict) else None
            counts.append(_int(usage.get("prompt_tokens")) if isinstance(usage, dict) else None)
        listed, bare = counts
        return listed is not None and bare is not None and listed > bare

    def _dialect(self) -> str:
        if self.dialect != "auto":
            return self.dialect
        return {"llama.cpp": "llama.cpp", "llama-cpp-python": "llama.cpp", "vllm": "vllm"}.get(self.server or "", "openai")

    # -- tokens ----------------------------------------------------------------------

    def count_tokens(self, text: str) -> int:
        """Tokens in ``text`` by the server's tokenizer (llama-cpp-python's
        ``/extras/tokenize``, llama.cpp's and vLLM's ``/tokenize``); where there is
        none, or it cannot be reached, an estimate of four characters a token."""
        if not text:
            return 0
        key = (len(text), hash(text))
        if key in self._counts:
            return self._counts[key]
        n = self._tokenize(text)
        if n is None:
            return estimate_tokens(text)
        if len(self._counts) >= 4096:
            self._counts.clear()
        self._counts[key] = n
        return n

    def _tokenize(self, text: str) -> int | None:
        if not self._tokenize_ok:
            return None
        try:
            self._probe()
            if self.server == "llama-cpp-python":
                data = self._post_json("/extras/tokenize", {"input": text})
            elif self.server in ("llama.cpp", "vllm"):
                data = self._post_json("/tokenize", {"content": text, "prompt": text, "model": self.model, "add_special_tokens": False})
            else:
                data = None
        except _Failure as f:
            if not f.network:
                self._tokenize_ok = False  # the endpoint is not there: estimate from now on
            return None
        tokens = data.get("tokens") if isinstance(data, dict) else None
        if not isinstance(tokens, list):
            self._tokenize_ok = False
            return None
        return len(tokens)

    def prompt_tokens(self, messages: list[Message], tools: list[dict[str, Any]]) -> int:
        """An estimate: the tokens of every message as sent, four per message for the
        template's markers, and the tool list where the server renders it itself."""
        sent = self.request_messages(messages, tools)
        n = sum(self.count_tokens(_content(d)) + 4 for d in sent) + 3
        if self.native_tools and tools:
            n += self.count_tokens(json.dumps(tools if self._dialect() == "openai" else shown_schemas(tools), ensure_ascii=False))
        return n

    # -- requests --------------------------------------------------------------------

    def request_messages(self, messages: list[Message], tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The history as the dialect sends it."""
        if self._dialect() == "openai":
            return openai_messages(messages)
        if self.native_tools:
            return template_messages(messages)
        return text_messages(messages, tools)

    def request_body(self, messages: list[Message], tools: list[dict[str, Any]], options: GenerateOptions) -> dict[str, Any]:
        """The JSON body of one chat-completion request; raises _Failure("constraint")
        for a constraint this dialect cannot carry."""
        dialect = self._dialect()
        body: dict[str, Any] = {
            "messages": self.request_messages(messages, tools),
            "max_tokens": options.max_tokens,
            "temperature": options.temperature,
            "top_p": options.top_p,
            "stream": self.stream,
        }
        if self.model:
            body["model"] = self.model
        if options.seed is not None:
            body["seed"] = options.seed
        if self.stream:
            body["stream_options"] = {"include_usage": True}
        grammar = options.grammar
        if options.lark and dialect != "openai":  # no dialect carries one: refused, not sent unconstrained
            raise _Failure("a server takes no llguidance grammar: use the gbnf engine", "constraint")
        if dialect == "llama.cpp":
            if grammar:
                body["grammar"] = grammar
            if self.native_tools and tools:
                body["tools"] = shown_schemas(tools)  # for the template only: no tool_choice, so the grammar decides
            # The rest of the chain as in-process (llama-cpp-python's server's penalty defaults to 1.1).
            body.update(top_k=options.top_k, min_p=options.min_p, repeat_penalty=options.repeat_penalty)
        if dialect in ("vllm", "vllm-legacy"):  # vLLM's penalty: on prompt and reply, no window
            body.update(top_k=options.top_k, min_p=options.min_p, repetition_penalty=options.repeat_penalty)
        if dialect == "vllm" and grammar:
            body["structured_outputs"] = {"grammar": grammar}
        elif dialect == "vllm-legacy" and grammar:
            body["guided_grammar"] = grammar
        elif dialect == "openai" and tools:
            choice = options.tool_choice
            body["tools"] = tools
            body["tool_choice"] = choice if choice in ("auto", "required", "none") else {"type": "function", "function": {"name": choice}}
            if not options.parallel:
                body["parallel_tool_calls"] = False
        return body

    def tool_relevance(self, request: str, tools: list[dict[str, Any]]) -> list[float] | None:
        return None  # scoring a given text is not in the chat API: the first-turn gate is not applied

    def generate(self, messages: list[Message], tools: list[dict[str, Any]], options: GenerateOptions) -> Generation:
        t0 = time.monotonic()
        shown: list[str] = []  # what on_text was given, over every try
        failures: list[str] = []
        partial = ""
        for attempt in range(1, self.retries.attempts + 1):
            reply = _Reply()
            try:
                self._probe()
                step, decision, mass = self._first_token(messages, tools, options)
                body = self.request_body(messages, tools, step)
                self._chat(body, reply, _replay(shown, reply, options.on_text))
                gen = self._generation(reply, messages, tools, t0, attempt, failures, shown, options.parallel)
                gen.details.constraint = next((k for k in _CONSTRAINT_KEYS if k in body), None)
                gen.decision, gen.call_mass = decision, mass
                if self._no_logprobs and options.call_threshold is not None:
                    gen.details.no_decision = self._no_logprobs
                return gen
            except _Failure as f:
                failures.append(str(f))
                if len("".join(reply.text)) >= len(partial):
                    partial = "".join(reply.text)
                if f.kind != "retry" or attempt == self.retries.attempts:
                    return self._failed(f, partial, attempt, failures, t0)
                time.sleep(self.retries.wait(attempt, f.retry_after))
        raise AssertionError("unreachable")  # pragma: no cover - the loop always returns

    def _first_token(
        self, messages: list[Message], tools: list[dict[str, Any]], options: GenerateOptions
    ) -> tuple[GenerateOptions, Decision | None, float | None]:
        """Call or prose decided at the first token, as in-process: one request for one token
        and its top log-probabilities (unconstrained), then the step's grammar with its calls
        alone or its prose alone. Without it the grammar alone decides, and a small model
        through a server wrote "1" where in-process it called a tool. Options unchanged (and
        no decision) when the step has no threshold or the server gives no log-probabilities."""
        c = options.constraint
        if options.call_threshold is None or c is None or c.engine != "gbnf" or self._no_logprobs or self._dialect() == "openai":
            return options, None, None
        call, prose = decided_grammar(c.text, "call"), decided_grammar(c.text, "prose")
        if call is None or prose is None:
            return options, None, None
        ask = replace(options, constraint=None, max_tokens=1, temperature=0.0, call_threshold=None, on_text=None)
        body = self.request_body(messages, tools, ask)
        # Streamed: llama-cpp-python then computes log-probabilities for the new token only.
        body.update(logprobs=True, top_logprobs=TOP_LOGPROBS, stream=True, stream_options={"include_usage": True})
        reply = _Reply()
        try:
            self._chat(body, reply, lambda _: None)
        except _Failure as f:
            if f.network:
                raise  # the step's try failed: tried again as a whole
            self._no_logprobs = f"the first-token request failed: {f}"
            return options, None, None
        mass = call_mass(reply.top or [])
        if mass is None:
            self._no_logprobs = "the server returned no log-probabilities"
            return options, None, None
        decision: Decision = "call" if mass >= options.call_threshold else "prose"
        decided = replace(c, text=call if decision == "call" else prose)
        return replace(options, constraint=decided, call_threshold=None), decision, round(mass, 4)

    def _failed(self, f: _Failure, partial: str, attempts: int, failures: list[str], t0: float) -> Generation:
        details = StepInfo(server=self.server, dialect=self._dialect(), attempts=attempts, failures=failures)
        tries = f" (after {attempts} tries over {time.monotonic() - t0:.1f} s)" if attempts > 1 else ""
        finish: FinishReason = "context" if f.kind == "context" else "error"
        seen = list(dict.fromkeys(failures))  # each kind of failure once, in order
        return Generation(
            partial, finish, completion_tokens=estimate_tokens(partial), seconds=time.monotonic() - t0,
            error=f"server {self.base_url}: {'; then '.join(seen)}{tries}", constraint_error=f.kind == "constraint",
            details=details,
        )

    def _generation(
        self, reply: _Reply, messages: list[Message], tools: list[dict[str, Any]], t0: float,
        attempts: int, failures: list[str], shown: list[str], parallel: bool,
    ) -> Generation:
        text = reply.full_text(one_call=not parallel)
        usage = reply.usage
        prompt = _int(usage.get("prompt_tokens")) or self.prompt_tokens(messages, tools)
        completion = _int(usage.get("completion_tokens")) or self.count_tokens(text)
        cached = _int((usage.get("prompt_tokens_details") or {}).get("cached_tokens")) if isinstance(usage.get("prompt_tokens_details"), dict) else None
        if _int(reply.timings.get("prompt_n")) is not None:
            evaluated = _int(reply.timings.get("prompt_n")) or 0  # llama.cpp: what it really evaluated
        elif cached is not None:
            evaluated = prompt - cached
        else:
            evaluated = prompt  # nothing said about a cache: count it all
        finish: FinishReason = "length" if reply.finish == "length" else "stop"
        details = StepInfo(server=self.server, dialect=self._dialect(), attempts=attempts, usage="server" if usage else "estimated")
        if failures:
            details.failures = failures
        if reply.calls:
            details.server_tool_calls = len(reply.calls)
        if not "".join(shown).startswith("".join(reply.text)[: len("".join(shown))]):
            details.stream_diverged = True  # a retry differed from the text already shown
        return Generation(
            text, finish, prompt, evaluated, completion, time.monotonic() - t0,
            (reply.first - t0) if reply.first else None, details=details,
        )

    def _chat(self, body: dict[str, Any], reply: _Reply, on_piece: Callable[[str], None]) -> None:
        with self._request("POST", "/v1/chat/completions", body, self.timeout) as resp:
            try:
                if not _is_stream(resp):  # asked for one JSON body, or a server that does not stream
                    reply.add(_parse(resp.read()), on_piece)
                    return
                done = False
                for event in httpx2.EventSource(resp):  # ": ping" comments and blank lines never reach here
                    if event.data == "[DONE]":
                        done = True
                        break
                    reply.add(_parse(event.data), on_piece)
            except (ValueError, TypeError, AttributeError, KeyError) as e:
                raise _Failure(f"malformed reply: {type(e).__name__}: {e}") from None
            if not done and reply.finish is None:
                raise _Failure("the reply was cut off (the stream ended before its last event)")

    # -- HTTP --------------------------------------------------------------------------

    def _http(self) -> httpx2.Client:
        """The one client of this backend: its connections stay open from step to step,
        and it takes its proxies from the environment."""
        if self._client is None:
            headers = {"Accept": "application/json, text/event-stream"}
            if self.api_key:
                headers["Authorization"] = f"Bearer {self.api_key}"
            self._client = httpx2.Client(headers=headers, trust_env=True)
        return self._client

    def close(self) -> None:
        """Close the kept-alive connections (a later request opens new ones)."""
        if self._client is not None:
            self._client.close()
            self._client = None

    @contextmanager
    def _request(self, method: str, path: str, body: Any, timeout: float) -> Iterator[httpx2.Response]:
        """The response to one request, its body still to be read; every network failure,
        while connecting or while reading, is a ``_Failure``."""
        limits = httpx2.Timeout(timeout, connect=min(timeout, self.connect_timeout))
        answered = False
        try:
            with self._http().stream(method, self._root + path, json=body, timeout=limits) as resp:
                answered = True
                if resp.status_code >= 400:
                    raise _status(resp, method, path)
                yield resp
        except httpx2.TransportError as e:
            raise _network(e, limits, answered) from None

    def _get_json(self, path: str, timeout: float) -> Any:
        with self._request("GET", path, None, timeout) as resp:
            return _parse(resp.read())

    def _post_json(self, path: str, body: dict[str, Any]) -> Any:
        with self._request("POST", path, body, min(self.timeout, 10.0)) as resp:
            return _parse(resp.read())


def openai_messages(messages: list[Message]) -> list[dict[str, Any]]:
    """The history in OpenAI's shape: calls as ``tool_calls``, results as ``tool``
    turns. A result that answers no call the server saw (a format error) goes as a
    user turn, which strict servers require."""
    out: list[dict[str, Any]] = []
    ids: set[str] = set()
    for m in messages:
        if m.role == "assistant":
            d: dict[str, Any] = {"role": "assistant", "content": m.content}
            if m.tool_calls:
                d["content"] = m.content or None
                d["tool_calls"] = [
                    {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": json.dumps(c.arguments, ensure_ascii=False)}}
                    for c in m.tool_calls
                ]
            ids = {c.id for c in m.tool_calls}
            out.append(d)
        elif m.role == "tool" and m.tool_call_id in ids:
            out.append({"role": "tool", "tool_call_id": m.tool_call_id, "content": m.content})
        elif m.role == "tool":
            out.append({"role": "user", "content": render_result(m.content)})
        else:
            out.append({"role": m.role, "content": m.content})
    return out


def call_mass(top: list[tuple[str, float]]) -> float | None:
    """The share of the first token's top alternatives that start structured output (a tag,
    a brace, a fence, white space: what in-process counts over the whole vocabulary); None
    for no alternatives. Normalised over the alternatives given, which hold nearly all."""
    probs = [(piece, math.exp(lp)) for piece, lp in top if math.isfinite(lp)]
    total = sum(p for _, p in probs)
    if total <= 0:
        return None
    return sum(p for piece, p in probs if piece.strip() == "" or piece.lstrip().startswith(STRUCTURED_STARTS)) / total


def _top_logprobs(logprobs: dict[str, Any]) -> list[tuple[str, float]] | None:
    """The first token's alternatives from a choice's ``logprobs`` (OpenAI's shape)."""
    content = logprobs.get("content")
    if not isinstance(content, list) or not content or not isinstance(content[0], dict):
        return None
    top = content[0].get("top_logprobs")
    if not isinstance(top, list):
        return None
    out = [(t["token"], float(t["logprob"])) for t in top
           if isinstance(t, dict) and isinstance(t.get("token"), str) and isinstance(t.get("logprob"), (int, float))]
    return out or None


def template_messages(messages: list[Message]) -> list[dict[str, Any]]:
    """The history for a server whose template lists the tools, as in-process renders it for
    such a template: assistant turns as generated (calls in the envelope), results as tool turns."""
    out: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "assistant":
            calls = [render_call(c.name, c.arguments) for c in m.tool_calls]
            out.append({"role": "assistant", "content": m.raw if m.raw is not None else "\n".join([m.content] * bool(m.content) + calls)})
        elif m.role == "tool":
            out.append({"role": "tool", "content": m.content, "tool_call_id": m.tool_call_id or "call"})
        else:
            out.append({"role": m.role, "content": m.content})
    return out


def _replay(shown: list[str], reply: _Reply, on_text: Callable[[str], None] | None) -> Callable[[str], None]:
    """Passes on only text beyond what earlier tries already showed: a retry after a
    cut-off stream starts again from the beginning."""
    seen = len("".join(shown))
    got = 0

    def on_piece(piece: str) -> None:
        nonlocal got
        new = piece[max(0, seen - got) :]
        got += len(piece)
        if new and got > seen:
            shown.append(new)
            if on_text:
                on_text(new)

    return on_piece


def _content(d: dict[str, Any]) -> str:
    text = d.get("content") or ""
    if d.get("tool_calls"):
        text += json.dumps(d["tool_calls"], ensure_ascii=False)
    return str(text)


def _int(x: Any) -> int | None:
    return x if isinstance(x, int) and not isinstance(x, bool) and x >= 0 else None


def _parse(data: str | bytes) -> Any:
    try:
        return json.loads(data)
    except ValueError:
        raise _Failure(f"malformed reply: not JSON: {data[:80]!r}") from None


def _is_stream(resp: httpx2.Response) -> bool:
    return resp.headers.get("content-type", "").partition(";")[0].strip().lower() == "text/event-stream"


def _message(data: Any) -> str:
    """The error text in a server's JSON error body, whichever shape it takes."""
    if isinstance(data, dict):
        for key in ("error", "detail", "message"):
            v = data.get(key)
            if isinstance(v, dict):
                return _message(v)
            if v:
                return str(v)
    return str(data)[:200]


def _network(e: httpx2.TransportError, limits: httpx2.Timeout, answered: bool) -> _Failure:
    """One line for a failed connection or read; all are worth another try."""
    cause = _root_cause(e)
    if isinstance(e, httpx2.ConnectTimeout):
        return _Failure(f"no connection within {limits.connect:g} s", network=True)
    if isinstance(e, httpx2.TimeoutException):
        return _Failure(f"no answer within {limits.read:g} s", network=True)
    if isinstance(e, httpx2.ProxyError):
        return _Failure(f"the proxy failed: {e}", network=True)
    if isinstance(cause, ConnectionRefusedError):
        return _Failure("connection refused (is the server running?)", network=True)
    if isinstance(cause, socket.gaierror):
        return _Failure(f"cannot resolve the host name ({cause.strerror})", network=True)
    if isinstance(e, (httpx2.RemoteProtocolError, httpx2.ReadError, httpx2.WriteError)):
        if answered:
            return _Failure("the connection broke in the middle of the reply", network=True)
        return _Failure("the server closed the connection without answering", network=True)
    return _Failure(f"network error: {type(e).__name__}: {e}", network=True)


def _root_cause(e: BaseException) -> BaseException:
    """The exception at the bottom of a chain (httpx2 wraps httpcore2's, which wraps the OSError)."""
    seen = {id(e)}
    while (nxt := e.__cause__ or e.__context__) is not None and id(nxt) not in seen:
        seen.add(id(nxt))
        e = nxt
    return e


def _status(resp: httpx2.Response, method: str, path: str) -> _Failure:
    """A failure for an HTTP error answer: 429 and 5xx are worth another try."""
    raw = resp.read()[:65536]
    try:
        text = _message(json.loads(raw))
    except ValueError:
        text = raw.decode("utf-8", "replace").strip()[:200] or resp.reason_phrase
    code = resp.status_code
    try:
        after: float | None = float(resp.headers.get("Retry-After") or "")
    except ValueError:
        after = None
    if code == 429:
        return _Failure(f"rate limited (429): {text}", status=code, retry_after=after)
    if code >= 500:
        return _Failure(f"server error {code}: {text}", status=code, retry_after=after)
    low = text.lower()
    if code == 400 and "context" in low and any(w in low for w in ("length", "size", "window", "exceed")):
        return _Failure(f"the prompt does not fit the server's context: {text}", "context", status=code)
    if code == 400 and "grammar" in low:
        return _Failure(f"the server refused the grammar: {text}; `dialect` openai sends tools instead", "constraint", status=code)
    if code in (401, 403):
        return _Failure(f"the server refused the request ({code}): {text}; check `api_key`", "fatal", status=code)
    return _Failure(f"{method} {path} answered {code}: {text}", "fatal", status=code)
