"""Dispatch: validate, approve, run with a timeout, truncate; exactly one result per call.

Tools run one at a time, in the order called, each in a daemon worker thread so that a
timeout can be enforced. Python cannot kill a thread from outside: a tool past its timeout
is abandoned, and an exception is raised in its thread at its next Python instruction
(CPython's ``PyThreadState_SetAsyncExc``), so it stops there, its ``finally`` blocks run,
and it does not go on writing or printing. A tool blocked inside one C call (a sleep, a
read) stops only when that call returns. Whatever an abandoned tool still prints stays in
its own buffer. Tools that start processes must kill them on their own timeout
(``subprocess.run(..., timeout=...)``).
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from io import StringIO
from pathlib import Path
from typing import Any, TextIO, TypeVar

from pydantic import BaseModel

from .errors import ErrorKind, ToolErrorInfo
from .messages import ToolCall, ToolResult
from .tools import Tool, ToolContext, ToolSet
from .validate import closest_names, validate_arguments
from .tools.workspace import WorkspaceError

__all__ = ["Approver", "Dispatcher", "call_with_timeout", "estimate_tokens", "tools_still_running", "truncate"]

Approver = Callable[[Tool, ToolCall], tuple[bool, str]]  # (approved?, reason shown to the model)
DEFAULT_MAX_RETRIES = 3  # for names that are no tool at all
T = TypeVar("T")


def estimate_tokens(text: str) -> int:
    """A tokenizer-free estimate: about four characters per token."""
    return (len(text) + 3) // 4


def truncate(text: str, limit: int, count_tokens: Callable[[str], int] = estimate_tokens) -> tuple[str, int]:
    """The longest head of ``text`` within ``limit`` tokens, and how many tokens were cut."""
    total = count_tokens(text)
    if total <= limit:
        return text, 0
    if limit <= 0:
        return "", total
    # Search only a window near the answer: counting a megabyte at every step would be slow
    # with a real tokenizer. Few tokens are longer than 16 characters; widen if they are.
    lo, hi = 0, min(len(text), limit * 16)
    while hi < len(text) and count_tokens(text[:hi]) <= limit:
        lo, hi = hi, min(len(text), hi * 2)
    # Invariant: text[:lo] fits, text[:hi] does not.
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if count_tokens(text[:mid]) <= limit:
            lo = mid
        else:
            hi = mid
    head = text[:lo]
    return head, total - count_tokens(head)


# Tool thread -> the buffer its prints go to. Shared by every router, so a router that
# someone else's redirection left in place still routes a tool that prints late.
_sinks: dict[int, StringIO] = {}


class _Router:
    """Stands in for sys.stdout/stderr: writes from a tool's thread go to its buffer."""

    def __init__(self, target: TextIO) -> None:
        self.target = target

    def write(self, s: str) -> int:
        sink = _sinks.get(threading.get_ident())
        return (sink or self.target).write(s)

    def flush(self) -> None:
        self.target.flush()

    def __getattr__(self, name: str) -> Any:  # encoding, isatty, fileno, ...
        return getattr(self.target, name)


_router_lock = threading.Lock()
_routers: dict[str, _Router] = {}


@contextmanager
def _routed_output() -> Iterator[None]:
    """Route tool threads' prints for the duration of a batch, then put the streams back.

    Swapping sys.stdout is process-global, so other threads' writes pass straight through.
    While an abandoned tool is still alive the router stays installed, so that its late
    prints are swallowed instead of landing on the terminal.
    """
    with _router_lock:
        for name in ("stdout", "stderr"):
            current = getattr(sys, name)
            if current is not _routers.get(name):
                _routers[name] = _Router(current)
                setattr(sys, name, _routers[name])
    try:
        yield
    finally:
        with _router_lock:
            for name, router in list(_routers.items()):
                if getattr(sys, name) is router and not _sinks:
                    setattr(sys, name, router.target)
                    del _routers[name]


class _Abandoned(BaseException):
    """Raised inside a tool's thread once the dispatcher has given up on it (a timeout)."""


_started: set["_Worker"] = set()  # workers whose thread has not finished


def tools_still_running() -> bool:
    """Whether a tool given up on (Ctrl-C, its timeout) is still running, inside a long C call.
    The interpreter must not be finalized around it: see ``cli.main``."""
    return any(not w.done.is_set() for w in list(_started))


