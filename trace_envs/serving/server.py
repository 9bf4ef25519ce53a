"""Serve a registered env over HTTP / WebSocket with OpenEnv's server (`trace-envs serve ENV`).

Each WebSocket session (`/ws`: reset, step, state, close) gets an env instance of its own, made with
`gym.make(env_id, **env_kwargs)` (e.g. `reward_mode="per_turn"`) and driven only through the public Gymnasium API, so a remote episode is the in-process episode:
same seed, same observations, same reward; a step's `info` goes over the wire as what the step added
(`trace_envs.serving.remote.info_delta`; a step sent with `"transcript": true` carries the whole info), and
`trace_envs.serving.remote.RemoteEnv` rebuilds the in-process `info` from it. Sessions run concurrently, one worker
thread each, up to `max_sessions`. OpenEnv's plain HTTP `/reset` is stateless (a fresh env per call) and only a probe; HTTP
`/step` has no episode to step and says so (409); `/health`, `/schema` and `/metadata` describe the server.
`trace_envs.serving.guard` bounds what clients may send and how long an idle session keeps its slot.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
import uuid
from functools import partial
from typing import Any

import gymnasium as gym
from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from openenv.core.env_server.http_server import HTTPEnvServer
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.exceptions import SessionCapacityError
from openenv.core.env_server.types import ConcurrencyConfig, EnvironmentMetadata, StepRequest
from pydantic import ValidationError
from starlette.middleware.cors import CORSMiddleware

from trace_envs.serving.remote import TraceAction, TraceObservation, TraceState, info_delta
from trace_envs.serving.guard import CONNECTED, ServeGuard, ServeLimits, clip_json

STEP_NEEDS_SESSION = (
    "POST /step has no episode to step: plain HTTP requests are stateless (each gets a fresh env that was never "
    "reset). Play episodes over the WebSocket at /ws: send {\"type\": \"reset\", \"data\": {\"seed\": 0}}, then "
    "{\"type\": \"step\", \"data\": {\"text\": ...}}; trace_envs.serving.remote.RemoteEnv(url) does this."
)


def _plain(value: Any) -> Any:
    """JSON fallback for numpy scalars and the like in an env's info."""
    item = getattr(value, "item", None)
    return item() if callable(item) else str(value)


def _info(info: dict[str, Any]) -> dict[str, Any]:
    return json.loads(json.dumps(info, default=_plain))


class SessionEnv(Environment[TraceAction, TraceObservation, TraceState]):
    """One served session: a `gym.make(env_id, **env_kwargs)` env behind OpenEnv's Environment interface."""

    SUPPORTS_CONCURRENT_SESSIONS = True  # instances share nothing mutable

    def __init__(self, env_id: str, **env_kwargs: Any):
        """`env_id`: a registered Gymnasium id, e.g. `trace/<capability>`; `env_kwargs`: the env's constructor
        arguments (`reward_mode`, `max_turns`, ...)."""
        super().__init__()
        self.env_id = env_id
        self._env = gym.make(env_id, **env_kwargs)
        self._state = TraceState(env_id=env_id)
        # The env's last info as it returned it: its messages are the env's own message objects, so the next step's
        # delta compares them by identity, and only the delta is converted to JSON-safe values.
        self._info: dict[str, Any] = {}

    def reset(self, seed: int | None = None, episode_id: str | None = None, options: dict[str, Any] | None = None,
              **_: Any) -> TraceObservation:
        text, info = self._env.reset(seed=seed, options=options)
        self._state = TraceState(env_id=self.env_id, seed=seed, episode_id=episode_id or uuid.uuid4().hex)
        self._info = info
        return TraceObservation(text=text, info=_info(info))

    def step(self, action: TraceAction, timeout_s: float | None = None, **_: Any) -> TraceObservation:
        text, reward, terminated, truncated, info = self._env.step(action.text)
        self._state.step_count += 1
        self._state.turn = int(info.get("turn", self._state.step_count))
        self._state.done = bool(terminated or truncated)
        wire = info if action.transcript else info_delta(self._info, info)
        self._info = info
        return TraceObservation(text=text, info=_info(wire), reward=float(reward), done=self._state.done,
                                truncated=bool(truncated))

    @property
    def state(self) -> TraceState:
        return self._state

    def get_metadata(self) -> EnvironmentMetadata:
        cap = getattr(self._env.unwrapped, "capability", None)
        return EnvironmentMetadata(name=self.env_id, version="1.0.0",
                                   description=getattr(cap, "description", "") or f"{self.env_id} (trace-envs)")

    def close(self) -> None:
        self._env.close()


