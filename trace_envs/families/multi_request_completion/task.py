"""Multi-request completion: finish every request the user made, not just the first.

In the opening message the user asks for the same write on `knobs.requests` records (all listed). Each one needs a
lookup, then the write. When the spec names a gate (`params.field` with `allowed` / `blocked` values), half the
scenarios (`one_blocked`) hold one record the policy does not allow the write on: that one must be refused with the
reason, the others done, so "write everything asked" is not a policy that pays. Without a gate, every scenario
(`one_kept`) first names one more of the user's records that the user wants left as it is: writing every record
mentioned is then wrong, and the requests alone decide what to write. Arguments the record holds (a refund's
amount) are read from it, never handed over by the user. Bindings: `target_0` .. (the records to write), `allowed_targets`,
`targets` (every listed record), `target`, `one_blocked`, `blocked`, `reason`, `reason_words`.

Example episode (airline, three cancellations, one of them not allowed):

    user:  Hi! My user id is omar_davis_3817. I'd like to cancel reservation A1B2C3, reservation D4E5F6 and ...
    agent: get_reservation_details(A1B2C3), (confirmation), cancel_reservation(A1B2C3), get_reservation_details(D4E5F6)
    agent: I'm sorry, but I can't cancel reservation D4E5F6: its cabin is economy, and our policy does not allow it.
    agent: ... get_reservation_details(G7H8I9), (confirmation), cancel_reservation(G7H8I9)
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from trace_envs.checks.clauses import AllCompleted, CallRef, Check, Communicated, NoCall, Order
from trace_envs.families.kit import Kit, gate_of
from trace_envs.families.task import Task, register_task
from trace_envs.language import hints
from trace_envs.runtime import Scenario
from trace_envs.runtime.world import (
    RecordEnv,
    ScenarioError,
    call,
    canonical_json,
    decide,
    gated_record,
    listing,
    new_state,
)

BLOCKED_SHARE = 0.5


class MultiRequestParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    field: str | None = Field(default=None, description="Record field the policy conditions the write on (optional).")
    allowed: list[Any] = Field(default_factory=list, description="Values of `field` that permit the write.")
    blocked: list[Any] = Field(default_factory=list, description="Values of `field` that forbid it.")


class MultiRequestEnv(RecordEnv):
    def __init__(self, max_turns: int | None = None, **kwargs: Any):
        # Per request: a read, a question or two and the write, each possibly announced, plus the closing.
        floor = 8 * self.SPEC.knobs.requests + 6
        super().__init__(max_turns=max_turns or max(self.SPEC.knobs.max_turns, floor), **kwargs)

    def build_scenario(self, rng) -> Scenario:
        spec = self.SPEC
        kit = Kit(spec, rng)
        write, key, n = kit.write, kit.key, spec.knobs.requests
        assert write is not None
        gate = gate_of(spec.params)
        one_blocked = gate is not None and self.class_draw < BLOCKED_SHARE
        one_kept = gate is None  # else the requests alone never make writing every record named wrong
        todo, blocked, reason = [], None, None
        for _ in range(n - 1 if one_blocked else n):
            if gate is not None:
                todo.append(gated_record(kit.source, write, gate, "allowed", "blocked", kit.facts)[0])
            else:
                record = kit.source.draw(lambda r: decide(spec, write, r, None, kit.facts) == "allowed")
                if record is None:
                    raise ScenarioError(f"no real record allows {write} under the spec's rules")
                todo.append(record)
        if one_blocked:
            assert gate is not None
            blocked, reason = gated_record(kit.source, write, gate, "blocked", "allowed", kit.facts)
        listed = list(todo) + ([blocked] if blocked else [])
        order = [int(i) for i in rng.permutation(len(listed))]
        listed = [listed[i] for i in order]
        others = kit.source.records(max(spec.knobs.distractors, 1 if one_kept else 0))
        kept = others[0][key] if one_kept else None
        records = {r[key]: r for r in [*listed, *others]}
        ids = [r[key] for r in listed]
        todo_ids = [r[key] for r in todo]
        asks = kit.fact_questions(write)
        said_for: dict[str, dict[str, Any]] = {}
        steps: list[str] = []
        writes: dict[str, str] = {}
        for i, record in enumerate(listed):
            target = record[key]
            steps += kit.read_calls(target)
            if i == 0:
                steps += asks
            if target in todo_ids:
                args, said = kit.write_args(write, record)
                if said:
                    said_for[target] = said
                writes[target] = call(write, **args)
                steps += kit.write_steps(write, target, args)
            else:
                assert gate is not None
                steps.append(kit.refusal(write, target, gate, reason))
        done = kit.done(write, todo_ids)
        # the record to leave alone comes first: an agent that writes whatever is named meets it before the requests
        keep = f" Please leave {kit.noun} {kept} as it is, but" if kept is not None else ""
        opening = f"{kit.greeting()}{keep} I'd like to {listing([kit.phrase(write, t) for t in ids])}."
        told = list(said_for.values())
        stated = told[0] if told else {}
        if told and all(t == stated for t in told):
            opening += f" Use these details for {'each of them' if n > 1 else 'it'}: {canonical_json(stated)}."
        elif told:  # details drawn from each record (its own flights a few days later): each request states its own
            opening += " Use these details: " + "; ".join(
                f"for {kit.key_label} {t}, {canonical_json(d)}" for t, d in said_for.items()) + "."
        if todo:
            opening += kit.from_record(write, kit.write_args(write, todo[0])[0], stated)
        if n > 1:
            opening += f" That's {n} in total, please take care of all of them."
        other = others[0][key] if others else kit.source.fresh_id()
        oracle = [*steps, done]
        write_at = [i for i, step in enumerate(steps) if step in writes.values()]
        if write_at:
            last = write_at[-1]
            wrong = call(write, **dict(_args(steps[last]), **{key: other}))
            if kit.read:  # the first request's write before its read
                swapped = list(steps)
                swapped.insert(steps.index(kit.read_call(todo_ids[0])), swapped.pop(steps.index(writes[todo_ids[0]])))
                swapped.append(done)
            else:  # nothing is read: the closing claim comes before the work, which then never happens
                swapped = [done, *steps]
            mutants = {
                "drop_required_call": [*steps[:last], *steps[last + 1:], done],
                "swap_calls": swapped,
                "wrong_argument": [*steps[:last], wrong, *steps[last + 1:], done],
                "forbidden_extra_call": [*steps[: last + 1], wrong, *steps[last + 1:], done],
                "text_only": [done],
            }
        else:  # the only request is refused: the read is what can go missing
            refusal = steps[-1]
            mutants = {
                "drop_required_call": [refusal],
                "swap_calls": [refusal, *steps[:-1]],
                "wrong_argument": [*kit.read_calls(other), refusal],
                "forbidden_extra_call": [*steps[:-1], call(write, **kit.write_args(write, blocked)[0]), refusal],
                "text_only": [refusal],
            }
        for t in [*ids, *([kept] if kept else [])]:
            kit.knows(t)
        bindings: dict[str, Any] = {f"target_{i}": t for i, t in enumerate(todo_ids)}
        bindings.update(
            target=ids[0], targets=ids, allowed_targets=todo_ids, one_blocked=one_blocked,
            blocked=blocked[key] if blocked else None, reason=reason, reason_words=str(reason).replace("_", " "),
        )
        return Scenario(
            state=new_state(records),
            bindings=bindings,
            opening=opening,
            facts=kit.facts,
            requests=[kit.request(write, t) for t in ids],
            oracle=oracle,
            mutants=mutants,
            klass="one_blocked" if one_blocked else ("all_allowed" if gate is not None else "one_kept"),
        )


def _args(action: str) -> dict[str, Any]:
    import json

    return dict(json.loads(action)["arguments"])


class MultiRequestCompletion(Task):
    name = "multi_request_completion"
    summary = "Complete every request the user made (each with the expected arguments), not only the first."
    roles = ("write", "key")  # and `read` when the write's record is looked up first
    params = MultiRequestParams
    env_class = MultiRequestEnv

    def hint(self, spec: Any) -> str:
        return hints.join([super().hint(spec), hints.every_request(spec.roles["write"])])

    def check(self, roles: dict[str, str], params: dict[str, Any], requests: int = 2) -> Check:
        key, read, write = roles["key"], roles.get("read"), roles["write"]
        n = max(1, requests)
        refs = [CallRef(tool=write, args={key: {"$var": f"target_{i}"}}) for i in range(n)]
        first = {key: {"$var": "target_0"}}
        # Credit for part of the job is gated on the whole of it: an agent that stops after the first of two requests
        # must not earn more than half (the construct-validity bound), so the read-first credit needs every request
        # done, and in a scenario with a forbidden request the allowed writes count only once it was refused with the
        # reason (resolving a request includes saying why it cannot be done).
        clauses: list = [
            AllCompleted(id="all_requests", weight=3, when="!one_blocked", calls=refs,
                         description="complete every request the user made"),
        ]
        if read:
            clauses.append(Order(id="read_first", weight=1, when="!one_blocked", first=CallRef(tool=read, args=first),
                                 then=refs[0], join=[key], requires=["all_requests"],
                                 description=f"look each record up with {read} before writing it"))
        if params.get("field"):
            clauses.append(Communicated(
                id="explained_blocked", weight=1, when="one_blocked",
                values=[{"$var": "reason"}, {"$var": "reason_words"}], mode="any",
                after=CallRef(tool=read, args={key: {"$var": "blocked"}}),
                description="tell the user why the request the policy forbids cannot be done",
            ))
            if n > 1:
                clauses.append(AllCompleted(id="allowed_requests", weight=3, when="one_blocked", calls=refs[: n - 1],
                                            requires=["explained_blocked"],
                                            description="complete every request the policy allows"))
                clauses.append(Order(id="read_first_allowed", weight=1, when="one_blocked",
                                     first=CallRef(tool=read, args=first), then=refs[0], join=[key],
                                     requires=["allowed_requests"],
                                     description=f"look each record up with {read} before writing it"))
        clauses.append(NoCall(
            id="no_other_write", penalty=True, call=CallRef(kind="write"),
            unless=[CallRef(tool=write, args={key: {"$in": {"$var": "allowed_targets"}}})],
            description="no write but the requested ones the policy allows",
        ))
        return Check(clauses=clauses)

    def problems(self, spec: Any) -> list[str]:
        out = super().problems(spec)
        if spec.params.get("field") and not (spec.params.get("blocked") and spec.params.get("allowed")):
            out.append("params.field needs both allowed and blocked values: a gate with one side decides nothing")
        if not spec.params.get("field") and spec.knobs.distractors < 1 and spec.knobs.entities < 2:
            out.append("without a gate, the user must own a record to leave alone (knobs.distractors >= 1): else "
                       "writing every record mentioned would be the best policy")
        size = next((len(c.calls) for c in spec.check.clauses if c.id == "all_requests" and hasattr(c, "calls")), None)
        if size not in (None, spec.knobs.requests):
            out.append(
                f"knobs.requests is {spec.knobs.requests} but the check was built for {size} requests; rebuild it "
                "with env_check(..., requests=knobs.requests)"
            )
        return out


register_task(MultiRequestCompletion())
