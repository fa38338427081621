"""``localagent serve``: the in-process model behind an OpenAI-compatible API.

``POST /v1/chat/completions`` (streaming or not) and ``GET /v1/models``. Calls come from the
constrained decoder, as in the agent loop, so their arguments always parse. One model, so
requests are queued: one generation at a time, in a worker thread, the event loop free to
accept and stream. A client that disconnects mid-stream stops its generation at the next
token. Needs fastapi and uvicorn (``pip install "localagent[serve]"``).
"""

# No postponed annotations here: FastAPI reads the route functions' annotations at run time,
# and ``Request`` is imported inside create_app (fastapi is an optional extra).
import asyncio
import hmac
import json
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

from ..backends.base import Backend, Generation
from ..errors import ConfigError
from ..constraint.grammar import Constraint
from .openai_api import (
    ApiError, ChatRequest, ProseFilter, RawMemory, Reply, call_json, chunk_json, completion_json, constraint_for,
    options_for, parse_request, reply_of,
)

__all__ = ["create_app", "serve"]


class _Cancelled(Exception):
    """Raised in the generation's thread once its client has gone."""


class ModelQueue:
    """The one model, shared: ``generate`` waits its turn, then runs the request's step."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self._lock = threading.Lock()
        self.memory = RawMemory()

    def generate(
        self, req: ChatRequest, constraint: Constraint | None, on_text: Callable[[str], None] | None, gone: threading.Event
    ) -> Generation:
        """One step for ``req``; ``_Cancelled`` once ``gone`` is set (checked at each piece)."""

        def piece(text: str) -> None:
            if gone.is_set():
                raise _Cancelled
            if on_text is not None:
                on_text(text)

        with self._lock:
            if gone.is_set():
                raise _Cancelled
            messages = self.memory.restore(req.messages)
            try:
                return self.backend.generate(messages, req.tools, options_for(req, constraint, piece))
            except _Cancelled:
                raise
            except Exception as e:  # a backend must not raise; if one does, the client hears why
                raise ApiError(500, f"the model failed: {type(e).__name__}: {e}") from None

    def reply(self, req: ChatRequest, gen: Generation) -> Reply:
        """The reply of ``gen``, its exact text remembered for the conversation's next request."""
        reply = reply_of(gen, req)
        self.memory.remember(reply, gen.text)
        return reply


def create_app(backend: Backend, *, api_key: str | None = None, model_name: str | None = None) -> Any:
    """The FastAPI app serving ``backend``; with ``api_key``, every request must carry it."""
    try:
        from fastapi import FastAPI, Request
        from fastapi.responses import JSONResponse, StreamingResponse
    except ImportError:
        raise ConfigError('serving needs fastapi and uvicorn: pip install "localagent[serve]"') from None

    queue = ModelQueue(backend)
    name = model_name or backend.name
    app = FastAPI(title="localagent", docs_url=None, redoc_url=None, openapi_url=None)

    @app.exception_handler(ApiError)
    async def api_error(request: Request, e: ApiError) -> JSONResponse:
        return JSONResponse(e.to_json(), status_code=e.status)

    @app.middleware("http")
    async def check_key(request: Request, call_next: Any) -> Any:
        if api_key is not None:
            given = request.headers.get("authorization", "")
            if not hmac.compare_digest(given.encode(), f"Bearer {api_key}".encode()):
                return JSONResponse(ApiError(401, "a valid API key is needed: Authorization: Bearer KEY").to_json(), 401)
        return await call_next(request)

    @app.get("/v1/models")
    async def models() -> dict[str, Any]:
        return {"object": "list", "data": [{"id": name, "object": "model", "created": 0, "owned_by": "localagent"}]}

    @app.post("/v1/chat/completions")
    async def chat_completions(request: Request) -> Any:
        try:
            body = json.loads(await request.body())
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise ApiError(400, f"the body is not JSON: {e}") from None
        req = parse_request(body)
        constraint = constraint_for(req)  # a schema no grammar fits is a 400, before any stream starts
        cid, created = f"chatcmpl-{uuid.uuid4().hex[:24]}", int(time.time())
        if req.stream:
            return StreamingResponse(_stream(queue, req, constraint, name, cid, created), media_type="text/event-stream")
        gone = threading.Event()
        try:
            gen = await asyncio.to_thread(queue.generate, req, constraint, None, gone)
        except asyncio.CancelledError:
            gone.set()  # the client went away while queued or generating
            raise
        return completion_json(queue.reply(req, gen), name, cid, created)

    return app


async def _stream(
    queue: ModelQueue, req: ChatRequest, constraint: Constraint | None, model: str, cid: str, created: int
) -> AsyncIterator[str]:
    """The server-sent events of one streamed reply: prose as it comes, calls when complete."""
    loop = asyncio.get_running_loop()
    pieces: asyncio.Queue[str | None] = asyncio.Queue()
    gone = threading.Event()
    prose = ProseFilter()

    def on_text(text: str) -> None:
        loop.call_soon_threadsafe(pieces.put_nowait, text)

    def event(delta: dict[str, Any], finish: str | None = None) -> str:
        return f"data: {json.dumps(chunk_json(cid, model, created, delta, finish), ensure_ascii=False)}\n\n"

    work = asyncio.ensure_future(asyncio.to_thread(queue.generate, req, constraint, on_text, gone))
    work.add_done_callback(lambda _: loop.call_soon_threadsafe(pieces.put_nowait, None))
    try:
        yield event({"role": "assistant", "content": ""})
        while (text := await pieces.get()) is not None:
            if shown := prose.feed(text):
                yield event({"content": shown})
        try:
            reply = queue.reply(req, await work)
        except ApiError as e:  # the headers are sent: the error goes in the stream
            yield f"data: {json.dumps(e.to_json())}\n\n"
            return
        if rest := prose.rest(reply.content):
            yield event({"content": rest})
        if reply.calls:
            yield event({"tool_calls": [call_json(c, i) for i, c in enumerate(reply.calls)]})
        yield event({}, reply.finish_reason)
        if req.include_usage:
            usage = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model, "choices": []}
            yield f"data: {json.dumps({**usage, 'usage': reply.usage})}\n\n"
        yield "data: [DONE]\n\n"
    finally:
        gone.set()  # a client that went away stops the generation at its next piece
        if not work.done():
            work.add_done_callback(_swallow)


def _swallow(task: asyncio.Future[Any]) -> None:
    """Retrieve the outcome of a generation whose client has gone (its _Cancelled)."""
    if not task.cancelled():
        task.exception()


def serve(backend: Backend, *, host: str = "127.0.0.1", port: int = 8080, api_key: str | None = None) -> None:
    """Serve ``backend`` until interrupted."""
    try:
        import uvicorn
    except ImportError:
        raise ConfigError('serving needs fastapi and uvicorn: pip install "localagent[serve]"') from None
    uvicorn.run(create_app(backend, api_key=api_key), host=host, port=port, log_level="warning")
