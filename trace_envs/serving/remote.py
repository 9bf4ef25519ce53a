"""Use an env served by `trace-envs serve` from another process, through OpenEnv's WebSocket client.

`RemoteEnv(url)` is a Gymnasium env whose `reset` / `step` run on the server, in a session (one env instance) of its
own: same text actions, same observations, rewards and `info` (messages, tools, reward_breakdown, success) as
`gym.make(env_id)` in process (the server sends each step's additions, `info_delta`; this client rebuilds the whole). OpenEnv's own clients work too: `GenericEnvClient(base_url=url)` sends
`{"text": action}` and receives the observation as a dict.

    from trace_envs.serving.remote import RemoteEnv

    env = RemoteEnv("http://127.0.0.1:8000")
    obs, info = env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step('{"name": "get_user_details", "arguments": {...}}')
    env.close()

This module holds the wire types both sides share (`TraceAction`, `TraceObservation`, `TraceState`); it needs the
`serve` extra (openenv-core).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
from gymnasium import spaces
from openenv.core.client_types import StepResult
from openenv.core.env_client import EnvClient
from openenv.core.env_server.types import Action, Observation, State
from pydantic import Field

from trace_envs.serving.health import wait_for_server  # noqa: F401  (re-exported: wait for a served env to come up)
from trace_envs.runtime.base import CHARSET, MAX_TEXT
from trace_envs.runtime.text_space import SharedText


class TraceAction(Action):
    """One agent action: a tool call (JSON object or list, `<tool_call>` tags, an OpenAI tool-call dict) or else a
    message to the simulated user, exactly what `env.step` takes in process."""

    # Longer than the runtime's bound: refused by the server's validation, not truncated.
    text: str = Field(max_length=MAX_TEXT, description="The action text, as for env.step(text).")
    transcript: bool = Field(default=False, description="Send this step's whole info (every message so far) instead "
                                                        "of what the step added.")


class TraceObservation(Observation):
    """What `env.reset` / `env.step` return: the observation text, `info` and, for a step, reward (on `reward`),
    `terminated` (on `done`) and `truncated`."""

    text: str = Field(description="The observation text.")
    info: dict[str, Any] = Field(default_factory=dict, description="The env's info dict.")
    truncated: bool = Field(default=False, description="The episode hit the turn limit.")


class TraceState(State):
    """The session's env: its id, the scenario seed, the turn and whether the episode is over."""

    env_id: str = ""
    seed: int | None = None
    turn: int = 0
    done: bool = False


def info_delta(previous: dict[str, Any], info: dict[str, Any]) -> dict[str, Any]:
    """What a step's `info` adds to the `previous` one, as the server sends it: `new_messages` (the messages appended
    since), and the other keys whose value changed. Re-sending the whole conversation (system prompt and tool schemas
    included) on every step made an episode's bytes grow with the square of its length. Where the messages were not
    appended to (never, for the bundled runtime), the whole `messages` list goes instead. Keys the step's info no
    longer holds are named in `removed_keys` (a step after the episode's end has no `reward_breakdown`), so the
    client's info never keeps a key the in-process one dropped."""
    delta = {k: v for k, v in info.items() if k != "messages" and (k not in previous or previous[k] != v)}
    removed = [k for k in previous if k not in info and k != "messages"]
    if removed:
        delta["removed_keys"] = removed
    before, now = previous.get("messages") or [], info.get("messages") or []
    if len(now) >= len(before) and now[:len(before)] == before:
        delta["new_messages"] = now[len(before):]
    else:
        delta["messages"] = now
    return delta


def apply_info_delta(previous: dict[str, Any], delta: dict[str, Any]) -> dict[str, Any]:
    """The step's whole `info` from the `previous` one and the server's `delta` (`info_delta`); a whole info (a step
    sent with `transcript=True`) passes through."""
    removed = set(delta.get("removed_keys") or ())
    info = {k: v for k, v in previous.items() if k not in removed}
    info.update({k: v for k, v in delta.items() if k not in ("new_messages", "removed_keys")})
    if "new_messages" in delta:
        info["messages"] = [*(previous.get("messages") or []), *delta["new_messages"]]
    return info


class TraceEnvClient(EnvClient[TraceAction, TraceObservation, TraceState]):
    """OpenEnv's async WebSocket client typed for a served trace env (`.sync()` for a blocking one)."""

    def _step_payload(self, action: TraceAction) -> dict[str, Any]:
        return action.model_dump(exclude={"metadata"})

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[TraceObservation]:
        obs = dict(payload.get("observation") or {})
        observation = TraceObservation(text=obs.get("text", ""), info=obs.get("info") or {},
                                       truncated=bool(obs.get("truncated", False)), reward=payload.get("reward"),
                                       done=bool(payload.get("done", False)))
        return StepResult(observation=observation, reward=payload.get("reward"), done=bool(payload.get("done")))

    def _parse_state(self, payload: dict[str, Any]) -> TraceState:
        return TraceState.model_validate(payload)


class RemoteEnv(gym.Env[str, str]):
    """A Gymnasium env backed by a `trace-envs serve` session (one env instance on the server per RemoteEnv)."""

    metadata = {"render_modes": []}

    def __init__(self, base_url: str, *, connect_timeout_s: float = 10.0, message_timeout_s: float = 60.0):
        """`base_url`: the server, e.g. `http://127.0.0.1:8000` (or `ws://...`). `connect_timeout_s`: to open the
        session (default 10 s); `message_timeout_s`: per reset / step reply (default 60 s)."""
        # SharedText, as the local envs: a plain Text reads back from async vector envs' shared memory as padding.
        self.observation_space = SharedText(max_length=MAX_TEXT, min_length=0, charset=CHARSET)
        self.action_space = spaces.Text(max_length=MAX_TEXT, min_length=1, charset=CHARSET)
        self._client = TraceEnvClient(base_url=base_url, connect_timeout_s=connect_timeout_s,
                                      message_timeout_s=message_timeout_s).sync()
        self._client.connect()
        self._info: dict[str, Any] = {}

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        data: dict[str, Any] = {} if seed is None else {"seed": int(seed)}
        if options:
            data["options"] = options
        obs = self._client.reset(**data).observation
        self._info = obs.info
        return obs.text, obs.info

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        obs = self._client.step(TraceAction(text=action)).observation
        # The server sends what the step added; the info returned is the whole one, as in process.
        self._info = apply_info_delta(self._info, obs.info)
        return obs.text, float(obs.reward or 0.0), bool(obs.done and not obs.truncated), obs.truncated, self._info

    def state(self) -> TraceState:
        """The server-side session state (env id, seed, turn, done, steps)."""
        return self._client.state()

    def close(self) -> None:
        self._client.close()

