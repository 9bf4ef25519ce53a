"""Aggregation and arithmetic over records: read every record involved and report the computed figure.

The user lists `knobs.requests` of their records and asks for an aggregate (`params.op`: sum | max | min | count) of a
numeric field (`params.field`, a field name or a dotted path such as `payment_history.0.amount`; a list-valued field
counts its items). The agent must read every listed record and state the figure in a sentence after reading; a reply
that pastes the records or lists many numbers states nothing, and reading other records or writing anything zeroes
the score. `count` is the number of listed records whose value is above zero. Bindings: `target_0` ..,
`targets`, `target`, `answer`.

Example episode (airline, total paid over three reservations):

    user:  Hi! My user id is omar_davis_3817. I have these reservations: A1B2C3, D4E5F6 and G7H8I9. Could you tell
           me the total amount paid?
    agent: get_reservation_details(A1B2C3), get_reservation_details(D4E5F6), get_reservation_details(G7H8I9)
    agent: I looked up the 3 reservations you listed: the total amount paid is 2317.
"""

from __future__ import annotations

import copy
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from trace_envs.checks.clauses import AllCompleted, CallMade, CallRef, Check, Communicated, NoCall, Order
from trace_envs.families.kit import GOODBYE, Kit
from trace_envs.families.task import Task, register_task
from trace_envs.language import hints
from trace_envs.runtime import Scenario
from trace_envs.runtime.phrases import path_words
from trace_envs.runtime.records import get_path, set_path
from trace_envs.runtime.scenario import UserRequest
from trace_envs.runtime.world import RecordEnv, ScenarioError, call, canonical_json, listing, new_state, words
from trace_envs.trajectories.invariants import values_at, violations

ZERO_SHARE = 0.4  # op count: share of listed records whose value is set to zero


class AggregationParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    field: str = Field(description="Numeric record field to aggregate (a dotted path; `*` sums over list items).")
    op: Literal["sum", "max", "min", "count"] = Field(description="The aggregate the user asks for.")
    label: str | None = Field(default=None, description="How the user names the field (e.g. 'amount paid').")
    where_field: str | None = Field(default=None, description="Pay mode: the item field that selects the items to "
                                    "sum (e.g. 'status'); the user asks to pay the sum, the write's `arg` takes it.")
    where_value: Any = Field(default=None, description="Pay mode: the value of `where_field` the items summed have.")
    other_value: Any = Field(default=None, description="Pay mode: a value of `where_field` the other items have.")