class _Worker:
    """One tool call in a daemon thread; ``stop()`` ends it at its next Python instruction.

    The stop is sent only while the tool function runs: the flag and the lock make sure
    that one sent just as the tool returned is taken back before the thread goes on, so it
    can never fire in threading's own code after the worker is done.
    """

    def __init__(self, fn: Callable[..., Any], kwargs: dict[str, Any], name: str) -> None:
        self.fn, self.kwargs = fn, kwargs
        self.out = StringIO()
        self.done = threading.Event()
        self.box: dict[str, Any] = {}
        self._lock = threading.Lock()
        self._finished = self._stopped = False
        self._thread = threading.Thread(target=self._work, name=name, daemon=True)

    def start(self) -> None:
        _started.add(self)
        try:
            self._thread.start()
        except BaseException:
            _started.discard(self)
            raise

    def stop(self) -> None:
        """Raise ``_Abandoned`` in the tool's thread, unless the tool is already done."""
        with self._lock:
            if self._finished or self._thread.ident is None:
                return
            self._stopped = True
            _async_raise(self._thread.ident, _Abandoned)

    def _work(self) -> None:
        me = threading.get_ident()
        _sinks[me] = self.out
        try:
            try:
                self.box["value"] = self.fn(**self.kwargs)
            except BaseException as e:  # a tool's sys.exit() must not end the agent
                self.box["error"] = e
        except _Abandoned:  # the stop arrived just as the tool returned
            pass
        finally:
            while True:  # a stop sent just now fires at most once, anywhere in here
                try:
                    with self._lock:
                        self._finished = True
                        if self._stopped:
                            _async_raise(me, None)  # one that has not fired yet never will
                    break
                except _Abandoned:
                    continue
            _sinks.pop(me, None)  # before done.set(), so the batch can put the streams back
            self.done.set()
            _started.discard(self)


def _abandon(worker: _Worker, grace: float = 0.3) -> None:
    """Stop a tool the user interrupted, and give it a moment to end. Left running, it would go
    on changing things after Ctrl-C, and a thread still inside C++ code (RE2's search) when the
    interpreter exits aborts the process instead of letting it exit 130."""
    worker.stop()
    worker.done.wait(grace)


def _async_raise(thread_id: int, exc: type[BaseException] | None) -> None:
    """Raise ``exc`` in the thread ``thread_id`` at its next instruction (None: take it back)."""
    obj = ctypes.py_object(exc) if exc is not None else None
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id), obj)


def call_with_timeout(fn: Callable[[], T], seconds: float) -> T:
    """``fn()`` run as a tool runs: in a worker thread, its prints captured, stopped at its next
    Python instruction past ``seconds`` (a ``TimeoutError``); its exception raised here."""
    worker = _Worker(fn, {}, "bounded")
    worker.start()
    try:
        finished = worker.done.wait(seconds)
    except KeyboardInterrupt:
        _abandon(worker)
        raise
    if not finished:
        worker.stop()
        raise TimeoutError(f"did not finish within {seconds:g} s")
    if "error" in worker.box:
        raise worker.box["error"]
    value: T = worker.box["value"]
    return value


_VALUE_ERRORS = frozenset({ErrorKind.NOT_FOUND, ErrorKind.NOT_A_FILE, ErrorKind.NOT_A_DIR, ErrorKind.UNKNOWN_VALUE})


def _corrected(call: ToolCall, error: ToolErrorInfo) -> dict[str, Any] | None:
    """``call`` with the wrong argument replaced by the closest valid value, if there is one.
    Only for errors whose alternatives are values of that argument (not, say, a misspelt
    argument name), and only for string values, so the corrected call is still well typed."""
    if error.kind not in _VALUE_ERRORS or not error.alternatives:
        return None
    if not isinstance(call.arguments.get(error.argument or ""), str):
        return None
    value: Any = error.alternatives[0]
    if isinstance(value, str) and error.kind == ErrorKind.NOT_FOUND:
        value = value.rstrip("/")  # a suggested folder is shown as 'docs/'; the path is 'docs'
    return {"name": call.name, "arguments": {**call.arguments, error.argument: value}}


