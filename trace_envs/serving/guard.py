"""What stands between `trace-envs serve` and its clients: one ASGI middleware that refuses, with an error reply, what
OpenEnv's server would crash on, echo in full or keep forever.

- Browser requests from another origin (an `Origin` header that is not localhost and not allowed) are refused: 403,
  or a refused WebSocket handshake. A page on the web can otherwise open sessions on a server bound to 127.0.0.1.
- A POST must say `Content-Type: application/json` (415): a cross-origin "simple" request (text/plain) needs no CORS
  preflight, so this keeps pages from creating sessions even when the Origin check is bypassed.
- A body or WebSocket frame is at most `max_body_bytes` (413, or an error frame).
- Every WebSocket frame on `/ws` is parsed here first, with bounds (nesting, integer size, finite numbers, no lone
  surrogate, a JSON object with a string `type`, a reset seed in gymnasium's range): a frame OpenEnv would end the
  session on gets an error frame instead and the session goes on.
- A WebSocket idle for `idle_timeout_s` (no frame from the client) gets an error frame and is closed, freeing its slot.
- Error replies quote at most `PREFIX` characters of any input.
"""

from __future__ import annotations

import asyncio
import json
import math
from contextvars import ContextVar
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, Field

from trace_envs.limits import nesting_exceeds

PREFIX = 200  # characters of the client's input an error reply may quote
MAX_SEED = 2**64 - 1  # numpy's SeedSequence takes any non-negative int; past 64 bits a seed is a mistake, not a choice
_INT_DIGITS = 20  # 2**64 has 20 digits: a longer integer literal is out of range wherever it appears
_MESSAGE_DEPTH = 32  # a /ws message nests 3 levels; reset options a few more
_LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
_WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})
# OpenEnv's replies that may quote the client's input (errors; MCP replies such as "Unknown session_id: <input>").
_QUOTING_REPLIES = ('{"type":"error"', '{"type":"mcp"')
_SESSION_ID = 64  # OpenEnv's session ids are UUIDs (36 characters); a longer one would only be echoed back

# Set while a WebSocket connection is served, so the session store can tell sessions a connection holds (closed with
# it) from sessions made by a plain HTTP request (which must expire on their own).
CONNECTED: ContextVar[bool] = ContextVar("trace_envs_serve_connected", default=False)


class ServeLimits(BaseModel):
    """The server's bounds on its clients (`trace-envs serve` flags)."""

    idle_timeout_s: float | None = Field(default=300.0, gt=0, description="Close a WebSocket (and expire a session "
                                         "made over HTTP) after this long without a message; None: never.")
    max_body_bytes: int = Field(default=1 << 20, ge=1024, description="Largest request body or WebSocket frame.")
    capacity_wait_s: float = Field(default=30.0, ge=0, description="A new session at --max-sessions waits this long "
                                   "for a slot to free before it is refused (0: refused at once).")
    allow_origins: tuple[str, ...] = Field(default=(), description="Browser origins allowed besides localhost "
                                           "(scheme://host[:port], or '*' for any).")