class AggregationEnv(RecordEnv):
    def build_scenario(self, rng) -> Scenario:
        spec = self.SPEC
        params = spec.params
        if params.get("where_field"):
            return _pay_scenario(spec, rng) if spec.roles.get("write") else _tell_scenario(spec, rng)
        kit = Kit(spec, rng)
        key = kit.key
        path, op = str(params["field"]), str(params["op"])
        label = str(params.get("label") or path_words(path))
        n = max(2, spec.knobs.requests)
        records = kit.source.records(n + max(1, spec.knobs.distractors), lambda r: _value(r, path) is not None)
        targets, others = [r[key] for r in records[:n]], [r[key] for r in records[n:]]
        if op == "count":  # else every listed record counts and the answer is the length of the list
            for record in records[:n]:
                if rng.random() < ZERO_SHARE and "*" not in path and not isinstance(get_path(record, path)[1], list):
                    zeroed = copy.deepcopy(record)
                    set_path(zeroed, path, 0)
                    if not violations(zeroed, spec.invariants, spec.rules.now):
                        set_path(record, path, 0)
        values = [_value(r, path) for r in records[:n]]
        answer = _aggregate(op, values)
        question = {
            "sum": f"the total {label}",
            "max": f"the highest {label}",
            "min": f"the lowest {label}",
            "count": f"how many of them have a {label} above zero",
        }[op]
        opening = f"{kit.greeting()} I have these {kit.noun}s: {listing(targets)}. Could you tell me {question}?"
        say = f"I looked up the {n} {kit.noun}s you listed: {_answer_phrase(op, label)} is {_fmt(answer)}. {GOODBYE}"
        reads = [kit.read_call(t) for t in targets]
        read_other = kit.read_call(others[0])
        writes = [t for t in spec.tools if t.kind == "write" and key in t.properties]
        extra = kit.write_steps(writes[0].name, targets[0], kit.write_args(writes[0].name, records[0])[0], False)[-1] \
            if writes else read_other
        oracle = [*reads, say]
        mutants = {
            "drop_required_call": [*reads[:-1], say],
            "swap_calls": [*reads[:-1], say, reads[-1]],
            "wrong_argument": [*reads[:-1], read_other, say],
            "forbidden_extra_call": [*reads, extra, say],
            "text_only": [say],
        }
        for t in targets:
            kit.knows(t)
        bindings: dict[str, Any] = {f"target_{i}": rid for i, rid in enumerate(targets)}
        bindings.update(target=targets[0], targets=list(targets), answer=answer)
        if answer is None:
            raise ScenarioError(f"no numeric value at {path}")
        return Scenario(
            state=new_state({r[key]: r for r in records}),
            bindings=bindings,
            opening=opening,
            facts=kit.facts,
            requests=[UserRequest(kind="info", tool=kit.read, phrase=f"know {question}")],
            oracle=oracle,
            mutants=mutants,
        )


def _selected(spec: Any, kit: Kit, rng) -> tuple[dict[str, Any], list[dict[str, Any]], list[int], float]:
    """A record whose list at the field's items path holds three or more numbered items, some (two or more, not
    all) given `where_value` and the rest `other_value`: (record, its items, the picked indices, their sum)."""
    params = spec.params
    items_path, leaf = str(params["field"]).split(".*.", 1)
    where, chosen, other = str(params["where_field"]), params["where_value"], params["other_value"]

    def usable(record: dict[str, Any]) -> bool:
        found, items = get_path(record, items_path)
        return (found and isinstance(items, list) and len(items) >= 3
                and all(isinstance(i, dict) and numeric_value(i.get(leaf)) is not None for i in items))

    record = kit.source.draw(usable)
    if record is None:
        raise ScenarioError(f"no real record has three or more items with a number at {params['field']}")
    record = copy.deepcopy(record)
    items = get_path(record, items_path)[1]
    picked = sorted(int(i) for i in rng.choice(len(items), size=int(rng.integers(2, len(items))), replace=False))
    for i, item in enumerate(items):
        item[where] = chosen if i in picked else other
    return record, items, picked, round(sum(items[i][leaf] for i in picked), 2)


def _tell_scenario(spec: Any, rng) -> Scenario:
    """Tell mode: the user asks what they owe on one record, the sum of the items `where_field` selects; the agent
    must read the record and state that sum (not one item's amount, not every item's)."""
    params, kit = spec.params, Kit(spec, rng)
    key = kit.key
    items_path, leaf = str(params["field"]).split(".*.", 1)
    record, items, picked, answer = _selected(spec, kit, rng)
    target = record[key]
    kit.knows(target)
    other = copy.deepcopy(record)  # another customer's record, there to be read by mistake
    other_id = other[key] = kit.source.fresh_id()
    what = f"the {words(str(params['where_value']))} {path_words(items_path)}"
    question = f"the total {path_words(leaf)} of {what}"
    opening = f"{kit.greeting()} Could you tell me {question} on my {kit.noun} {target}?"
    read = kit.read_call(target)

    def say(value: float) -> str:
        return f"I looked it up: {question} on {kit.noun} {target} is {_fmt(value)}. {GOODBYE}"

    every = round(sum(i[leaf] for i in items), 2)
    mutants = {
        "drop_required_call": [say(answer)],
        "swap_calls": [say(answer), read],
        "wrong_argument": [kit.read_call(other_id), say(answer)],
        "forbidden_extra_call": [read, kit.read_call(other_id), say(answer)],
        "text_only": [say(answer)],
        "tell_one_item": [read, say(items[picked[0]][leaf])],
        "tell_every_item": [read, say(every)],
    }
    return Scenario(
        state=new_state({target: record, other_id: other}),
        bindings={"target": target, "targets": [target], "answer": answer},
        opening=opening,
        facts=kit.facts,
        requests=[UserRequest(kind="info", tool=kit.read, phrase=f"know {question}")],
        oracle=[read, say(answer)],
        mutants=mutants,
    )


