"""Handoff to a human: transfer the user when the policy requires a human, and only then.

Half the scenarios need a human, half do not (the agent must then do the requested write itself and not transfer),
so "always transfer" is not a policy that pays. What needs a human is, by what the spec holds:

- `rules`: the write's rule has `handoff` conditions on the record (a trip with a flown segment);
- a gate: the record's `params.field` holds one of `params.blocked` (the other values, `params.allowed`, need none);
- `params.topics`: the user's request is one the policy sends to a human (a billing dispute), phrased as real users
  phrased it (`{target}` is the record's key value); the self-service class asks for the write instead.

The agent must look the record up, then call the handoff tool (which ends the episode) and write nothing, or do the
write. Bindings: `target`, `self_service`, `reason`.

Example episode (airline, a flown segment needs a human):

    user:  Hi! My user id is omar_davis_3817. I'd like to cancel reservation QZ7Y2K.
    agent: get_reservation_details(reservation_id=QZ7Y2K)  -> {..., "flights": [{"date": "2024-05-13", ...}], ...}
    agent: transfer_to_human_agents(summary="The user wants to cancel reservation QZ7Y2K, ...")
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from trace_envs.checks.clauses import CallMade, CallRef, Check, NoCall, Order
from trace_envs.families.kit import Kit, gate_of
from trace_envs.families.task import Task, register_task
from trace_envs.language import hints
from trace_envs.runtime import Scenario
from trace_envs.runtime.scenario import UserRequest
from trace_envs.runtime.world import (
    RecordEnv,
    ScenarioError,
    call,
    canonical_json,
    decide,
    fill_arguments,
    gated_record,
    new_state,
)

HUMAN_SHARE = 0.55


class HandoffParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    field: str | None = Field(default=None, description="Record field whose value requires a human (a dotted path).")
    blocked: list[Any] = Field(default_factory=list, description="Values of `field` that require a human.")
    allowed: list[Any] = Field(default_factory=list, description="Values that let the agent do the write itself.")
    topics: list[str] = Field(
        default_factory=list, description="Requests the policy sends to a human, with {target} for the record's key."
    )


class HandoffEnv(RecordEnv):
    @property
    def terminal_tools(self) -> frozenset[str]:  # type: ignore[override]
        return frozenset({self.SPEC.roles["handoff"]})

    def build_scenario(self, rng) -> Scenario:
        spec = self.SPEC
        kit = Kit(spec, rng)
        key, handoff, write = kit.key, spec.roles["handoff"], kit.write
        params = spec.params
        gate = gate_of(params)
        topics = [t for t in params.get("topics", []) if t.count("{target}") <= 1]  # a request may name no record
        ruled = bool(write and spec.rules.rule(write) and spec.rules.rule(write).handoff)
        if not (ruled or gate or topics):
            raise ScenarioError("nothing in the spec decides when a human is needed (no rule, gate or topics)")
        self_service = bool(write) and self.class_draw >= HUMAN_SHARE
        reason: Any = None
        if ruled or (gate is not None and write):
            want = "allowed" if self_service else "handoff"
            if gate is not None and not ruled:
                record, reason = gated_record(kit.source, write, gate, "allowed" if self_service else "blocked",
                                              "blocked" if self_service else "allowed", kit.facts)
            else:
                record = kit.source.draw(lambda r: decide(spec, write, r, gate, kit.facts) == want)
                if record is None:
                    raise ScenarioError(f"no real record is {want} for {write} under the spec's rules")
        else:  # the request decides: any record does for a transfer, one the policy lets the agent write for itself
            record = kit.source.draw(
                (lambda r: decide(spec, write, r, None, kit.facts) == "allowed") if self_service and write else None
            )
            if record is None:
                raise ScenarioError(f"no real record allows {write} under the spec's rules")
        target = record[key]
        others = kit.source.records(max(1, spec.knobs.distractors))
        other = others[0][key]
        kit.knows(target)
        read, read_other = kit.read_call(target), kit.read_call(other)
        asks = kit.fact_questions(write) if write else []
        if topics and not ruled and gate is None:
            topic = topics[int(rng.integers(len(topics)))].replace("{target}", target)
            request_text = topic if not self_service else None
        else:
            request_text = None
        if write and (self_service or request_text is None):
            args, stated = kit.write_args(write, record)
            opening = f"{kit.greeting()} I'd like to {kit.phrase(write, target)}."
            if stated:
                opening += f" Use these details: {canonical_json(stated)}."
            opening += kit.from_record(write, args, stated)
            summary_of = kit.phrase(write, target)
        else:
            args, opening = {}, f"{kit.greeting()} {request_text}"
            summary_of = request_text or f"get help with {kit.noun} {target}"
        if request_text is not None and not self_service:
            opening = f"{kit.greeting()} {request_text}"
            summary_of = request_text
        summary = f"The user ({kit.user_id or 'unidentified'}) asks to {summary_of}; the policy requires a human agent."
        text = _summary_arg(spec, handoff, key)
        handoff_call = call(handoff, **_handoff_args(spec, handoff, key, target, text, summary))
        if text is not None and target not in summary:  # a request about no record of the user's names none
            text = None
        if self_service:
            assert write is not None
            steps = kit.write_steps(write, target, args)
            done = kit.done(write, [target])
            wrong = dict(args, **{key: other})
            oracle = [read, *asks, *steps, done]
            mutants = {
                "drop_required_call": [*asks, *steps, done],
                "swap_calls": [*asks, *steps, read, done],
                "wrong_argument": [read_other, *asks, *kit.write_steps(write, other, wrong), done],
                "forbidden_extra_call": [read, *asks, *steps, handoff_call],
                "text_only": [done],
            }
            request = kit.request(write, target)
        else:
            forbidden = call(write, **fill_arguments(spec.tool(write), {key: target})) if write else read_other
            oracle = [read, handoff_call]
            mutants = {
                "drop_required_call": [handoff_call],
                "swap_calls": [handoff_call, read],
                "wrong_argument": [read_other, handoff_call],
                "forbidden_extra_call": [read, forbidden, handoff_call],
                "text_only": ["I'm sorry, I can't help with that myself. A human agent will take care of it."],
            }
            request = UserRequest(kind="handoff", tool=handoff, target=target, phrase=summary_of)
        return Scenario(
            state=new_state({r[key]: r for r in [record, *others]}),
            # the summary a person takes over from names the record (52 of the 60 summaries real agents wrote in
            # the tau-bench and tau2 airline and retail runs name an id): "x" or another record's id hands over nothing
            bindings={"target": target, "self_service": self_service, "reason": reason,
                      "handoff_args": {text: {"$mentions": target}} if text else {}},
            opening=opening,
            facts=kit.facts,
            requests=[request],
            oracle=oracle,
            mutants=mutants,
            klass="self_service" if self_service else "human",
        )


def _summary_arg(spec, handoff: str, key: str) -> str | None:
    """The hand-off's first required text argument other than the key: the summary a person reads."""
    tool = spec.tool(handoff)
    return next((name for name in tool.required if name != key and isinstance(tool.properties.get(name), dict)
                 and tool.properties[name].get("type") == "string"), None)