class Dispatcher:
    """Runs a turn's tool calls and returns one ``ToolResult`` per call, in order."""

    def __init__(
        self,
        tools: ToolSet,
        ctx: ToolContext,
        *,
        max_result_tokens: int = 1000,
        count_tokens: Callable[[str], int] | None = None,
        approver: Approver | None = None,
    ) -> None:
        self.tools = tools
        self.ctx = ctx
        self.max_result_tokens = max_result_tokens
        self.count_tokens = count_tokens or estimate_tokens
        self.approver = approver
        self.failures: dict[str, int] = {}  # consecutive failed calls, per tool name

    @property
    def retry_exhausted(self) -> list[str]:
        """Tools whose consecutive failures passed their ``max_retries``: the loop should stop."""
        return [n for n, k in self.failures.items() if k > self._max_retries(n)]

    def reset_retries(self) -> None:
        """Forget failure counts (e.g. when a new task starts)."""
        self.failures.clear()

    def run(self, calls: list[ToolCall]) -> list[ToolResult]:
        """Run ``calls`` in order; a failing call gives an error result, never an exception."""
        with _routed_output():
            return [self._run_one(call) for call in calls]

    def _max_retries(self, name: str) -> int:
        t = self.tools.get(name)
        return t.max_retries if t else DEFAULT_MAX_RETRIES

    def _run_one(self, call: ToolCall) -> ToolResult:
        start = time.perf_counter()
        t = self.tools.get(call.name)
        content, printed, error = "", "", None
        if t is None:
            error = self._unknown_tool(call.name)
        else:
            checked = validate_arguments(t, call.arguments, self.ctx)
            if isinstance(checked, ToolErrorInfo):
                error = checked
                error.retry = _corrected(call, error)
            elif t.irreversible and (denial := self._approve(t, call)) is not None:
                error = denial
            else:
                if t.context_param:
                    checked[t.context_param] = self.ctx
                content, printed, error = self._execute(t, checked)

        if error is None:
            self.failures.pop(call.name, None)
        elif error.kind != ErrorKind.DENIED:  # a person's refusal is no mistake of the model's
            self.failures[call.name] = self.failures.get(call.name, 0) + 1
            if self.failures[call.name] > self._max_retries(call.name):
                error.message += f" (retry limit reached for '{call.name}')"
        if error is not None:
            if printed:
                error.detail["printed"] = printed
            content = error.render()
        elif printed:
            content = f"{content}\n[printed output]\n{printed}" if content else printed

        content, cut = self._truncate(t, call, content)
        return ToolResult(
            call_id=call.id,
            name=call.name,
            content=content,
            error=error,
            truncated_tokens=cut,
            seconds=time.perf_counter() - start,
        )

    def _unknown_tool(self, name: str) -> ToolErrorInfo:
        names = self.tools.names()
        if not names:
            return ToolErrorInfo(kind=ErrorKind.UNKNOWN_TOOL, message=f"unknown tool '{name}'; no tools are available")
        alts = closest_names(str(name), names, limit=1)
        ordered = alts + [n for n in names if n not in alts]
        # The closest name leads the list; kept out of `alternatives` so render() does not
        # repeat it as a second "closest:" clause.
        return ToolErrorInfo(
            kind=ErrorKind.UNKNOWN_TOOL,
            message=f"unknown tool '{name}'; available tools: {', '.join(ordered)}",
            detail={"closest": alts},
        )

    def _approve(self, t: Tool, call: ToolCall) -> ToolErrorInfo | None:
        if self.approver is None:
            message = f"denied: '{t.name}' requires human approval and no approver is set; do not retry it"
            return ToolErrorInfo(kind=ErrorKind.DENIED, message=message)
        ok, reason = self.approver(t, call)
        if ok:
            return None
        why = f": {reason}" if reason else ""
        return ToolErrorInfo(kind=ErrorKind.DENIED, message=f"denied: the user refused '{t.name}'{why}")

    def _execute(self, t: Tool, kwargs: dict[str, Any]) -> tuple[str, str, ToolErrorInfo | None]:
        """(content, printed output, error) of one run in a worker thread."""
        worker = _Worker(t.fn, kwargs, f"tool-{t.name}")
        worker.start()
        try:
            finished = worker.done.wait(t.timeout)
        except KeyboardInterrupt:
            _abandon(worker)
            raise
        if not finished:
            printed = worker.out.getvalue()
            worker.stop()
            message = f"'{t.name}' did not finish within {t.timeout:g} s and was abandoned"
            return "", printed, ToolErrorInfo(kind=ErrorKind.TIMEOUT, message=message)
        printed = worker.out.getvalue()
        box = worker.box
        if "error" in box:
            root = self.ctx.workspace.root if self.ctx.workspace is not None else None
            return "", printed, _exception_info(t, box["error"], root)
        try:
            return _to_text(box["value"]), printed, None
        except Exception:  # TypeError, ValueError, and RecursionError for a deeply nested value
            kind = type(box["value"]).__name__
            return "", printed, ToolErrorInfo(kind=ErrorKind.TOOL_EXCEPTION, message=f"result is not serialisable: {kind}")

    def _truncate(self, t: Tool | None, call: ToolCall, content: str) -> tuple[str, int]:
        limit = self.max_result_tokens
        if self.count_tokens(content) <= limit:
            return content, 0
        pages = t is not None and "offset" in t.parameters.get("properties", {})
        # Reserve room for the marker, measured with the widest numbers it could hold.
        reserve = self.count_tokens(_marker(t, 10**12, 10**12, 10**12, pages)) + 1  # + newline
        head, cut = truncate(content, limit - reserve, self.count_tokens)
        if pages:
            # Convention: a tool's `offset` counts lines of its output (as read_file's does),
            # so cut at a line end and point at the first line not shown.
            if "\n" in head:
                head = head[: head.rindex("\n") + 1]
            cut = self.count_tokens(content) - self.count_tokens(head)
        start = call.arguments.get("offset", 0) if isinstance(call.arguments, dict) else 0
        next_offset = (start if isinstance(start, int) else 0) + head.count("\n")
        total = self.count_tokens(content)
        return head.rstrip("\n") + "\n" + _marker(t, cut, total, next_offset, pages), cut


