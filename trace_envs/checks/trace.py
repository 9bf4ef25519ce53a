"""The action trace a check scores: the ordered tool calls and messages of an episode or a real run."""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, Field

from trace_envs.jsontext import shared_loads
from trace_envs.trajectories.models import Run, built

StepKind = Literal["call", "say", "user"]


class TraceStep(BaseModel):
    """One step: an agent tool call (`call`), an agent message to the user (`say`) or a user message (`user`)."""

    kind: StepKind
    name: str | None = None
    arguments: dict[str, Any] = Field(default_factory=dict)
    result: Any = None
    error: bool = False
    text: str | None = None

    @classmethod
    def of_call(cls, name: str, arguments: dict[str, Any], result: Any, error: bool) -> "TraceStep":
        """A tool call the env just ran, whose fields are already of their types: built without validation or
        `model_construct`'s generic field walk, which were a tenth of an env step each. Equal to the validated step."""
        return built(cls, {"kind": "call", "name": name, "arguments": arguments, "result": result, "error": error,
                           "text": None}, {"kind", "name", "arguments", "result", "error"})

    @classmethod
    def of_text(cls, kind: Literal["say", "user"], text: str) -> "TraceStep":
        """A message step, built without validation as `of_call` is (mining builds one per message of every run)."""
        return built(cls, {"kind": kind, "name": None, "arguments": {}, "result": None, "error": False, "text": text},
                     {"kind", "text"})


class ActionTrace(BaseModel):
    """What an episode did, in order, plus the final scenario state when an env produced it."""

    steps: list[TraceStep] = Field(default_factory=list)
    final_state: dict[str, Any] | None = None
    tool_kinds: dict[str, str] = Field(default_factory=dict, description="Tool name to read / write / other.")

    @property
    def calls(self) -> list[TraceStep]:
        return [s for s in self.steps if s.kind == "call"]

    def kind_of(self, tool: str | None) -> str:
        return self.tool_kinds.get(tool or "", "other")

    @classmethod
    def from_run(cls, run: Run, tool_kinds: dict[str, str] | None = None) -> "ActionTrace":
        """Build the trace of a real run: agent calls, agent text and user text in message order.

        Calls made by the simulated user (tau2 `requestor: user`) are not the agent's actions and are left out.
        """
        calls_by_msg: dict[int, list] = {}
        for call in run.tool_calls:
            if call.requestor == "agent":
                calls_by_msg.setdefault(call.message_index, []).append(call)
        steps: list[TraceStep] = []
        for i, msg in enumerate(run.messages):
            role = msg.get("role")
            content = msg.get("content")
            if role == "assistant":
                if isinstance(content, str) and content.strip():
                    steps.append(TraceStep.of_text("say", content))
                for call in calls_by_msg.get(i, []):
                    args = call.arguments if isinstance(call.arguments, dict) else {}
                    steps.append(TraceStep.of_call(str(call.name), args, read_result(call.result), bool(call.error)))
            elif role == "user" and isinstance(content, str):
                steps.append(TraceStep.of_text("user", content))
        return cls(steps=steps, tool_kinds=dict(tool_kinds or {}))


def parse_result(raw: Any, loads: Any = json.loads) -> Any:
    """A tool result as JSON when it parses, else the raw text."""
    if isinstance(raw, str):
        try:
            return loads(raw)
        except (ValueError, RecursionError):
            return raw
    return raw


def read_result(raw: Any) -> Any:
    """`parse_result` of a real run's result, the parsed value shared with every other reader of the same text
    (`jsontext.shared_loads`): read it, never change it."""
    return parse_result(raw, shared_loads)
