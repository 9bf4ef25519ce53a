"""Detector of aggregation_arithmetic: how the miner finds it in real runs (see task.py for the env)."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from trace_envs.checks.clauses import CallMade, CallRef, Check
from trace_envs.checks.trace import read_result
from trace_envs.families.aggregation_arithmetic.task import numeric_value
from trace_envs.language.values import number_tokens
from trace_envs.mining import departures, labeling
from trace_envs.mining.detector import Detector, Label, Proposal, ProposalContext, register_detector
from trace_envs.runtime.phrases import path_words
from trace_envs.runtime.records import get_path
from trace_envs.runtime.world import listing, words
from trace_envs.trajectories.results import ResultIndex


def filtered_sums(ctx: ProposalContext, write: str, arg: str) -> tuple[str, str, str, str, Any, Any] | None:
    """What the runs show `arg` of `write` to be when it is a sum over some of a record's items: (read, list path,
    the summed item field, the selecting field, its value, another value it takes), backed by MIN_SUM_RUNS runs. A
    run supports it when its expected `write` passes a number that one read result of the run gives as the sum over
    two or more, not all, of a list's items sharing a value of one field (the open invoices, not the paid ones).
    Without expected actions a passed run's own successful `write` calls stand in for them."""
    support: Counter = Counter()
    others: dict[tuple, Counter] = {}
    for run in ctx.runs:
        wanted = [g.arguments.get(arg) for g in _truth(run, write)]
        wanted = [v for v in wanted if numeric_value(v) is not None and not isinstance(v, list)]
        if not wanted:
            continue
        seen = set()
        for c in run.agent_calls:
            if c.name not in ctx.reads or c.error or not c.result:
                continue
            _tally(c.name, c.result, wanted, seen, others)
        support.update(seen)
    if not support:
        return None
    best, n = max(support.items(), key=lambda x: (x[1], str(x[0])))
    if n < MIN_SUM_RUNS:
        return None
    return (*best, others[best].most_common(1)[0][0])


MIN_SUM_RUNS = 3


def _tally(read: str, result: Any, values: list[Any], seen: set, others: dict[tuple, Counter]) -> None:
    """Each selection of a read's list items whose sum is one of `values` (as `_selections` finds it), keyed by
    (read, list path, selection) into `seen`, with the other value of its selecting field counted in `others`."""
    for items_path, items in _item_lists(read_result(result)):
        for hit, other in _selections(items, values):
            found = (read, items_path, *hit)
            seen.add(found)
            others.setdefault(found, Counter())[other] += 1


def told_sums(ctx: ProposalContext, skip: set[str]) -> list[tuple[str, str, str, str, Any, Any]]:
    """Per read (not in `skip`): (read, list path, summed field, selecting field, its value, another value) when
    passed runs' agents, after that read, state a number that is the sum over two or more, not all, of a list's items
    sharing a value of one field (the user asked what they owe and was told the open fines' total), in at least
    MIN_SUM_RUNS runs."""
    support: Counter = Counter()
    others: dict[tuple, Counter] = {}
    for run in ctx.runs:
        if not run.success:
            continue
        seen = set()
        for c in run.agent_calls:
            if c.name not in ctx.reads or c.name in skip or c.error or not c.result:
                continue
            said = [v for m in run.messages[c.message_index + 1:] if m.get("role") == "assistant"
                    and isinstance(m.get("content"), str) for _, _, v in number_tokens(m["content"])]
            if not said:
                continue
            _tally(c.name, c.result, said, seen, others)
        support.update(seen)
    best: dict[str, tuple[tuple, int]] = {}
    for found, n in sorted(support.items(), key=lambda x: (-x[1], str(x[0]))):
        if n >= MIN_SUM_RUNS:
            best.setdefault(found[0], (found, n))
    return [(*found, others[found].most_common(1)[0][0]) for found, _ in best.values()]


def _truth(run: Any, write: str) -> list[Any]:
    """The calls of `write` the run should have made: its expected actions, else a passed run's own successful ones
    (what passed is what was wanted); none for a failed run without expected actions."""
    if run.ground_truth is not None:
        return [g for g in run.ground_truth if g.name == write]
    return [c for c in run.agent_calls if c.name == write and not c.error] if run.success else []


def _numeric_args(ctx: ProposalContext, write: str) -> Counter:
    """The write's numeric arguments: in its expected actions, else in the passed runs' calls."""
    if ctx.has_gt:
        return ctx.gt_numeric.get(write) or Counter()
    return Counter(a for run in ctx.runs for c in _truth(run, write) for a, v in c.arguments.items()
                   if numeric_value(v) is not None and not isinstance(v, (list, bool)))


