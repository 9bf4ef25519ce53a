"""Argument grounding: pass a write argument exactly as the lookup returned it, never an invented value.

The write takes an argument (role `arg`) whose correct value is only in the read result, at `params.source_field` (a
field of the record, possibly a dotted path such as `payment_history.0.payment_id`). The user gives only the record's
key and asks for "the same one as on my reservation"; every other record the user owns carries another value. Any
write with another value (a guessed id, the schema's example, a distractor's) zeroes the score. Bindings: `target`,
`grounded`.

Example episode (airline baggage update paid with the reservation's payment method):

    user:  Hi! My user id is omar_davis_3817. I'd like to update the baggages of reservation QZ7Y2K. Use these ...
           For the payment id, use the same one as on my reservation: I don't have it at hand.
    agent: get_reservation_details(reservation_id=QZ7Y2K)  -> {..., "payment_history": [{"payment_id": "gift_card_1"}]}
    agent: (confirmation) update_reservation_baggages(reservation_id=QZ7Y2K, ..., payment_id=gift_card_1)
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from trace_envs.checks.clauses import CallMade, CallRef, Check, Grounded, NoCall, Order
from trace_envs.families.kit import Kit
from trace_envs.families.task import Task, register_task
from trace_envs.language import hints
from trace_envs.runtime import Scenario
from trace_envs.runtime.records import example_for, get_path, like_value, set_path
from trace_envs.runtime.scenario import ToolError
from trace_envs.runtime.world import RecordEnv, ScenarioError, apply_write, call, canonical_json, decide, new_state
from trace_envs.spec.model import ToolSpec


class GroundingParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    source_field: str = Field(description="Field of the read result that holds the value of write argument `arg`.")
    write_key: bool = Field(default=True, description=(
        "Whether the write names the record by the read's `key`; False when the grounded argument itself addresses "
        "it (ToolSandbox: search_contacts(name) finds the phone number that send_message_with_phone_number takes)."))


class GroundingEnv(RecordEnv):
    """A record env whose write may be addressed by the grounded argument instead of the key (`write_key` False):
    the write acts on the record holding that value at `source_field`."""

    def _by_value(self, tool: ToolSpec) -> bool:
        roles = self.SPEC.roles
        return (tool.name == roles.get("write") and tool.kind == "write" and roles.get("key") not in tool.properties
                and roles.get("arg") in tool.properties)

    def works(self, tool: ToolSpec) -> bool:
        return super().works(tool) or self._by_value(tool)

    def run_tool(self, name: str, args: dict[str, Any], state: dict[str, Any]) -> Any:
        spec = self.SPEC
        if name not in self._tools or not self._by_value(spec.tool(name)):
            return super().run_tool(name, args, state)
        key, arg, source = spec.roles["key"], spec.roles["arg"], str(spec.params["source_field"])
        value = args.get(arg)
        rid = next((rid for rid, record in state["records"].items() if get_path(record, source) == (True, value)),
                   None)
        if rid is None:
            raise ToolError(f"no record has {arg.replace('_', ' ')} {value!r}")
        return apply_write(spec, state, name, key, {key: rid, **args})

    def build_scenario(self, rng) -> Scenario:
        spec = self.SPEC
        kit = Kit(spec, rng)
        write, key, arg = kit.write, kit.key, spec.roles["arg"]
        assert write is not None
        source = str(spec.params["source_field"])
        schema = spec.tool(write).properties.get(arg, {})
        example = example_for(schema if isinstance(schema, dict) else {}, arg)
        used: list[Any] = []

        def distinct(record: dict[str, Any]) -> bool:
            found, value = get_path(record, source)
            if not found or not _scalar(value) or value in used or value == example:
                set_path(record, source, _fresh(example, used, rng))
            return decide(spec, write, record, None, kit.facts) == "allowed"

        records_list = []
        for _ in range(1 + spec.knobs.distractors):
            record = kit.source.draw(distinct)
            if record is None:
                raise ScenarioError(f"no real record allows {write} under the spec's rules")
            used.append(get_path(record, source)[1])
            records_list.append(record)
        record, others = records_list[0], records_list[1:]
        target = record[key]
        grounded = get_path(record, source)[1]
        kit.knows(target)
        args, stated = kit.write_args(write, record, {arg: grounded})
        stated.pop(arg, None)
        arg_label = arg.replace("_", " ")
        opening = f"{kit.greeting()} I'd like to {kit.phrase(write, target)}."
        if stated:
            opening += f" Use these details: {canonical_json(stated)}."
        opening += f" For the {arg_label}, use the same one as on my {kit.noun}: I don't have it at hand."
        if str(grounded) in opening.replace(str(target), ""):
            raise ScenarioError(f"the opening gives away {arg} ({grounded!r}) in the details the user states")
        decoy = get_path(others[0], source)[1] if others else _fresh(example, used, rng)
        wrong = dict(args, **{arg: decoy})
        read = kit.read_call(target)
        asks = kit.fact_questions(write)
        done = kit.done(write, [target])
        steps = kit.write_steps(write, target, args)
        oracle = [read, *asks, *steps, done]
        mutants = {
            "drop_required_call": [*asks, *steps, done],
            "swap_calls": [*asks, *steps, read, done],
            "wrong_argument": [read, *asks, *kit.write_steps(write, target, wrong), done],
            "forbidden_extra_call": [read, *asks, *steps, call(write, **wrong), done],
            "text_only": [done],
        }
        return Scenario(
            state=new_state({r[key]: r for r in records_list}),
            bindings={"target": target, "grounded": grounded},
            opening=opening,
            facts=kit.facts,
            requests=[kit.request(write, target)],
            oracle=oracle,
            mutants=mutants,
            klass="default",
        )


def _scalar(value: Any) -> bool:
    return isinstance(value, (str, int, float)) and not isinstance(value, bool)


def _fresh(example: Any, used: list[Any], rng) -> Any:
    """A value shaped like the argument's example that no record uses yet."""
    for _ in range(20):
        value = like_value(example, rng)
        if _scalar(value) and value not in used:
            return value
    n = len(used) + 1
    if isinstance(example, (int, float)) and not isinstance(example, bool):
        return max([v for v in used if _scalar(v) and not isinstance(v, str)] + [example]) + n
    return f"{example}_{n}"