def _handoff_args(spec, handoff: str, key: str, target: str, text: str | None, summary: str) -> dict[str, Any]:
    """The hand-off's arguments: the key when it takes one, `summary` as its text argument `text`, examples else."""
    tool = spec.tool(handoff)
    fixed: dict[str, Any] = {key: target} if key in tool.properties else {}
    if text is not None:
        fixed[text] = summary
    return fill_arguments(tool, fixed)


class HandoffToHuman(Task):
    name = "handoff_to_human"
    summary = "Transfer the user to a human when the policy requires one (and only then), instead of refusing."
    roles = ("read", "handoff", "key")
    params = HandoffParams
    env_class = HandoffEnv

    def hint(self, spec: Any) -> str:
        base = super().hint(spec)
        return base if spec.params.get("blocked") else hints.join([base, hints.hand_off(spec.roles["handoff"])])

    def check(self, roles: dict[str, str], params: dict[str, Any], requests: int = 2) -> Check:
        key, read, handoff, write = roles["key"], roles["read"], roles["handoff"], roles.get("write", "")
        target = {key: {"$var": "target"}}
        read_target = CallRef(tool=read, args=target)
        clauses: list = [
            Order(id="handed_off", weight=1, when="!self_service", first=read_target,
                  then=CallRef(tool=handoff, args_from="handoff_args"),
                  description="look the record up, then transfer the user to a human as the policy requires, with a "
                              "summary that names the record"),
            NoCall(id="no_write", when="!self_service", penalty=True, call=CallRef(kind="write"),
                   description="write nothing when a human must handle the request"),
        ]
        if write:  # self_service scenarios need no human: the agent does the write itself and does not transfer
            write_target = CallRef(tool=write, args=target)
            clauses += [
                CallMade(id="write_target", weight=2, when="self_service", call=write_target,
                         description=f"when no human is needed, {write} the record the user asked about"),
                Order(id="read_first", weight=1, when="self_service", requires=["write_target"], first=read_target,
                      then=write_target, join=[key], description=f"look the record up with {read} first"),
                NoCall(id="no_handoff", when="self_service", penalty=True, call=CallRef(tool=handoff),
                       description="no transfer when the agent can do it"),
                NoCall(id="no_other_write", when="self_service", penalty=True, call=CallRef(kind="write"),
                       unless=[write_target], description="no write but the one the user asked for"),
            ]
        return Check(clauses=clauses)

    def problems(self, spec: Any) -> list[str]:
        out = super().problems(spec)
        write = spec.roles.get("write")
        rule = spec.rules.rule(write) if write else None
        if not (rule and rule.handoff) and not spec.params.get("field") and not spec.params.get("topics"):
            out.append("nothing decides when a human is needed: give rules with handoff conditions for the write, "
                       "params.field with blocked values, or params.topics")
        if not write:
            out.append("roles.write is missing: without a request the agent can handle itself, always transferring "
                       "would be the best policy")
        return out


register_task(HandoffToHuman())