def _tell_check(roles: dict[str, str]) -> Check:
    """Tell mode: the sum stated after reading the record (3), the record read (1); reading another record or any
    write zeroes the score."""
    key, read = roles["key"], roles["read"]
    target = CallRef(tool=read, args={key: {"$var": "target"}})
    return Check(clauses=[
        Communicated(id="correct_answer", weight=3, values=[{"$var": "answer"}], after=target,
                     description="state the sum of the selected items in a sentence after reading the record"),
        CallMade(id="read_record", weight=1, requires=["correct_answer"], call=target,
                 description=f"read the record with {read}"),
        NoCall(id="no_write", penalty=True, call=CallRef(kind="write"), description="change nothing"),
        NoCall(id="no_other_read", penalty=True, call=CallRef(tool=read, args={key: {"$not": {"$in": {
            "$var": "targets"}}}}), description="read only the record the user asked about"),
    ])


def _pay_scenario(spec: Any, rng) -> Scenario:
    """Pay mode: the user asks to pay what they owe on one record, the sum of the items `where_field` selects; the
    agent must read the record and pass that sum to the write (not one item's amount, not every item's). Which items
    are selected varies over seeds, so no constant or positional amount is right."""
    params, kit = spec.params, Kit(spec, rng)
    key, write, arg = kit.key, kit.write, spec.roles["arg"]
    items_path, leaf = str(params["field"]).split(".*.", 1)
    chosen = params["where_value"]
    if write is None:
        raise ScenarioError("pay mode needs the write the sum is paid with")
    record, items, picked, answer = _selected(spec, kit, rng)
    newest = items[picked[-1]][leaf]
    every = round(sum(i[leaf] for i in items), 2)
    target = record[key]
    kit.knows(target)
    args, stated = kit.write_args(write, record, {arg: answer})
    stated.pop(arg, None)
    what = f"the {words(str(chosen))} {path_words(items_path)}"
    opening = f"{kit.greeting()} I'd like to pay what I owe on my {kit.noun} {target}: {what}, all of them."
    if stated:
        opening += f" Use these details: {canonical_json(stated)}."
    opening += kit.from_record(write, {k: v for k, v in args.items() if k != arg}, stated)
    read = kit.read_call(target)
    steps = kit.write_steps(write, target, args)
    done = f"Done: I paid {_fmt(answer)} for {what} on {kit.noun} {target}. {GOODBYE}"

    def paying(amount: float) -> list[str]:
        return kit.write_steps(write, target, dict(args, **{arg: amount}))

    mutants = {
        "drop_required_call": [*steps, done],
        "swap_calls": [*steps, read, done],
        "wrong_argument": [read, *paying(newest), done],
        "forbidden_extra_call": [read, *steps, call(write, **dict(args, **{arg: newest})), done],
        "text_only": [done],
        "pay_every_item": [read, *paying(every), done],
    }
    return Scenario(
        state=new_state({target: record}),
        bindings={"target": target, "answer": answer},
        opening=opening,
        facts=kit.facts,
        requests=[kit.request(write, target)],
        oracle=[read, *steps, done],
        mutants=mutants,
    )


def _aggregate(op: str, values: list[float | int]) -> float | int:
    if op == "sum":
        total = sum(values)
        return round(total, 2) if isinstance(total, float) else total
    if op == "max":
        return max(values)
    if op == "min":
        return min(values)
    return sum(1 for v in values if v > 0)


