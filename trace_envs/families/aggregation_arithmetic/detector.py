"""Detector of aggregation_arithmetic: how the miner finds it in real runs (see task.py for the env)."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from trace_envs.checks.clauses import CallMade, CallRef, Check
from trace_envs.checks.trace import parse_result
from trace_envs.families.aggregation_arithmetic.task import numeric_value
from trace_envs.mining import departures, labeling
from trace_envs.mining.detector import Detector, Label, Proposal, ProposalContext, register_detector
from trace_envs.runtime.phrases import path_words
from trace_envs.runtime.world import listing, words
from trace_envs.trajectories.results import ResultIndex


def filtered_sums(ctx: ProposalContext, write: str, arg: str) -> tuple[str, str, str, str, Any, Any] | None:
    """What the runs show `arg` of `write` to be when it is a sum over some of a record's items: (read, list path,
    the summed item field, the selecting field, its value, another value it takes), backed by MIN_SUM_RUNS runs. A
    run supports it when its expected `write` passes a number that one read result of the run gives as the sum over
    two or more, not all, of a list's items sharing a value of one field (the open invoices, not the paid ones)."""
    support: Counter = Counter()
    others: dict[tuple, Counter] = {}
    for run in ctx.runs:
        wanted = [g.arguments.get(arg) for g in run.ground_truth or [] if g.name == write]
        wanted = [v for v in wanted if numeric_value(v) is not None and not isinstance(v, list)]
        if not wanted:
            continue
        seen = set()
        for c in run.agent_calls:
            if c.name not in ctx.reads or c.error or not c.result:
                continue
            for items_path, items in _item_lists(parse_result(c.result)):
                for hit, other in _selections(items, wanted):
                    found = (c.name, items_path, *hit)
                    seen.add(found)
                    others.setdefault(found, Counter())[other] += 1
        support.update(seen)
    if not support:
        return None
    best, n = max(support.items(), key=lambda x: (x[1], str(x[0])))
    if n < MIN_SUM_RUNS:
        return None
    return (*best, others[best].most_common(1)[0][0])


MIN_SUM_RUNS = 3


def _item_lists(value: Any, prefix: str = "", depth: int = 0) -> list[tuple[str, list[dict[str, Any]]]]:
    """(path, items) of each list of records in a result, two levels deep (an account's `invoices`)."""
    out = []
    if isinstance(value, dict) and depth < 2:
        for k, v in value.items():
            if isinstance(v, list) and len(v) >= 3 and all(isinstance(i, dict) for i in v):
                out.append((f"{prefix}{k}", v))
            elif isinstance(v, dict):
                out += _item_lists(v, f"{prefix}{k}.", depth + 1)
    return out


def _selections(items: list[dict[str, Any]], wanted: list[Any]) -> list[tuple[tuple[str, str, Any], Any]]:
    """((summed field, selecting field, value), another value) for each way two or more (not all) items sharing a
    value of one field sum, in one of their numeric fields, to a wanted number."""
    out = []
    numeric = [f for f in items[0] if all(numeric_value(i.get(f)) is not None and not isinstance(i.get(f), list)
                                          for i in items)]
    for where in items[0]:
        values = [i.get(where) for i in items]
        if not all(isinstance(v, str) for v in values) or len(set(values)) < 2:
            continue
        for value in sorted(set(values)):
            picked = [i for i in items if i.get(where) == value]
            if len(picked) < 2:
                continue
            other = next(v for v in values if v != value)
            for leaf in numeric:
                total = round(sum(i[leaf] for i in picked), 2)
                if any(abs(total - float(w)) <= 0.01 for w in wanted):
                    out.append(((leaf, where, value), other))
    return out


def _slug(value: Any) -> str:
    return re.sub(r"[^a-z0-9]+", "_", str(value).lower()).strip("_")[:24] or "items"


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


class AggregationArithmeticDetector(Detector):
    task = "aggregation_arithmetic"
    teaches = ("wrong_number",)

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
            summed = filtered_sums(ctx, w, a)
            if summed is not None:  # the runs show what the number is: the sum of the selected items
                read, items, leaf, where, value, other = summed
                path = f"{items}.*.{leaf}"
                roles = ctx.roles_for(w, arg=a)
                roles["read"] = read
                roles["key"] = next((k for k in ctx.args(read) if k in ctx.args(w)), roles.get("key", ""))
                out.append(Proposal(
                    name=f"pay_{_slug(value)}_{_slug(items)}_with_{w}",
                    description=f"When the user pays what they owe, pass {w} the sum of the {path_words(path)} over "
                    f"the {words(str(value))} {path_words(items)} the record lists (not one of them, not every one).",
                    roles=roles,
                    label_check=_write_made(w),
                    label_args={"tool": w, "arg": a},
                    params={"field": path, "op": "sum", "label": path_words(path), "where_field": where,
                            "where_value": value, "other_value": other},
                ))
                continue
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


register_detector(AggregationArithmeticDetector())
