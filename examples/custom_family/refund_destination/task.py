"""The task half of a family written outside the library: tell the user where the refund of a cancellation goes.

Policies often say a cancellation is refunded to the original payment method; agents cancel and stop, and the user
never learns which card gets the money. This task asks for the write the user wants and then a sentence stating the
payment method the record holds (`params.field`). It registers itself like a built-in family's task:

    import refund_destination            # registers the task "refund_destination" (what gym.make needs)
    import refund_destination.detector   # registers its detector (what `trace-envs mine` needs)
    trace-envs generate my_spec.json -o generated    (the generated env imports this package: keep it importable)

Example episode (planted retail):

    user:  Hi! My user id is ava_kim_1234. I'd like to cancel order #W1234567. Use these details: {"reason": ...}
    agent: get_order_details(order_id=#W1234567)  -> {..., "payment_method_id": "paypal_7654321", ...}
    agent: I'm about to cancel order #W1234567. Do you confirm (yes/no)?        user: Yes, please go ahead.
    agent: cancel_order(order_id=#W1234567, reason=...)
    agent: Done. The refund goes to your payment method paypal_7654321.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from trace_envs.checks.clauses import CallMade, CallRef, Check, Communicated, NoCall, Order
from trace_envs.families import Task, register_task
from trace_envs.families.kit import Kit
from trace_envs.runtime import Scenario
from trace_envs.runtime.world import RecordEnv, ScenarioError, call, canonical_json, decide, new_state


class RefundParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    field: str = Field(description="Record field holding the payment method the refund goes to (a dotted path).")


class RefundDestinationEnv(RecordEnv):
    def build_scenario(self, rng) -> Scenario:
        spec = self.SPEC
        kit = Kit(spec, rng)
        write, key, path = kit.write, kit.key, spec.params["field"]
        record = kit.source.draw(lambda r: decide(spec, write, r, None, kit.facts) == "allowed" and kit.value_at(r, path))
        if record is None:
            raise ScenarioError(f"no real record allows {write} and names a payment method at {path}")
        target, method = record[key], kit.value_at(record, path)
        others = kit.source.records(spec.knobs.distractors)
        kit.knows(target)
        args, stated = kit.write_args(write, record)
        opening = f"{kit.greeting()} I'd like to {kit.phrase(write, target)}."
        if stated:
            opening += f" Use these details: {canonical_json(stated)}."
        read, steps = kit.read_call(target), kit.write_steps(write, target, args)
        tell = f"Done: {kit.phrase(write, target)} is complete, and the refund goes to your payment method {method}."
        other = others[0][key] if others else kit.source.fresh_id()
        return Scenario(
            state=new_state({r[key]: r for r in [record, *others]}),
            bindings={"target": target, "method": method},
            opening=opening,
            facts=kit.facts,
            requests=[kit.request(write, target)],
            oracle=[read, *steps, tell],
            mutants={
                "drop_required_call": [read, f"Done: {kit.phrase(write, target)} is complete."],
                "swap_calls": [*steps, read, tell],  # told the method without having read it before the write
                "wrong_argument": [kit.read_call(other), *steps, tell],
                "forbidden_extra_call": [read, *steps, call(write, **dict(args, **{key: other})), tell],
                "text_only": [tell],
            },
        )


class RefundDestination(Task):
    name = "refund_destination"
    summary = "After a refundable write, tell the user which payment method the refund goes to, read off the record."
    roles = ("read", "write", "key")
    params = RefundParams
    env_class = RefundDestinationEnv

    def check(self, roles: dict[str, str], params: dict[str, Any], requests: int = 2) -> Check:
        key, read, write = roles["key"], roles["read"], roles["write"]
        target = {key: {"$var": "target"}}
        return Check(clauses=[
            CallMade(id="write_target", weight=1, call=CallRef(tool=write, args=target),
                     description=f"{write} on the record the user asked about"),
            Order(id="read_first", weight=1, requires=["write_target"], first=CallRef(tool=read, args=target),
                  then=CallRef(tool=write, args=target), join=[key], description=f"look the record up with {read} first"),
            Communicated(id="told_destination", weight=2, requires=["write_target"], values=[{"$var": "method"}],
                         after=CallRef(tool=read, args=target), about={"$var": "target"},
                         description="tell the user the payment method the refund goes to, read off the record"),
            NoCall(id="no_other_write", penalty=True, call=CallRef(kind="write"), unless=[CallRef(tool=write, args=target)],
                   description="no write but the one the user asked for"),
        ])


register_task(RefundDestination())