class Refused(ValueError):
    """A client message refused before it reaches OpenEnv: `code` (OpenEnv's WebSocket error code), `message`."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


def clip(text: str, limit: int = PREFIX) -> str:
    """`text`, or its first `limit` characters and how long it was."""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def clip_json(value: Any) -> Any:
    """`value` with every string clipped and every non-finite float spelt as a string, so that an error reply is short
    and always serializable (FastAPI's own 422 for `{"seed": 1e400}` fails to serialize `inf`: a 500)."""
    if isinstance(value, str):
        return clip(value)
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {clip(str(k)): clip_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clip_json(v) for v in value[:20]]
    if value is None or isinstance(value, (bool, int, float)):
        return value
    return clip(str(value))


def _out_of_range(literal: str) -> Refused:
    return Refused("VALIDATION_ERROR", f"number {clip(literal, 40)} is out of range")


def _parse_int(literal: str) -> int:
    if len(literal.lstrip("-")) > _INT_DIGITS:
        raise _out_of_range(literal)
    return int(literal)


def _parse_float(literal: str) -> float:
    value = float(literal)
    if not math.isfinite(value):
        raise _out_of_range(literal)
    return value


def _parse_constant(name: str) -> float:
    raise _out_of_range(name)


def parse_json(raw: str) -> Any:
    """The JSON value in `raw`, or Refused: invalid JSON, nested past `_MESSAGE_DEPTH`, an integer past 64 bits, a
    float that is not finite (1e400, NaN, Infinity), a string holding a lone UTF-16 surrogate (`"\\ud800"`, which no
    reply could encode)."""
    try:
        value = json.loads(raw, parse_int=_parse_int, parse_float=_parse_float, parse_constant=_parse_constant)
    except Refused:
        raise
    except RecursionError:
        raise Refused("VALIDATION_ERROR", f"JSON nested more than {_MESSAGE_DEPTH} levels deep") from None
    except ValueError as exc:  # JSONDecodeError: its message names the position, never the input
        raise Refused("INVALID_JSON", f"Invalid JSON: {clip(str(exc), 120)}") from None
    if nesting_exceeds(value, _MESSAGE_DEPTH):
        raise Refused("VALIDATION_ERROR", f"JSON nested more than {_MESSAGE_DEPTH} levels deep")
    if "\\u" in raw.lower() and _has_lone_surrogate(value):
        raise Refused("VALIDATION_ERROR", "a string holds a lone UTF-16 surrogate (such as \\ud800), which is not "
                                          "text; send valid Unicode")
    return value


def _has_lone_surrogate(value: Any) -> bool:
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def check_reset(data: Any) -> None:
    """Refuse a reset whose seed gymnasium cannot take (it would fail in the env or seed a 5000-digit int)."""
    if not isinstance(data, dict) or data.get("seed") is None:
        return  # no seed, or a shape OpenEnv's own validation answers
    seed = data["seed"]
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
        raise Refused("VALIDATION_ERROR", f"seed must be an integer in 0..2**64-1, got {clip(json.dumps(seed), 40)}")


def check_message(raw: str) -> None:
    """Refuse a `/ws` text frame that is not a bounded JSON object with a string `type` (OpenEnv ends the session on
    an array, a string or `null`), or a reset with an out-of-range seed."""
    message = parse_json(raw)
    if not isinstance(message, dict) or not isinstance(message.get("type"), str):
        kind = type(message).__name__ if not isinstance(message, dict) else "object without a string 'type'"
        raise Refused("VALIDATION_ERROR", f'a message is a JSON object such as {{"type": "step", "data": {{"text": '
                                          f'"..."}}}}; got {kind}')
    if message["type"] == "reset":
        check_reset(message.get("data"))


def check_body(path: str, body: bytes) -> None:
    """Refuse an HTTP body that is not a bounded JSON object in UTF-8, or a `/reset` with an out-of-range seed."""
    try:
        value = parse_json(body.decode("utf-8"))
    except UnicodeDecodeError:
        raise Refused("INVALID_JSON", "the body is not UTF-8") from None
    if not isinstance(value, dict):
        raise Refused("VALIDATION_ERROR", f"the body must be a JSON object, got {type(value).__name__}")
    if path == "/reset":
        check_reset(value)
    params = value.get("params")
    if path == "/mcp" and isinstance(params, dict) and len(str(params.get("session_id", ""))) > _SESSION_ID:
        raise Refused("VALIDATION_ERROR", f"session_id is longer than {_SESSION_ID} characters")


def origin_allowed(origin: str | None, allowed: tuple[str, ...]) -> bool:
    """No Origin header (not a browser), a localhost origin, or one of `allowed` (exact, or '*')."""
    if origin is None:
        return True
    if "*" in allowed or origin.rstrip("/") in {a.rstrip("/") for a in allowed}:
        return True
    try:
        parts = urlsplit(origin)
        return parts.scheme in ("http", "https") and (parts.hostname or "") in _LOCAL_HOSTS
    except ValueError:
        return False


def _header(scope: dict[str, Any], name: bytes) -> str | None:
    for key, value in scope.get("headers") or ():
        if key.lower() == name:
            return value.decode("latin-1")
    return None


class ServeGuard:
    """ASGI middleware applying `ServeLimits` (see the module docstring) in front of OpenEnv's app. `validate_http`:
    paths whose JSON body is parsed here with the same bounds as a WebSocket frame (a bad one is a 422)."""

    def __init__(self, app: Any, limits: ServeLimits,
                 validate_http: tuple[str, ...] = ("/reset", "/step", "/mcp")) -> None:
        self.app = app
        self.limits = limits
        self.validate_http = validate_http

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            await self._http(scope, receive, send)
        elif scope["type"] == "websocket":
            token = CONNECTED.set(True)
            try:
                await self._websocket(scope, receive, send)
            finally:
                CONNECTED.reset(token)
        else:
            await self.app(scope, receive, send)

    def _origin_refusal(self, scope: dict[str, Any]) -> str | None:
        origin = _header(scope, b"origin")
        if origin_allowed(origin, self.limits.allow_origins):
            return None
        return (f"requests from origin {clip(origin or '', 80)!r} are refused; start the server with "
                f"--allow-origin {clip(origin or '', 80)} to allow them")

    # ---- HTTP --------------------------------------------------------------------------------------------------------
    async def _http(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        refusal = self._origin_refusal(scope)
        if refusal is not None:
            await _reply(send, 403, refusal)
            return
        if scope["method"] not in _WRITES:
            await self.app(scope, receive, send)
            return
        ctype = (_header(scope, b"content-type") or "").split(";")[0].strip().lower()
        if ctype != "application/json":
            await _reply(send, 415, f"a {scope['method']} needs Content-Type: application/json, got "
                                    f"{clip(ctype or 'none', 60)!r}")
            return
        limit = self.limits.max_body_bytes
        length = _header(scope, b"content-length")
        if length is not None and (not length.strip().isdigit() or int(length) > limit):
            await _reply(send, 413, f"the body is larger than the server's limit of {limit} bytes", close=True)
            return
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            if len(body) > limit:
                await _reply(send, 413, f"the body is larger than the server's limit of {limit} bytes", close=True)
                return
            if not message.get("more_body"):
                break
        if scope["path"] in self.validate_http and body.strip():
            try:
                check_body(scope["path"], bytes(body))
            except Refused as exc:
                await _reply(send, 422, exc.message)
                return
        await self.app(scope, _replay(bytes(body), receive), send)

    # ---- WebSocket ---------------------------------------------------------------------------------------------------
    async def _websocket(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if self._origin_refusal(scope) is not None:
            await receive()  # websocket.connect
            await send({"type": "websocket.close", "code": 1008})  # before accept: the handshake gets a 403
            return
        on_ws = scope.get("path") == "/ws"
        limit, idle = self.limits.max_body_bytes, self.limits.idle_timeout_s
        state = {"accepted": False, "closed": False}

        async def guarded_send(message: dict[str, Any]) -> None:
            if state["closed"]:
                return  # this guard already closed the socket (idle): OpenEnv's own close comes after
            kind = message["type"]
            if kind == "websocket.accept":
                state["accepted"] = True
            elif kind == "websocket.close":
                state["closed"] = True
            elif kind == "websocket.send" and message.get("text", "").startswith(_QUOTING_REPLIES):
                message = {**message, "text": json.dumps(clip_json(json.loads(message["text"])))}
            await send(message)

        async def reply_error(code: str, text: str) -> None:
            await guarded_send({"type": "websocket.send", "text": _error_frame(on_ws, code, text)})

        async def guarded_receive() -> dict[str, Any]:
            while True:
                if state["accepted"] and idle is not None:
                    try:
                        message = await asyncio.wait_for(receive(), timeout=idle)
                    except asyncio.TimeoutError:
                        await reply_error("IDLE_TIMEOUT", f"no message for {idle:g} s: the session is closed; "
                                                          "open a new one")
                        await guarded_send({"type": "websocket.close", "code": 1000, "reason": "idle timeout"})
                        return {"type": "websocket.disconnect", "code": 1000}
                else:
                    message = await receive()
                if message["type"] != "websocket.receive":
                    return message
                problem = _frame_problem(message, limit, on_ws)
                if problem is None:
                    return message
                await reply_error(problem.code, problem.message)

        await self.app(scope, guarded_receive, guarded_send)


def _frame_problem(message: dict[str, Any], limit: int, on_ws: bool) -> Refused | None:
    text = message.get("text")
    if text is None:
        return Refused("INVALID_JSON", "binary frames are not read; send each message as a JSON text frame")
    if len(text) * 4 > limit:  # up to 4 bytes a character: encode only a frame that may be too large
        size = len(text.encode("utf-8", "surrogatepass"))
        if size > limit:
            return Refused("VALIDATION_ERROR", f"a frame of {size} bytes is larger than the server's limit of "
                                               f"{limit} bytes")
    try:
        if on_ws:
            check_message(text)
        else:
            parse_json(text)
    except Refused as exc:
        return exc
    return None


def _error_frame(on_ws: bool, code: str, message: str) -> str:
    """An error frame in the protocol of the endpoint: OpenEnv's `{"type": "error"}` on /ws, JSON-RPC elsewhere."""
    if on_ws:
        return json.dumps({"type": "error", "data": {"message": message, "code": code}})
    return json.dumps({"jsonrpc": "2.0", "error": {"code": -32700 if code == "INVALID_JSON" else -32600,
                                                   "message": message}, "id": None})


async def _reply(send: Any, status: int, detail: str, *, close: bool = False) -> None:
    body = json.dumps({"detail": detail}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if close:  # the client may still be sending a body nobody reads
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _replay(body: bytes, receive: Any) -> Any:
    """An ASGI receive that hands the app the body already read, then waits on the client (for a disconnect)."""
    sent = False

    async def replay() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay
