"""`trace-envs serve`: expose an env over HTTP / WebSocket with OpenEnv's server, for rollout workers elsewhere."""

from __future__ import annotations

from typing import Annotated

import typer

from trace_envs.cli.common import fail


def serve(
    env: Annotated[str, typer.Argument(help="Env id, e.g. trace/<capability> (or just <capability>).")],
    host: Annotated[str, typer.Option("--host", help="Address to listen on (0.0.0.0 for every interface).")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", "-p", help="Port to listen on.")] = 8000,
    max_sessions: Annotated[int, typer.Option("--max-sessions", help="Concurrent sessions (one env each).")] = 64,
    idle_timeout: Annotated[float, typer.Option(
        "--idle-timeout", metavar="SECONDS",
        help="Close a WebSocket session, and expire a session made over HTTP, after this long without a message "
             "(0: never).")] = 300.0,
    max_body: Annotated[int, typer.Option(
        "--max-body", metavar="BYTES", help="Largest request body or WebSocket message (at least 1024).")] = 1 << 20,
    capacity_wait: Annotated[float, typer.Option(
        "--capacity-wait", metavar="SECONDS",
        help="A new session at --max-sessions waits this long for a slot before it is refused (0: at once).")] = 30.0,
    allow_origin: Annotated[list[str] | None, typer.Option(
        "--allow-origin", metavar="ORIGIN",
        help="A browser origin allowed besides localhost, e.g. https://lab.example.org ('*': any); repeatable.")] = None,
    reward_mode: Annotated[str, typer.Option(
        "--reward-mode", metavar="MODE",
        help="terminal: the check's score on the last step; per_turn: each step pays the change of the score it "
             "caused (an episode's rewards sum to the terminal score).")] = "terminal",
) -> None:
    """Serve an env with OpenEnv's server until Ctrl-C / SIGTERM.

    Every WebSocket session (ws://HOST:PORT/ws; reset, step, state) gets its own env instance, so rollout workers
    in other processes or machines play isolated episodes concurrently. Clients: `trace_envs.serving.remote.RemoteEnv(url)`
    (a Gymnasium env) or OpenEnv's `GenericEnvClient(base_url=url)` with actions `{"text": ...}`. /health, /schema
    and /metadata describe the server. A malformed message gets an error reply and the session goes on; an idle
    session is closed after --idle-timeout; requests from web pages of other origins are refused. With
    --reward-mode per_turn every session's env pays each step the change of the check's score that step caused.

    \b
    Example:
      trace-envs serve trace/airline_check_cabin_before_cancel --port 8000
      trace-envs serve trace/airline_check_cabin_before_cancel --port 8000 --reward-mode per_turn
      python -c "from trace_envs.serving.remote import RemoteEnv; print(RemoteEnv('http://127.0.0.1:8000').reset(seed=0))"
    """
    from trace_envs.cli.common import resolve_env

    from trace_envs.runtime.base import REWARD_MODES

    env_id = resolve_env(env)
    if reward_mode not in REWARD_MODES:
        raise fail(f"--reward-mode must be one of {', '.join(REWARD_MODES)}, got {reward_mode!r}")
    if not 0 < port < 65536 or max_sessions < 1:
        raise fail("--port must be in 1..65535 and --max-sessions at least 1")
    if not 0 <= idle_timeout < 1e9 or max_body < 1024 or not 0 <= capacity_wait < 1e9:
        raise fail("--idle-timeout must be 0 (never) or a positive number of seconds, --capacity-wait at least 0, "
                   "--max-body at least 1024")
    try:
        from trace_envs.serving.guard import ServeLimits
        from trace_envs.serving.server import serve as run_server
    except ImportError as exc:
        raise fail(f"serving needs the serve extra ({exc.name}): pip install 'trace-envs[serve]'") from None
    limits = ServeLimits(idle_timeout_s=idle_timeout or None, max_body_bytes=max_body, capacity_wait_s=capacity_wait,
                         allow_origins=tuple(allow_origin or ()))
    try:
        run_server(env_id, host=host, port=port, max_sessions=max_sessions, limits=limits,
                   env_kwargs={"reward_mode": reward_mode} if reward_mode != "terminal" else None)
    except OSError as exc:
        raise fail(f"{exc} (is another server using the port?)") from None


def register(app: typer.Typer) -> None:
    """Add `serve` to the CLI."""
    app.command("serve")(serve)
