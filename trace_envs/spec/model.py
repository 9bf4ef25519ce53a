"""`CapabilitySpec`: a capability as data. It names the target tools it involves, the scenario knobs, the check that
decides whether an episode exercised the capability, and the evidence the miner found for it.

The spec imports no renderer; `trace-envs generate` compiles it through the family's template.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_serializer, model_validator

from trace_envs.checks.clauses import Check
from trace_envs.spec.tool_names import TOOL_NAME_PATTERN
from trace_envs.spec.rules import PolicyRules
from trace_envs.trajectories.invariants import Invariant
from trace_envs.trajectories.models import ResultStyle

SLUG_PATTERN = r"^[a-z][a-z0-9_]{1,62}$"
ARG_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]{0,63}$"

ToolKind = Literal["read", "write", "other"]


class ListedRecords(BaseModel):
    """How a read that lists a customer's records answers: it takes their owner's id (`by`, e.g. a member id) and
    returns every record in a list (at `path` of the result, "" when the result is the list), each addressed by its
    own id field (`id`, the key the writes take). A scenario's records are the list's items."""

    model_config = ConfigDict(extra="forbid")

    by: str = Field(pattern=ARG_NAME_PATTERN, description="The read's argument: whose records it lists.")
    path: str = Field(default="", max_length=200, description="Dotted path of the list in the result.")
    id: str = Field(pattern=ARG_NAME_PATTERN, description="The listed records' own id field (the writes' key).")


class ToolSpec(BaseModel):
    """A target tool as the env must expose it: same name, argument schema and result shape as the real one."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=TOOL_NAME_PATTERN)
    description: str = Field(default="", max_length=4000)
    kind: ToolKind = "other"
    parameters: dict[str, Any] = Field(
        default_factory=lambda: {"type": "object", "properties": {}, "required": []},
        description="JSON Schema of the arguments (an object schema).",
    )
    result_example: Any = Field(default=None, description="One real result (parsed JSON), the shape to imitate.")
    result_examples: list[Any] = Field(
        default_factory=list, max_length=50, description="Real records the tool returned: scenarios are built from them."
    )
    effect: dict[str, Any] = Field(
        default_factory=dict, description="Fields a write sets on its record (e.g. status: cancelled), as the runs show."
    )
    result_style: ResultStyle = Field(
        default="json", description="How the target writes this tool's results, and so the env: JSON, or the Python "
        "repr ToolSandbox prints (`[{'name': 'Fredrik'}]`, `True`, `None`; an error as `ValueError: <why>`).")
    arg_sources: dict[str, str] = Field(
        default_factory=dict, description="Arguments whose value is a field of the record written (arg -> dotted path)."
    )
    lists: ListedRecords | None = Field(
        default=None, description="A read that answers with a list of its argument's records (see ListedRecords).")

    @field_validator("parameters")
    @classmethod
    def _object_schema(cls, value: dict[str, Any]) -> dict[str, Any]:
        if value.get("type") != "object" or not isinstance(value.get("properties", {}), dict):
            raise ValueError('parameters must be a JSON Schema object: {"type": "object", "properties": {...}}')
        import re

        for arg in value.get("properties", {}):
            if not re.fullmatch(ARG_NAME_PATTERN, arg):
                raise ValueError(f"argument name {arg!r} is not an identifier")
        return value

    @model_serializer(mode="wrap")
    def _leave_default_style_out(self, handler: Any) -> dict[str, Any]:
        # Added later: at its default it is left out, so earlier specs (their files and hashes) stay as they were.
        data = handler(self)
        if data.get("result_style") == "json":
            del data["result_style"]
        if "lists" in data and data["lists"] is None:
            del data["lists"]
        return data

    @property
    def properties(self) -> dict[str, Any]:
        return self.parameters.get("properties", {})

    @property
    def required(self) -> list[str]:
        return list(self.parameters.get("required", []))