def _marker(t: Tool | None, cut: int, total: int, offset: int, pages: bool) -> str:
    line = f"[... truncated: {cut} of {total} tokens cut"
    if pages and t is not None:
        return line + f"; call {t.name} with offset={offset} to read more]"
    return line + "]"


def _exception_info(t: Tool, e: BaseException, root: Path | None) -> ToolErrorInfo:
    if isinstance(e, WorkspaceError):  # already phrased for the model
        return e.info
    if isinstance(e, OSError) and e.strerror:  # its str() names the absolute path
        names = [n for n in (e.filename, e.filename2) if n is not None and not isinstance(n, int)]
        text = e.strerror + "".join(f" ('{_path_for_model(os.fsdecode(n), root)}')" for n in names)
    else:
        try:
            text = _hide_paths(" ".join(str(e).split())[:300], root)
        except Exception:  # an exception whose __str__ raises
            text = ""
    message = f"'{t.name}' raised {type(e).__name__}" + (f": {text}" if text else "")
    # The traceback is for the trace file only; the model never sees it.
    tb = "".join(traceback.format_exception(type(e), e, e.__traceback__))
    return ToolErrorInfo(kind=ErrorKind.TOOL_EXCEPTION, message=message, detail={"traceback": tb})


def _path_for_model(name: str, root: Path | None) -> str:
    """``name`` as the model may see it: relative to the root, or no path at all if outside."""
    if not os.path.isabs(name):
        return name
    if root is not None and Path(name).is_relative_to(root):
        return Path(name).relative_to(root).as_posix() or "."
    return "a path outside the workspace"


# An absolute path of two or more names ('/home/u/proj/x'); not the tail of a URL or a relative path.
_ABSOLUTE = re.compile(r"(?<![\w.:/~-])/(?:[\w.@+-]+/)+[\w.@+-]*")


def _hide_paths(text: str, root: Path | None) -> str:
    """``text`` with absolute paths made relative to the root, or hidden if outside it: the
    model is never told where on the host the workspace is. The root itself is taken off first,
    as a whole: its path may hold spaces ('/Users/Jane Doe/app'), which no pattern can tell from
    the words around a path."""
    if root is not None and str(root) != "/":
        # The root, followed by '/' or by no more of a name ('/x/app' in '/x/apples' is not it).
        here = re.compile(re.escape(str(root)) + r"(?:/|(?![\w.@+-]))")
        text = here.sub(lambda m: "" if m.group(0).endswith("/") else ".", text)
    return _ABSOLUTE.sub(lambda m: _path_for_model(m.group(0).rstrip("/") or "/", root), text)


def _to_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if value is None:
        return "ok"
    if isinstance(value, BaseModel):
        return value.model_dump_json()
    return json.dumps(value, ensure_ascii=False)
