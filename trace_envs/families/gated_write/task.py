"""A write the policy gates on a record field: look the record up, write when its field allows it, else refuse and
say which value forbids it. One task behind two families, which differ in what they stress:

- `precondition_before_write`: check the field before writing (half the scenarios allowed; reading first weighs
  most);
- `policy_refusal`: do not make the forbidden write (40% allowed, so "always refuse" is not a policy that pays; the
  write weighs most; `params.allowed` may be left out: the other values the real records show).

The user asks for a write on a record; the policy allows it only when a field of the record (`params.field`, a dotted
path) has one of `params.allowed`, and forbids it for `params.blocked`. The spec's rules hold the policy's other
conditions neutral, so the field alone decides. Bindings: `target`, `allowed`, `reason` (the field's value),
`reason_words` (it in words). Each family has its own detector (`detector.py`): one finds runs that wrote without
reading the record, the other runs that made a write the expected actions do not make.

The two stay two presets of one task because one preset would change what each committed env pays: measured with
`validate_env` on both committed specs under either preset, an agent that writes without reading the record first
earns 0.33 under the precondition's weights and 0.67 under the refusal's, and the allowed class is 50% of seeds
against 40%.

Example episode (airline, field `cabin`, allowed `business`):

    user:  Hi! My user id is omar_davis_3817. I'd like to cancel reservation QZ7Y2K.
    agent: get_reservation_details(reservation_id=QZ7Y2K)  -> {..., "cabin": "economy", ...}
    agent: Could you tell me the reason for cancellation?
    user:  My reason for cancellation is change of plan.
    agent: I'm sorry, but I can't cancel reservation QZ7Y2K: its cabin is economy, and our policy does not allow it.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from trace_envs.checks.clauses import Check
from trace_envs.families.kit import Kit, gate_of, gated_write_check
from trace_envs.families.task import Task, get_task, register_task
from trace_envs.runtime import Scenario
from trace_envs.runtime.world import Gate, RecordEnv, ScenarioError, call, canonical_json, gated_record, new_state
from trace_envs.spec.model import CapabilitySpec
from trace_envs.trajectories.invariants import values_at


class PreconditionParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    field: str = Field(description="Record field the policy conditions the write on (a dotted path).")
    allowed: list[Any] = Field(min_length=1, description="Values of `field` that permit the write.")
    blocked: list[Any] = Field(min_length=1, description="Values of `field` that forbid it.")


class RefusalParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    field: str = Field(description="Record field whose value forbids the write (a dotted path).")
    blocked: list[Any] = Field(min_length=1, description="Values of `field` that forbid it.")
    allowed: list[Any] = Field(
        default_factory=list, description="Values that permit it (default: the other values the real records show)."
    )


class GatedWriteEnv(RecordEnv):
    def build_scenario(self, rng) -> Scenario:
        gate = gate_of(self.SPEC.params)
        assert gate is not None
        if not gate.allowed:
            read = self.SPEC.tool(self.SPEC.roles["read"])
            seen = {v for r in read.result_examples for v in values_at(r, gate.field) if isinstance(v, (str, int))}
            allowed = tuple(sorted((v for v in seen if v not in gate.blocked), key=str))
            if not allowed:
                raise ScenarioError(f"no real record shows a value of {gate.field} that allows the write")
            gate = Gate(field=gate.field, allowed=allowed, blocked=gate.blocked)
        share = get_task(self.SPEC.family).allowed_share  # type: ignore[attr-defined]
        return gated_write_scenario(self.SPEC, rng, gate, self.class_draw < share)


def gated_write_scenario(spec: CapabilitySpec, rng: np.random.Generator, gate: Gate, allowed: bool) -> Scenario:
    """The user asks for the write on one record; the policy allows it on some records and not on others, and the
    gate's field alone decides (see `gated_record`). Classes: `allowed` (read, then write) and `blocked` (read, then
    refuse saying why). Bindings: target, allowed, reason (the field's value), reason_words (it in words)."""
    kit = Kit(spec, rng)
    write, key = kit.write, kit.key
    assert write is not None
    want, flip = ("allowed", "blocked") if allowed else ("blocked", "allowed")
    record, value = gated_record(kit.source, write, gate, want, flip, kit.facts)
    target = record[key]
    others = kit.source.records(spec.knobs.distractors)
    records = {target: record, **{r[key]: r for r in others}}
    kit.knows(target)
    args, stated = kit.write_args(write, record)
    opening = f"{kit.greeting()} I'd like to {kit.phrase(write, target)}."
    if stated:
        opening += f" Use these details: {canonical_json(stated)}."
    opening += kit.from_record(write, args, stated)
    asks = kit.fact_questions(write)
    read = kit.read_call(target)
    wrong_target = others[0][key] if others else kit.source.fresh_id()
    wrong_args = dict(args, **{key: wrong_target})
    steps = kit.write_steps(write, target, args)
    if allowed:
        done = kit.done(write, [target])
        oracle = [read, *asks, *steps, done]
        mutants = {
            "drop_required_call": [*asks, *steps, done],
            "swap_calls": [*asks, *steps, read, done],
            "wrong_argument": [read, *asks, *kit.write_steps(write, wrong_target, wrong_args), done],
            "forbidden_extra_call": [read, *asks, *steps, call(write, **wrong_args), done],
            "text_only": [done],
        }
    else:
        refuse = kit.refusal(write, target, gate, value)
        oracle = [read, *asks, refuse]
        mutants = {
            "drop_required_call": [*asks, refuse],
            "swap_calls": [*asks, refuse, read],
            "wrong_argument": [kit.read_call(wrong_target), *asks, refuse],
            "forbidden_extra_call": [read, *asks, *steps, refuse],
            "text_only": [refuse],
        }
    return Scenario(
        state=new_state(records),
        bindings={"target": target, "allowed": allowed, "reason": value, "reason_words": str(value).replace("_", " ")},
        opening=opening,
        facts=kit.facts,
        requests=[kit.request(write, target)],
        oracle=oracle,
        mutants=mutants,
        klass="allowed" if allowed else "blocked",
    )


class GatedWrite(Task):
    """One family's preset of the gated write: its share of allowed scenarios and the weights of its check."""

    roles = ("read", "write", "key")
    env_class = GatedWriteEnv
    allowed_share: ClassVar[float]
    weights: ClassVar[dict[str, float]]

    def check(self, roles: dict[str, str], params: dict[str, Any], requests: int = 2) -> Check:
        return gated_write_check(roles, **self.weights)


class PreconditionBeforeWrite(GatedWrite):
    name = "precondition_before_write"
    summary = "Look the record up and check the field the policy turns on before a write; refuse with the reason."
    params = PreconditionParams
    allowed_share = 0.5
    weights = {"write_weight": 1, "order_weight": 2, "explain_weight": 1}


class PolicyRefusal(GatedWrite):
    name = "policy_refusal"
    summary = "Do not make a write the policy forbids for this record; refuse and explain which rule forbids it."
    params = RefusalParams
    allowed_share = 0.4
    weights = {"write_weight": 2, "order_weight": 1, "explain_weight": 1}


register_task(PreconditionBeforeWrite())
register_task(PolicyRefusal())