class ScenarioKnobs(BaseModel):
    """What the scenario generator varies; `difficulty` is the knob calibration tells you to turn."""

    model_config = ConfigDict(extra="forbid")

    entities: int = Field(default=3, ge=1, le=50, description="Records in the scenario (targets plus distractors).")
    requests: int = Field(default=2, ge=1, le=10, description="Requests the user makes (multi-request families).")
    distractors: int = Field(default=2, ge=0, le=20, description="Records that look like the target but are not.")
    difficulty: Literal["easy", "medium", "hard"] = "medium"
    hint_rate: float = Field(default=0.0, ge=0.0, le=1.0, description="Share of episodes whose prompt carries the hint.")
    max_turns: int = Field(default=16, ge=2, le=200)


class Evidence(BaseModel):
    """Why the miner believes the agent lacks this capability (empty for hand-written specs)."""

    model_config = ConfigDict(extra="forbid")

    cov: float | None = None
    delta: float | None = None
    er_minus: float | None = None
    er_plus: float | None = None
    passes: int | None = Field(default=None, description="Resamples (or labeling runs) where it passed the thresholds.")
    resamples: int | None = None
    lacking_failed: list[str] = Field(default_factory=list, description="Failed run ids lacking the capability.")
    present_passed: list[str] = Field(default_factory=list, description="Passed run ids exercising it.")
    source: str = Field(default="hand-written", max_length=200)


class CapabilitySpec(BaseModel):
    """A capability an agent lacks, as data: compiled by `trace-envs generate` into `trace/<name>`."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=SLUG_PATTERN, description="Slug; the env id is trace/<name>.")
    description: str = Field(min_length=1, max_length=4000)
    family: str = Field(pattern=SLUG_PATTERN, description="A registered capability family (see trace_envs.families).")
    domain: str = Field(default="custom", pattern=r"^[a-z][a-z0-9_-]{0,40}$")
    tools: list[ToolSpec] = Field(min_length=1, max_length=30)
    roles: dict[str, str] = Field(
        default_factory=dict,
        description="Family role to tool or argument name, e.g. {'read': 'get_reservation_details', 'key': ...}.",
    )
    params: dict[str, Any] = Field(
        default_factory=dict, description="Family parameters, e.g. the record field a precondition checks."
    )
    policy: str = Field(default="", max_length=20_000, description="Policy excerpt shown in the system prompt.")
    rules: PolicyRules = Field(
        default_factory=PolicyRules, description="The policy's conditions and procedure for these tools, as data."
    )
    invariants: list[Invariant] = Field(
        default_factory=list, max_length=100, description="Invariants every record of the read tool satisfies."
    )
    hint: str = Field(default="", max_length=4000, description="Optional hint shown on a share of episodes.")
    knobs: ScenarioKnobs = Field(default_factory=ScenarioKnobs)
    check: Check = Field(description="Scores an env episode; may use `$var` bindings the family's scenario provides.")
    label_check: Check | None = Field(
        default=None, description="Portable check (no `$var`) that labels real runs; defaults to `check`."
    )
    evidence: Evidence = Field(default_factory=Evidence)
    spec_hash: str | None = Field(default=None, description="sha256 of the canonical spec without this field.")

    @field_validator("roles")
    @classmethod
    def _role_names(cls, value: dict[str, str]) -> dict[str, str]:
        import re

        for role, target in value.items():
            if not re.fullmatch(r"^[a-z][a-z0-9_]{0,31}$", role) or not re.fullmatch(TOOL_NAME_PATTERN, target):
                raise ValueError(f"role {role!r} -> {target!r}: both must be identifiers")
        return value

    @model_validator(mode="after")
    def _family_requirements(self) -> "CapabilitySpec":
        from trace_envs.families import get_task  # the registry imports the runtime, which imports this module

        problems = get_task(self.family).problems(self)
        if problems:
            raise ValueError(f"family {self.family} needs: " + "; ".join(problems))
        return self

    def tool(self, name: str) -> ToolSpec:
        for t in self.tools:
            if t.name == name:
                return t
        raise KeyError(f"spec {self.name!r} has no tool {name!r}")

    def compute_hash(self) -> str:
        data = self.model_dump(mode="json", exclude={"spec_hash"})
        canonical = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
        return hashlib.sha256(canonical.encode()).hexdigest()

    def with_hash(self) -> "CapabilitySpec":
        return self.model_copy(update={"spec_hash": self.compute_hash()})