class ArgumentGrounding(Task):
    name = "argument_grounding"
    summary = "Pass a write argument exactly as an earlier lookup returned it; never invent ids or values."
    roles = ("read", "write", "key", "arg")
    params = GroundingParams
    env_class = GroundingEnv

    def hint(self, spec: Any) -> str:
        roles = spec.roles
        return hints.join([hints.read_first(roles["read"], roles.get("key")),
                           hints.ground(roles["arg"], spec.params.get("source_field"), roles["read"], roles["write"]),
                           hints.confirm(roles["write"]) if spec.rules.confirm_writes else ""])

    def check(self, roles: dict[str, str], params: dict[str, Any], requests: int = 2) -> Check:
        key, read, write, arg = roles["key"], roles["read"], roles["write"], roles["arg"]
        read_target = CallRef(tool=read, args={key: {"$var": "target"}})
        keyed = bool(params.get("write_key", True))
        on_target = {key: {"$var": "target"}} if keyed else {}
        grounded = CallRef(tool=write, args={**on_target, arg: {"$var": "grounded"}})
        return Check(clauses=[
            CallMade(id="grounded_write", weight=3, call=grounded,
                     description=f"pass {arg} exactly as the lookup returned it"),
            Order(id="read_first", weight=1, requires=["grounded_write"], first=read_target, then=grounded,
                  join=[key] if keyed else [], description=f"look the record up with {read} before the write"),
            Grounded(id="no_invented_values", weight=1, requires=["grounded_write"], call=CallRef(tool=write),
                     args=[arg], description=f"every {arg} passed appeared in a tool result or the user's words first"),
            NoCall(id="no_other_write", penalty=True, call=CallRef(kind="write"), unless=[grounded],
                   description=f"no write with another {arg} (or on another record)"),
        ])


register_task(ArgumentGrounding())