def _told_label(run: Any, read: str, rule: list[Any]) -> str:
    """PRESENT when an agent message after the run's last `read` states the sum the rule gives on it, LACKING when
    they state numbers but not that one, NA when nothing was read or said in numbers."""
    total = learned_sum(run, *rule)
    last = next((c for c in reversed(run.agent_calls) if c.name == read and not c.error), None)
    if total is None or last is None:
        return "NA"
    said = [v for m in run.messages[last.message_index + 1:] if m.get("role") == "assistant"
            and isinstance(m.get("content"), str) for _, _, v in number_tokens(m["content"])]
    if not said:
        return "NA"
    return "PRESENT" if any(abs(v - total) <= 0.01 for v in said) else "LACKING"


def learned_sum(run: Any, read: str, items_path: str, leaf: str, where: str, value: Any) -> float | None:
    """The sum the rule gives on this run's last successful `read` result: `leaf` over the items at `items_path`
    whose `where` is `value`; None when the run read no such list."""
    for c in reversed(run.agent_calls):
        if c.name != read or c.error or not c.result:
            continue
        found, items = get_path(read_result(c.result), items_path)
        if found and isinstance(items, list):
            picked = [numeric_value(i.get(leaf)) for i in items if isinstance(i, dict) and i.get(where) == value]
            return round(sum(v for v in picked if v is not None), 2)
    return None

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
        if args.get("read"):  # tell mode: the number the agent said after the read against the rule's sum
            return _told_label(view.run, args["read"], args["sum"])
        by_gt = departures.arg_kind(view, args["tool"], None, ("wrong_number",))
        found = by_gt or (labeling.arith(view, args["tool"], args["arg"]) if args["tool"] else "NA")
        rule = args.get("sum")
        if found != "NA" or not rule or view.run.ground_truth is not None:
            return found
        # No expected actions: the write's number against the sum the learned rule gives on what this run read.
        total = learned_sum(view.run, *rule)
        paid = [numeric_value(c.arguments.get(args["arg"])) for c in view.run.agent_calls
                if c.name == args["tool"] and not c.error]
        paid = [v for v in paid if v is not None]
        if total is None or not paid:
            return "NA"
        return "PRESENT" if all(abs(float(v) - total) <= 0.01 for v in paid) else "LACKING"

    def portable_check(self, roles: dict[str, str]) -> tuple[Check, dict[str, Any]] | None:
        w, a = roles.get("write"), roles.get("arg")
        return (_write_made(w), {"tool": w, "arg": a}) if w and a else None

    def propose(self, ctx: ProposalContext) -> list[Proposal]:
        # One candidate per write (its numbers: counts, amounts, a payment's amount, fail together as one skill), and
        # one over every write, since a weak agent's arithmetic fails on whichever write the task needs. Without
        # expected actions only a sum the passed runs show is proposed: nothing else says what a number should be.
        out = []
        numbers = {w: _numeric_args(ctx, w) for w in ctx.writes}
        numeric = [w for w in ctx.writes if numbers[w] and (ctx.gt_counts[w] or not ctx.has_gt)]
        for w in numeric:
            a = max(sorted(numbers[w]), key=lambda x: numbers[w][x])
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
                    label_args={"tool": w, "arg": a, "sum": [read, items, leaf, where, value]},
                    params={"field": path, "op": "sum", "label": path_words(path), "where_field": where,
                            "where_value": value, "other_value": other},
                ))
                continue
            if not ctx.has_gt:
                continue
            out.append(Proposal(
                name=f"compute_amounts_for_{w}",
                description=f"Compute the numbers {w} takes ({listing(sorted(ctx.gt_numeric[w]))}) correctly from the "
                "records (totals, prices, counts).",
                roles=_numeric_roles(ctx, w, a),
                label_check=_write_made(w),
                label_args={"tool": w, "arg": a},
            ))
        paid_from = {p.roles.get("read", "") for p in out}
        for read, items, leaf, where, value, other in told_sums(ctx, paid_from):
            path = f"{items}.*.{leaf}"
            key = next(iter(ctx.args(read)), "")
            out.append(Proposal(
                name=f"tell_{_slug(value)}_{_slug(items)}_total_from_{read}",
                description=f"When the user asks what they owe, read {read} and tell them the sum of the "
                f"{path_words(path)} over the {words(str(value))} {path_words(items)} it lists (not one of them, not "
                "every one).",
                roles={"read": read, "key": key},
                label_check=Check(applies_if=[CallRef(tool=read)], clauses=[CallMade(id="read", call=CallRef(
                    tool=read))]),
                label_args={"tool": None, "arg": None, "read": read, "sum": [read, items, leaf, where, value]},
                params={"field": path, "op": "sum", "label": path_words(path), "where_field": where,
                        "where_value": value, "other_value": other},
            ))
        if len(numeric) >= 2 and ctx.has_gt:
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