def _answer_phrase(op: str, label: str) -> str:
    return {
        "sum": f"the total {label}",
        "max": f"the highest {label}",
        "min": f"the lowest {label}",
        "count": f"the number with a {label} above zero",
    }[op]


def _fmt(value: float | int) -> str:
    return f"{value:.2f}" if isinstance(value, float) and not value.is_integer() else str(int(value))


def _value(record: dict[str, Any], path: str) -> float | int | None:
    """The record's number at `path`: with `*` the sum over the items (every payment's amount), a list its length."""
    if "*" in path:
        numbers = [numeric_value(v) for v in values_at(record, path)]
        numbers = [v for v in numbers if v is not None]
        if not numbers:
            return None
        total = sum(numbers)
        return round(total, 2) if isinstance(total, float) else total
    return numeric_value(get_path(record, path)[1])


def numeric_value(value: Any) -> float | int | None:
    if isinstance(value, list):
        return len(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return value


def _pay_check(roles: dict[str, str]) -> Check:
    """Pay mode: the write on the target with the sum owed (3), after reading the record (1); any other write (a
    second payment, another amount) zeroes the score."""
    key, read, write, arg = roles["key"], roles["read"], roles["write"], roles["arg"]
    paid = CallRef(tool=write, args={key: {"$var": "target"}, arg: {"$approx": {"$var": "answer"}}})
    return Check(clauses=[
        CallMade(id="paid_the_sum", weight=3, call=paid, max_count=1,
                 description=f"pass the sum of the items owed as {arg} of {write}"),
        Order(id="read_first", weight=1, requires=["paid_the_sum"], first=CallRef(tool=read, args={key: {"$var": "target"}}),
              then=paid, join=[key], description=f"read the record with {read} before paying"),
        NoCall(id="no_other_write", penalty=True, call=CallRef(kind="write"), unless=[paid],
               description="no other write (no second payment, no other amount)"),
    ])


class AggregationArithmetic(Task):
    name = "aggregation_arithmetic"
    summary = "Read every record involved and compute totals, maxima, minima or counts over them exactly."
    roles = ("read", "key")
    params = AggregationParams
    env_class = AggregationEnv

    def hint(self, spec: Any) -> str:
        roles, p = spec.roles, spec.params
        where = hints.only_items(p["where_field"], p.get("where_value")) if p.get("where_field") else ""
        label = p.get("label") or hints.path_words(p.get("field"))
        write = roles.get("write")
        return hints.join([hints.compute(p.get("op", "sum"), label, roles["read"], where),
                           hints.pay_amount(roles.get("arg", "the amount"), write) if write else hints.tell_figure(),
                           hints.confirm(write) if write and spec.rules.confirm_writes else ""])

    def check(self, roles: dict[str, str], params: dict[str, Any], requests: int = 2) -> Check:
        key, read = roles["key"], roles["read"]
        if params.get("where_field"):
            return _pay_check(roles) if roles.get("write") else _tell_check(roles)
        n = max(2, requests)
        reads = [CallRef(tool=read, args={key: {"$var": f"target_{i}"}}) for i in range(n)]
        return Check(clauses=[
            Communicated(
                id="correct_answer", weight=3, values=[{"$var": "answer"}], after=CallRef(tool=read),
                description="state the computed value in a sentence after reading the data",
            ),
            AllCompleted(id="read_all", weight=1, requires=["correct_answer"], calls=reads,
                         description="look up every record involved"),
            NoCall(id="no_write", penalty=True, call=CallRef(kind="write"), description="change nothing"),
            NoCall(
                id="no_other_read", penalty=True,
                call=CallRef(tool=read, args={key: {"$not": {"$in": {"$var": "targets"}}}}),
                description="read only the records the user asked about",
            ),
        ])


register_task(AggregationArithmetic())