class _ClosedSocketGuard:
    """ASGI middleware for one quirk of openenv-core 0.3: when a client ends its session, the server's clean-up closes
    a socket the client already closed, and Starlette raises WebSocketDisconnect from that close; every normal
    disconnect would then be logged as an exception. The session itself was already destroyed, so it is dropped."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        from starlette.websockets import WebSocketDisconnect

        if scope["type"] != "websocket":
            await self.app(scope, receive, send)
            return
        try:
            await self.app(scope, receive, send)
        except WebSocketDisconnect:
            pass


class _Sessions(HTTPEnvServer):
    """OpenEnv's session store, with two changes: a session held by a WebSocket connection lives as long as the
    connection (the guard closes an idle one), and a session made without one (`POST /mcp` with
    `openenv/session/create`) expires after `idle_timeout_s` without a request. OpenEnv's own reaper would instead
    destroy the env under a live connection, and checks only every `max(timeout / 4, 5)` s. And a new session at
    capacity waits up to `capacity_wait_s` for a slot before it is refused."""

    def __init__(self, *args: Any, capacity_wait_s: float = 0.0, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._connected: set[str] = set()
        self._capacity_wait_s = capacity_wait_s

    async def _create_session(self) -> tuple[str, Environment]:
        # Clients that died without closing hold their slots until the idle timeout; refused at once, a live client
        # arriving in such a burst lost its episode (the soak lost hundreds in a row: each refusal is instant, so the
        # refused clients' next dead sessions came faster still). Waiting turns the burst into a delay.
        deadline = time.monotonic() + self._capacity_wait_s
        while True:
            try:
                session_id, env = await super()._create_session()
                break
            except SessionCapacityError:
                if time.monotonic() >= deadline:
                    raise
                await asyncio.sleep(0.05)
        if CONNECTED.get():
            self._connected.add(session_id)
        return session_id, env

    async def _destroy_session(self, session_id: str) -> None:
        self._connected.discard(session_id)
        await super()._destroy_session(session_id)

    def connectionless(self) -> list[str]:
        """Ids of the live sessions no connection holds."""
        return [sid for sid in self._session_info if sid not in self._connected]

    async def _reap_idle_sessions(self) -> None:
        timeout = self._session_idle_timeout_s
        if timeout is None:
            return
        while True:
            await asyncio.sleep(min(max(timeout / 4, 0.05), 5.0))
            now = time.time()
            for sid in self.connectionless():
                info = self._session_info.get(sid)
                if info is not None and now - info.last_activity_at > timeout:
                    try:
                        await self._destroy_session(sid)
                    except Exception as exc:  # the reaper must outlive one env's failing close
                        print(f"warning: closing expired session {sid}: {exc}", file=sys.stderr, flush=True)


def build_app(env_id: str, max_sessions: int = 64, limits: ServeLimits | None = None,
              env_kwargs: dict[str, Any] | None = None) -> Any:
    """The FastAPI app serving `env_id` (raises gymnasium's error for an unknown id). `max_sessions`: concurrent
    sessions allowed (default 64); one more waits up to `limits.capacity_wait_s` for a slot, then is refused with a
    CAPACITY_REACHED error. `limits`: idle timeout, body size, capacity wait and allowed origins (`ServeLimits()`:
    300 s, 1 MiB, 30 s, localhost only). `env_kwargs`: what every session's env is made with
    (`{"reward_mode": "per_turn"}`); one env is made here, so that a bad value fails now, not per session."""
    limits = limits or ServeLimits()
    env_kwargs = dict(env_kwargs or {})
    gym.spec(env_id)
    gym.make(env_id, **env_kwargs).close()
    app = FastAPI(title=f"trace-envs: {env_id}", version="1.0.0")
    sessions = _Sessions(partial(SessionEnv, env_id, **env_kwargs), TraceAction, TraceObservation,
                         concurrency_config=ConcurrencyConfig(max_concurrent_envs=max_sessions,
                                                              session_timeout=limits.idle_timeout_s),
                         capacity_wait_s=limits.capacity_wait_s)
    sessions.register_routes(app)

    async def short_validation_error(request: Any, exc: RequestValidationError) -> JSONResponse:
        # FastAPI's own 422 quotes the whole input (20 MB back for a 20 MB body) and fails on a non-finite float.
        return JSONResponse(status_code=422, content={"detail": clip_json(list(exc.errors()))})

    app.add_exception_handler(RequestValidationError, short_validation_error)

    # OpenEnv's HTTP /step steps a fresh env that was never reset: always a 500 (gymnasium's ResetNeeded).
    app.router.routes[:] = [r for r in app.router.routes if getattr(r, "path", None) != "/step"]

    @app.post("/step", status_code=409, tags=["Environment Control"], summary="Refused: episodes run over /ws")
    async def step_without_session(request: StepRequest) -> JSONResponse:
        try:
            TraceAction.model_validate(request.action)
        except ValidationError as exc:
            return JSONResponse(status_code=422, content={"detail": clip_json(exc.errors())})
        return JSONResponse(status_code=409, content={"detail": STEP_NEEDS_SESSION})

    if limits.allow_origins:  # allowed pages may read the replies, too
        app.add_middleware(CORSMiddleware, allow_origins=list(limits.allow_origins), allow_methods=["GET", "POST"],
                           allow_headers=["content-type"])
    app.add_middleware(ServeGuard, limits=limits)
    app.add_middleware(_ClosedSocketGuard)
    return app


def _check_port(host: str, port: int) -> None:
    """Fail before any work (with one clear message) when host:port cannot be listened on."""
    import socket

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        with socket.socket(infos[0][0], socket.SOCK_STREAM) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(infos[0][4])
    except OSError as exc:
        raise OSError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None


def make_server(env_id: str, host: str, port: int, max_sessions: int = 64, limits: ServeLimits | None = None,
                env_kwargs: dict[str, Any] | None = None) -> Any:
    """The uvicorn server (not started) for `build_app(env_id, max_sessions, limits, env_kwargs)` on host:port."""
    import uvicorn

    limits = limits or ServeLimits()
    # Frames up to 16 MiB reach the guard, which answers one past the limit with an error frame; a larger one is
    # refused by the WebSocket layer itself (close code 1009).
    return uvicorn.Server(uvicorn.Config(build_app(env_id, max_sessions, limits, env_kwargs), host=host, port=port,
                                         log_level="warning", ws_max_size=max(16 << 20, 2 * limits.max_body_bytes)))


def serve(env_id: str, host: str = "127.0.0.1", port: int = 8000, max_sessions: int = 64,
          limits: ServeLimits | None = None, env_kwargs: dict[str, Any] | None = None) -> None:
    """Run the server until SIGINT / SIGTERM, then shut down gracefully (open sessions are closed) and return, so the
    process exits with status 0. Raises OSError when it cannot listen on host:port. `limits`, `env_kwargs`: see
    `build_app`."""
    import signal
    import threading

    _check_port(host, port)
    limits = limits or ServeLimits()
    server = make_server(env_id, host, port, max_sessions, limits, env_kwargs)

    def stop(signum: int, frame: Any) -> None:
        server.should_exit = True

    # uvicorn in the main thread re-raises the stop signal after shutting down (the process then dies of it); run it
    # in a worker thread instead, where it installs no handlers, and take the signals here.
    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    worker = threading.Thread(target=server.run, name="trace-envs-serve")
    try:
        worker.start()
        while worker.is_alive():
            if server.started:
                idle = f"{limits.idle_timeout_s:g} s" if limits.idle_timeout_s else "off"
                made = "".join(f"; {k}={v!r}" for k, v in (env_kwargs or {}).items())
                print(f"serving {env_id} on http://{host}:{port} (sessions: ws://{host}:{port}/ws, up to "
                      f"{max_sessions}; idle timeout {idle}{made})", file=sys.stderr, flush=True)
                break
            worker.join(0.05)
        while worker.is_alive():
            worker.join(0.5)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if not server.started:
        raise OSError(f"could not listen on {host}:{port}")
    print(f"stopped serving {env_id}", file=sys.stderr, flush=True)
