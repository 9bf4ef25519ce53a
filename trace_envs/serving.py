"""Serve a registered env over HTTP / WebSocket with OpenEnv's server (`trace-envs serve ENV`).

Each WebSocket session (`/ws`: reset, step, state, close) gets an env instance of its own, made with
`gym.make(env_id)` and driven only through the public Gymnasium API, so a remote episode is the in-process episode:
same seed, same observations, same reward and `info`. Sessions run concurrently, one worker thread each, up to
`max_sessions`. OpenEnv's plain HTTP `/reset` and `/step` are stateless (a fresh env per call) and only useful for a
probe; `/health`, `/schema` and `/metadata` describe the server. `trace_envs.remote.RemoteEnv` is the client.
"""

from __future__ import annotations

import json
import sys
import uuid
from functools import partial
from typing import Any

import gymnasium as gym
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import EnvironmentMetadata

from trace_envs.remote import TraceAction, TraceObservation, TraceState


def _plain(value: Any) -> Any:
    """JSON fallback for numpy scalars and the like in an env's info."""
    item = getattr(value, "item", None)
    return item() if callable(item) else str(value)


def _info(info: dict[str, Any]) -> dict[str, Any]:
    return json.loads(json.dumps(info, default=_plain))


class SessionEnv(Environment[TraceAction, TraceObservation, TraceState]):
    """One served session: a `gym.make(env_id)` env behind OpenEnv's Environment interface."""

    SUPPORTS_CONCURRENT_SESSIONS = True  # instances share nothing mutable

    def __init__(self, env_id: str):
        """`env_id`: a registered Gymnasium id, e.g. `trace/<capability>`."""
        super().__init__()
        self.env_id = env_id
        self._env = gym.make(env_id)
        self._state = TraceState(env_id=env_id)

    def reset(self, seed: int | None = None, episode_id: str | None = None, options: dict[str, Any] | None = None,
              **_: Any) -> TraceObservation:
        text, info = self._env.reset(seed=seed, options=options)
        self._state = TraceState(env_id=self.env_id, seed=seed, episode_id=episode_id or uuid.uuid4().hex)
        return TraceObservation(text=text, info=_info(info))

    def step(self, action: TraceAction, timeout_s: float | None = None, **_: Any) -> TraceObservation:
        text, reward, terminated, truncated, info = self._env.step(action.text)
        self._state.step_count += 1
        self._state.turn = int(info.get("turn", self._state.step_count))
        self._state.done = bool(terminated or truncated)
        return TraceObservation(text=text, info=_info(info), reward=float(reward), done=self._state.done,
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


def build_app(env_id: str, max_sessions: int = 64) -> Any:
    """The FastAPI app serving `env_id` (raises gymnasium's error for an unknown id). `max_sessions`: concurrent
    WebSocket sessions allowed (default 64); one more is refused with a CAPACITY_REACHED error."""
    from openenv.core.env_server.http_server import create_fastapi_app

    gym.spec(env_id)
    app = create_fastapi_app(partial(SessionEnv, env_id), TraceAction, TraceObservation,
                             max_concurrent_envs=max_sessions)
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


def serve(env_id: str, host: str = "127.0.0.1", port: int = 8000, max_sessions: int = 64) -> None:
    """Run the server until SIGINT / SIGTERM, then shut down gracefully (open sessions are closed) and return, so the
    process exits with status 0. Raises OSError when it cannot listen on host:port."""
    import signal
    import threading

    import uvicorn

    _check_port(host, port)
    app = build_app(env_id, max_sessions)
    server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning"))

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
                print(f"serving {env_id} on http://{host}:{port} (sessions: ws://{host}:{port}/ws, up to "
                      f"{max_sessions})", file=sys.stderr, flush=True)
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
