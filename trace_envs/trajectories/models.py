"""Pydantic models for one agent run, in a source-independent form.

Every loader (tau-bench, tau2-bench, OpenAI-messages JSONL, the planted-deficit simulator) produces `Run`s, and
everything downstream (the DomainProfile, the miner, the checks) reads only these models.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Requestor = Literal["agent", "user"]

# Arguments whose values are prose the agent writes (never grounded, never a record key, never compared).
# How a source writes tool results: JSON text, or the Python repr ToolSandbox's execution environment prints.
ResultStyle = Literal["json", "python-repr"]
RESULT_STYLES: tuple[str, ...] = ("json", "python-repr")
PROSE_ARGS = frozenset({"summary", "reason", "thought", "expression", "note", "notes", "comment", "message", "text"})


_new = object.__new__
_setattr = object.__setattr__


def built(cls: type[BaseModel], fields: dict[str, Any], fields_set: set[str] | None = None) -> Any:
    """An instance of `cls` holding `fields` (every field, each already of its type), built without validation or
    `model_construct`'s walk over the fields: for what the library builds by the thousand from values it made itself
    (a trace step per message of every mined run, a planted run's calls). `fields_set`: the fields the validated
    instance would count as given (default all). Equal to the validated instance."""
    obj = _new(cls)
    _setattr(obj, "__dict__", fields)
    _setattr(obj, "__pydantic_fields_set__", set(fields) if fields_set is None else fields_set)
    _setattr(obj, "__pydantic_extra__", None)
    _setattr(obj, "__pydantic_private__", None)
    return obj


class ToolCall(BaseModel):
    """One tool call made during a run, joined with its result."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(description="Call id from the source (or a synthesized `call_<n>` when the source has none).")
    name: str = Field(description="Tool name as the agent called it.")
    arguments: dict[str, Any] = Field(default_factory=dict, description="Arguments decoded to a dict.")
    result: str | None = Field(default=None, description="Raw text of the tool's reply, None if it never came.")
    error: bool = Field(default=False, description="True when the reply is an error: the source marks it so, or its "
                        "text is one (see `trace_envs.trajectories.tool_errors.tool_error`).")
    error_reason: str | None = Field(default=None, description="Why the reply is an error (`flagged by the source`, "
                                     "`a JSON \"error\"`, `text opening with \"ERROR 409\"`); None for a success.")
    requestor: Requestor = Field(default="agent", description="Who made the call: the agent or the simulated user.")
    message_index: int = Field(default=-1, description="Index in `Run.messages` of the assistant message with the call.")


class GroundTruthAction(BaseModel):
    """An action the source's evaluator expects (tau-bench `info.task.actions`, tau2 `evaluation_criteria.actions`)."""

    model_config = ConfigDict(extra="forbid")

    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    requestor: Requestor = "agent"


class Run(BaseModel):
    """One agent run (trajectory) with its outcome.

    `messages` are OpenAI chat messages: `{"role": "system"|"user"|"assistant"|"tool", "content": str|None}` with
    assistant `tool_calls: [{"id", "type": "function", "function": {"name", "arguments": <JSON string>}}]` and tool
    messages carrying `tool_call_id` and `name`. `tool_calls` lists the same calls with decoded arguments and results.
    """

    model_config = ConfigDict(extra="forbid")

    run_id: str = Field(description="Unique within a load: `<file stem>/<task id>/<trial>`.")
    source: str = Field(description="Format the run came from: tau-bench, tau2-bench, openai-jsonl, planted.")
    file: str | None = Field(default=None, description="Path of the file the run was read from.")
    task_id: str
    trial: int = 0
    messages: list[dict[str, Any]]
    tool_calls: list[ToolCall] = Field(default_factory=list)
    reward: float
    success: bool
    policy: str | None = Field(default=None, description="Policy text the agent was given (system message).")
    ground_truth: list[GroundTruthAction] | None = Field(
        default=None, description="Actions the source's evaluator expects, when the source carries them."
    )
    tools: list[dict[str, Any]] | None = Field(default=None, description="OpenAI tool schemas, when the source has them.")
    instruction: str | None = Field(default=None, description="The simulated user's instruction, when known.")
    meta: dict[str, Any] = Field(default_factory=dict, description="Source-specific extras (model, domain, ...).")

    @property
    def agent_calls(self) -> list[ToolCall]:
        return [c for c in self.tool_calls if c.requestor == "agent"]

    @property
    def user_calls(self) -> list[ToolCall]:
        """Calls the simulated user made on its own side (tau2 `requestor: user`: toggling airplane mode, ...)."""
        return [c for c in self.tool_calls if c.requestor == "user"]

    def first_user_message(self) -> str:
        for m in self.messages:
            if m.get("role") == "user" and isinstance(m.get("content"), str):
                return m["content"]
        return ""

    def request_text(self, turns: int = 3) -> str:
        """The user's first `turns` messages, joined: where a request is stated, whether the first turn carries it
        or only greets ("Hi", then the identification, then what they want)."""
        said = [m["content"] for m in self.messages if m.get("role") == "user" and isinstance(m.get("content"), str)]
        return "\n".join(said[:turns])
