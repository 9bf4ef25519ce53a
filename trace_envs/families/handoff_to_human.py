"""Handoff to a human: transfer the user when the policy requires a human, and only then.

The user asks for something about one record; policy says only a human agent may handle it when the record's
`params.field` (a field name or a dotted path such as `flights.0.status`) has one of `params.blocked`. The agent must
look the record up, then call the handoff tool (which ends the episode) and never write. When the spec also names a
`write` role and `params.allowed` values, some scenarios (by difficulty) need no human: the record allows the request,
and the agent must do the write itself and not transfer, so "always transfer" is not a winning policy.
`params.set_fields` (path -> value) is applied to every record first, to keep the records consistent with the rest of
the policy; `params.blocked_fields` / `params.allowed_fields` likewise set paths of the target record when it needs a
human / when it does not (e.g. a past or a future flight date). Bindings: `target`, `self_service`, `reason`.

Example episode (airline, a flown segment needs a human):

    user:  Hi! I'd like to cancel the reservation for reservation id QZ7Y2K.
    agent: get_reservation_details(reservation_id=QZ7Y2K)  -> {..., "flights": [{"status": "landed", ...}], ...}
    agent: transfer_to_human_agents(summary="The user wants to cancel QZ7Y2K, but its first flight has landed ...")
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from trace_envs.checks.clauses import CallMade, CallRef, Check, NoCall, Order
from trace_envs.families import labeling
from trace_envs.families.base import SYNTHETIC_GATE, Family, Label, Proposal, ProposalContext
from trace_envs.families.registry import register_family
from trace_envs.runtime import Scenario, UserRequest
from trace_envs.runtime.phrases import done_message, key_noun, path_words, request_phrase
from trace_envs.runtime.records import set_path
from trace_envs.runtime.world import RecordEnv, call, fill_arguments, make_records, new_state
from trace_envs.trajectories.results import ResultIndex, gate_params

# Share of scenarios that need a human (the rest are self-service, when the spec allows them).
HUMAN_SHARE = {"easy": 1.0, "medium": 0.6, "hard": 0.5}


class HandoffParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    field: str = Field(description="Record field whose value requires a human (a dotted path).")
    blocked: list[Any] = Field(min_length=1, description="Values of `field` that require a human.")
    allowed: list[Any] = Field(default_factory=list, description="Values that let the agent do the write itself.")
    set_fields: dict[str, Any] = Field(default_factory=dict, description="Paths set on every record.")
    blocked_fields: dict[str, Any] = Field(default_factory=dict, description="Paths set on a target needing a human.")
    allowed_fields: dict[str, Any] = Field(default_factory=dict, description="Paths set on a self-service target.")


class HandoffEnv(RecordEnv):
    @property
    def terminal_tools(self) -> frozenset[str]:  # type: ignore[override]
        return frozenset({self.SPEC.roles["handoff"]})

    def build_scenario(self, rng) -> Scenario:
        spec = self.SPEC
        roles, params, knobs = spec.roles, spec.params, spec.knobs
        read, handoff, key = roles["read"], roles["handoff"], roles["key"]
        write = roles.get("write")
        path = str(params["field"])
        blocked, allowed = list(params["blocked"]), list(params.get("allowed", []))
        words = path_words(path)
        noun = key_noun(key)
        records = make_records(spec, read, key, max(knobs.entities, 1 + knobs.distractors, 2), rng)
        ids = list(records)
        target, others = ids[0], ids[1:]
        other = others[0]
        for rid in ids:
            for fixed_path, fixed in dict(params.get("set_fields", {})).items():
                set_path(records[rid], str(fixed_path), fixed)
        can_self_serve = bool(write) and bool(allowed)
        self_service = can_self_serve and bool(rng.random() >= HUMAN_SHARE[knobs.difficulty])
        values = allowed if self_service else blocked
        reason = values[int(rng.integers(len(values)))]
        set_path(records[target], path, reason)
        for fixed_path, fixed in dict(params.get("allowed_fields" if self_service else "blocked_fields", {})).items():
            set_path(records[target], str(fixed_path), fixed)
        pool = blocked + allowed
        for rid in others:
            set_path(records[rid], path, pool[int(rng.integers(len(pool)))])

        read_target, read_other = call(read, **{key: target}), call(read, **{key: other})
        if write:
            write_args = fill_arguments(spec.tool(write), {key: target})
            extras = {k: v for k, v in write_args.items() if k != key}
            opening = f"Hi! I'd like to {request_phrase(write)} for {key.replace('_', ' ')} {target}."
            if extras:
                opening += " Use these details: " + json.dumps(extras, sort_keys=True)
            request = f"{request_phrase(write)} for {noun} {target}"
        else:
            write_args, extras = {}, {}
            opening = f"Hi! I need help with my {noun}, {key.replace('_', ' ')} {target}."
            request = f"get help with {noun} {target}"
        summary = f"The user wants to {request}, but its {words} is {reason}: policy requires a human agent."
        handoff_call = call(handoff, **_handoff_args(spec, handoff, key, target, summary))
        writes = [t for t in spec.tools if t.kind == "write" and key in t.properties]

        if self_service:
            assert write is not None
            write_target = call(write, **write_args)
            write_other = call(write, **fill_arguments(spec.tool(write), {key: other}))
            ask = (
                f"I checked {noun} {target}: its {words} is {reason}, so I can {request_phrase(write)} for you. "
                "Shall I proceed?"
            )
            done = done_message(write, target)
            oracle = [read_target, ask, write_target, done]
            mutants = {
                "drop_required_call": [ask, write_target, done],
                "swap_calls": [ask, write_target, read_target, done],
                "wrong_argument": [read_other, ask, write_other, done],
                "forbidden_extra_call": [read_target, ask, write_target, handoff_call],
                "text_only": [done],
            }
        else:
            if writes:
                forbidden = call(writes[0].name, **fill_arguments(writes[0], {key: target}))
            else:
                forbidden = read_other
            refuse = f"I'm sorry, I can't help with {noun} {target} myself. A human agent will take care of it."
            oracle = [read_target, handoff_call]
            mutants = {
                "drop_required_call": [handoff_call],
                "swap_calls": [handoff_call, read_target],
                "wrong_argument": [read_other, handoff_call],
                "forbidden_extra_call": [read_target, forbidden, handoff_call],
                "text_only": [refuse],
            }
        return Scenario(
            state=new_state(records),
            bindings={"target": target, "self_service": self_service, "reason": reason},
            opening=opening,
            requests=[
                UserRequest.write(write, key, target) if write
                else UserRequest(kind="handoff", tool=handoff, phrase=f"get help with my {noun} {target}")
            ],
            oracle=oracle,
            mutants=mutants,
        )


def _handoff_args(spec, handoff: str, key: str, target: str, summary: str) -> dict[str, Any]:
    tool = spec.tool(handoff)
    fixed: dict[str, Any] = {key: target} if key in tool.properties else {}
    for name in tool.required:
        schema = tool.properties.get(name, {})
        if name not in fixed and isinstance(schema, dict) and schema.get("type") == "string":
            fixed[name] = summary
            break
    return fill_arguments(tool, fixed)


class HandoffToHuman(Family):
    name = "handoff_to_human"
    summary = "Transfer the user to a human when the policy requires one (and only then), instead of refusing."
    roles = ("read", "handoff", "key")
    params = HandoffParams
    env_class = HandoffEnv

    def check(self, roles: dict[str, str], params: dict[str, Any], requests: int = 2) -> Check:
        key, read, handoff, write = roles["key"], roles["read"], roles["handoff"], roles.get("write", "")
        target = {key: {"$var": "target"}}
        read_target = CallRef(tool=read, args=target)
        clauses: list = [
            CallMade(id="read_target", weight=1, call=read_target),
            Order(
                id="handoff_after_read", weight=2, when="!self_service", requires=["read_target"], first=read_target,
                then=CallRef(tool=handoff), description="transfer to a human once the record shows policy requires it",
            ),
            NoCall(id="no_write", weight=1, when="!self_service", requires=["read_target"], call=CallRef(kind="write")),
            NoCall(
                id="no_other_read", weight=1, requires=["read_target"],
                call=CallRef(tool=read, args={key: {"$not": {"$var": "target"}}}),
                description="do not look up another customer's record",
            ),
        ]
        if write:  # self_service scenarios need no human: the agent does the write itself and does not transfer
            clauses += [
                Order(
                    id="write_after_read", weight=2, when="self_service", requires=["read_target"], first=read_target,
                    then=CallRef(tool=write, args=target), join=[key],
                    description=f"when no human is needed, {write} after checking the record",
                ),
                NoCall(id="no_handoff", weight=1, when="self_service", requires=["read_target"],
                       call=CallRef(tool=handoff)),
                NoCall(
                    id="no_other_write", weight=1, when="self_service", requires=["read_target"],
                    call=CallRef(tool=write, args={key: {"$not": {"$var": "target"}}}),
                ),
            ]
        return Check(clauses=clauses)

    def label(self, view, check: Check, args: dict[str, Any]) -> Label:
        return labeling.checked(view, check)

    def portable_check(self, roles: dict[str, str]) -> tuple[Check, dict[str, Any]] | None:
        h = roles.get("handoff")
        return (_handed_off(h), {}) if h else None

    def propose(self, ctx: ProposalContext) -> list[Proposal]:
        out = []
        for h in ctx.handoffs:
            roles = {"handoff": h}
            r = ctx.reads[0] if ctx.reads else None
            if r:
                roles["read"] = r
                rargs = ctx.args(r)
                if rargs:
                    roles["key"] = rargs[0]
            out.append(Proposal(
                name=f"hand_off_with_{h}",
                description="When the request cannot be handled with the available tools or the policy requires it, "
                f"transfer the user to a human with {h} instead of refusing or ending the conversation.",
                roles=roles,
                label_check=_handed_off(h),
            ))
        return out

    def infer_params(self, roles: dict[str, str], index: ResultIndex) -> tuple[dict[str, Any], str]:
        gate = gate_params(index, roles.get("read", ""), roles.get("handoff", ""), "*")
        if gate is None:
            params = {"field": SYNTHETIC_GATE["field"], "blocked": ["escalated"], "allowed": ["active"]}
        else:  # values seen right before a transfer in passed runs are the ones that need a human
            params = {"field": gate["field"], "blocked": gate["allowed"], "allowed": gate["blocked"]}
        return params, f" A human is required when {params['field']} is {' or '.join(params['blocked'])}."

    def target_tools(self, roles: dict[str, str]) -> list[str]:
        return [roles["handoff"]] if roles.get("handoff") else []


def _handed_off(handoff: str) -> Check:
    return Check(applies_if=[CallRef(tool=handoff)], clauses=[CallMade(id="handed_off", call=CallRef(tool=handoff))])


register_family(HandoffToHuman())
