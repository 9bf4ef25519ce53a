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

from trace_envs.checks.clauses import AllCompleted, CallMade, CallRef, Check, Communicated, NoCall
from trace_envs.families import departures, labeling
from trace_envs.families.base import Family, Label, Proposal, ProposalContext
from trace_envs.families.kit import GOODBYE, Kit
from trace_envs.families.registry import register_family
from trace_envs.runtime import Scenario
from trace_envs.runtime.phrases import path_words
from trace_envs.runtime.records import get_path, set_path
from trace_envs.runtime.scenario import UserRequest
from trace_envs.runtime.world import RecordEnv, ScenarioError, listing, new_state
from trace_envs.trajectories.invariants import values_at, violations
from trace_envs.trajectories.results import ResultIndex

OPS = ("sum", "max", "min", "count")
ZERO_SHARE = 0.4  # op count: share of listed records whose value is set to zero


class AggregationParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    field: str = Field(description="Numeric record field to aggregate (a dotted path; `*` sums over list items).")
    op: Literal["sum", "max", "min", "count"] = Field(description="The aggregate the user asks for.")
    label: str | None = Field(default=None, description="How the user names the field (e.g. 'amount paid').")


class AggregationEnv(RecordEnv):
    def build_scenario(self, rng) -> Scenario:
        spec = self.SPEC
        params = spec.params
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
        numbers = [_number(v) for v in values_at(record, path)]
        numbers = [v for v in numbers if v is not None]
        if not numbers:
            return None
        total = sum(numbers)
        return round(total, 2) if isinstance(total, float) else total
    return _number(get_path(record, path)[1])


def _number(value: Any) -> float | int | None:
    if isinstance(value, list):
        return len(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return value


def _join(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


class AggregationArithmetic(Family):
    name = "aggregation_arithmetic"
    summary = "Read every record involved and compute totals, maxima, minima or counts over them exactly."
    roles = ("read", "key")
    params = AggregationParams
    env_class = AggregationEnv
    teaches = ("wrong_number",)

    def check(self, roles: dict[str, str], params: dict[str, Any], requests: int = 2) -> Check:
        key, read = roles["key"], roles["read"]
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

    def label(self, view, check: Check, args: dict[str, Any]) -> Label:
        """From the run's departures: LACKING when a number the write passed (any argument: an amount, a count, a
        payment's amount) differs from the expected one; else the numeric argument against the ground truth."""
        by_gt = departures.arg_kind(view, args["tool"], None, ("wrong_number",))
        return by_gt or (labeling.arith(view, args["tool"], args["arg"]) if args["tool"] else "NA")

    def portable_check(self, roles: dict[str, str]) -> tuple[Check, dict[str, Any]] | None:
        w, a = roles.get("write"), roles.get("arg")
        return (_write_made(w), {"tool": w, "arg": a}) if w and a else None

    def propose(self, ctx: ProposalContext) -> list[Proposal]:
        if not ctx.has_gt:
            return []
        # One candidate per write (its numbers: counts, amounts, a payment's amount, fail together as one skill), and
        # one over every write, since a weak agent's arithmetic fails on whichever write the task needs.
        out = []
        numeric = [w for w in ctx.writes if ctx.gt_counts[w] and ctx.gt_numeric.get(w)]
        for w in numeric:
            a = max(sorted(ctx.gt_numeric[w]), key=lambda x: ctx.gt_numeric[w][x])
            out.append(Proposal(
                name=f"compute_amounts_for_{w}",
                description=f"Compute the numbers {w} takes ({listing(sorted(ctx.gt_numeric[w]))}) correctly from the "
                "records (totals, prices, counts).",
                roles=_numeric_roles(ctx, w, a),
                label_check=_write_made(w),
                label_args={"tool": w, "arg": a},
            ))
        if len(numeric) >= 2:
            top = max(numeric, key=lambda w: (ctx.gt_counts[w], w))
            a = max(sorted(ctx.gt_numeric[top]), key=lambda x: ctx.gt_numeric[top][x])
            out.append(Proposal(
                name="compute_every_amount",
                description="Compute every number a write takes (amounts to pay, counts, totals over the records) "
                "correctly from the records, in whichever request it comes.",
                roles=_numeric_roles(ctx, top, a),
                label_check=Check(clauses=[CallMade(id="some_write", call=CallRef(kind="write"))]),
                label_args={"tool": None, "arg": a},
                extra_tools=numeric,
            ))
        return out

    def infer_params(self, roles: dict[str, str], index: ResultIndex, policy: str = "", rules: Any = None
                     ) -> tuple[dict[str, Any], str]:
        numeric = index.numeric_fields(roles.get("read", ""))
        # money first (what a write pays is a sum of amounts), a list's items summed over all of them, not the first
        ranked = sorted(numeric, key=lambda p: (next((i for i, w in enumerate(MONEY) if w in p), len(MONEY)), p))
        field = ranked[0].replace(".0.", ".*.") if ranked else "amount"
        return {"field": field, "op": "sum"}, f" The total of {field} over the records must be computed exactly."

    def target_tools(self, roles: dict[str, str]) -> list[str]:
        k = "write" if "write" in roles else "read"
        return [roles[k]] if roles.get(k) else []


MONEY = ("amount", "price", "total", "balance", "cost", "fee")


def _numeric_roles(ctx: ProposalContext, write: str, arg: str) -> dict[str, str]:
    """The write's roles, with the read (and its key) whose records hold numbers to compute over: the write's own
    read when its records have numeric fields, else the read most often looked up before a write that has them."""
    roles = ctx.roles_for(write, arg=arg)
    if ctx.index.numeric_fields(roles.get("read", "")):
        return roles
    pairs = [(n, r, k) for (r, _w, k), n in ctx.pairs.items() if ctx.index.numeric_fields(r)]
    if pairs:
        _, read, key = max(pairs)
        roles.update(read=read, key=key)
    return roles


def _write_made(write: str) -> Check:
    return Check(applies_if=[CallRef(tool=write)], clauses=[CallMade(id="write_made", call=CallRef(tool=write))])


register_family(AggregationArithmetic())
