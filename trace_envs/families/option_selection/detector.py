"""Detector of option_selection: how the miner finds it in real runs (see task.py for the env)."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from trace_envs.checks.clauses import CallMade, CallRef, Check
from trace_envs.checks.run_view import RunView
from trace_envs.language.values import number_tokens, text_mentions
from trace_envs.checks.trace import read_result
from trace_envs.families.option_selection.task import CLOCK, as_float, keyed_records, options_of
from trace_envs.mining import departures
from trace_envs.mining.detector import Detector, Label, Proposal, ProposalContext, register_detector
from trace_envs.runtime.phrases import path_words
from trace_envs.runtime.world import listing

MIN_LINKS = 2  # writes taking a searched option's id, across the runs, before the family proposes the pair
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}")
_COST_WORDS = ("price", "cost", "fare", "fee", "amount", "total")
_WINDOW_WORDS = ("depart", "time", "start", "date", "rating", "duration")


def _leaves(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [x for v in value.values() for x in _leaves(v)]
    if isinstance(value, list):
        return [x for v in value for x in _leaves(v)]
    return [value] if isinstance(value, (str, int)) and not isinstance(value, bool) else []


def listed_ids(result: Any, field: str, depth: int = 0) -> list[Any]:
    """Every value of `field` in a search result's records, however nested (a one-stop search lists pairs)."""
    if depth > 3:
        return []
    if isinstance(result, dict) and field not in result:  # a listing keyed by id, or a record holding one
        keyed = _keyed_listing(result)
        if keyed:
            return listed_ids(keyed, field, depth + 1)
    if isinstance(result, dict):
        value = result.get(field)
        return [value] if isinstance(value, (str, int)) and not isinstance(value, bool) else []
    if isinstance(result, list):
        return [v for item in result for v in listed_ids(item, field, depth + 1)]
    return []


def option_links(runs: list[Any], profile: Any) -> tuple[Counter, dict[str, list[Any]]]:
    """Where writes take an option a search returned, across the runs: (search, write, arg, option id field) -> how
    many writes did, and each search tool's real results (the lists it returned)."""
    kinds = {n: t.kind for n, t in profile.tools.items()}
    links: Counter = Counter()
    results: dict[str, list[Any]] = {}
    for run in runs:
        seen: dict[Any, tuple[str, str]] = {}  # option id value -> (search tool, field)
        for c in run.agent_calls:
            if c.error:
                continue
            kind = kinds.get(c.name)
            if kind == "read":
                result = read_result(c.result)
                # a search lists its options as a list, or as a dict keyed by their ids (a product's variants)
                if not (isinstance(result, list) and result) and not _keyed_listing(result):
                    continue
                if len(results.setdefault(c.name, [])) < 50:
                    results[c.name].append(result)
                options = _records(result)
                for field in _identifying(options):
                    for option in options:
                        seen[option[field]] = (c.name, field)
            elif kind == "write":
                for arg, value in c.arguments.items():
                    for leaf in {x for x in _leaves(value) if x in seen}:
                        links[(seen[leaf][0], c.name, arg, seen[leaf][1])] += 1
    return links, results


def _identifying(options: list[dict[str, Any]]) -> list[str]:
    """The fields that tell a result's options apart: id-like strings (with a digit, not a time or a date) that vary
    across them (a one-stop search repeats a leg in several pairs, so distinct is too strict)."""
    if len(options) < 2:
        return []
    fields = set.intersection(*(set(o) for o in options))
    return [f for f in sorted(fields)
            if all(isinstance(o[f], str) and any(ch.isdigit() for ch in o[f]) and not _DATE.match(o[f])
                   and not CLOCK.match(o[f]) for o in options)
            and len({o[f] for o in options}) > 1]


def _keyed_listing(result: Any) -> list[dict[str, Any]] | None:
    """The records of a result keyed by their ids, itself or in one of its fields (a product's `variants`)."""
    if not isinstance(result, dict):
        return None
    return keyed_records(result) or next((r for v in result.values() if (r := keyed_records(v))), None)


def _records(result: Any, depth: int = 0) -> list[dict[str, Any]]:
    if isinstance(result, dict):
        return _keyed_listing(result) or [result]
    if isinstance(result, list) and depth < 3:
        return [r for item in result for r in _records(item, depth + 1)]
    return []


def option_params(results: list[Any], field: str, write: Any) -> dict[str, Any] | None:
    """Params read off real search results: the cost (a numeric path named like a price, its last segment a
    `{arg}` placeholder when it takes the values of a write argument's examples) and the bounded field (a clock
    time, else another numeric path). None when the options carry no such pair."""
    options = [o for r in results for o in options_of(r, field)]
    paths: dict[str, set] = {}
    for option in options:
        for path, value in _flat(option).items():
            paths.setdefault(path, set()).add(value)
    numeric = [p for p, vs in paths.items() if len(vs) > 2 and all(as_float(v) is not None for v in vs)]
    clocks = [p for p, vs in paths.items() if len(vs) > 2 and all(isinstance(v, str) and CLOCK.match(v) for v in vs)]
    priced = [p for p in numeric if any(w in p.lower() for w in _COST_WORDS)] or numeric
    if not priced:
        return None
    cost = sorted(priced, key=lambda p: (-len(paths[p]), p))[0]
    head, _, last = cost.rpartition(".")
    examples = getattr(write, "examples", {}) or {}
    for arg, values in examples.items():
        if head and last in {str(v) for v in values}:
            cost = f"{head}.{{{arg}}}"
            break
    others = [p for p in numeric if not p.startswith(head + ".") and p != cost] if head else \
        [p for p in numeric if p != cost]
    rank = lambda p: (next((i for i, w in enumerate(_WINDOW_WORDS) if w in p.lower()), len(_WINDOW_WORDS)), p)  # noqa: E731
    windows = sorted(clocks, key=rank) or sorted(others, key=rank)
    if not windows:
        return None
    label = head.rsplit(".", 1)[-1] if "{" in cost else cost
    return {"option_id": field, "cost_field": cost, "window_field": windows[0],
            "cost_label": path_words(label[:-1] if label.endswith("s") and "{" in cost else label),
            "window_label": path_words(windows[0])}


def chosen_evidence(runs: list[Any], kinds: dict[str, str], searches: set[str], write: str, arg: str, field: str
                    ) -> tuple[int, Counter]:
    """What the options passed runs chose have that the other listed options lack, as (choices seen, counts):
    `("match", f)` the chosen option's value of field f is in the user's words and another option's differs (the
    branch the user named); `("above", f)` / `("below", f)` a number the user said bounds f, the chosen option inside
    and another outside (at least 4 seats); `("lowest", f)` the chosen option has the lowest f (the cheapest)."""
    counts: Counter = Counter()
    total = 0
    for run in runs:
        if not run.success:
            continue
        listed: dict[Any, list[dict[str, Any]]] = {}
        for c in run.agent_calls:
            if c.error:
                continue
            if c.name in searches:
                options = [_flat(o) for o in options_of(read_result(c.result), field)]
                for o in options:
                    listed[o[field]] = options
            elif c.name == write and kinds.get(c.name) == "write":
                picked = [v for v in _leaves(c.arguments.get(arg)) if v in listed]
                if not picked:
                    continue
                options = listed[picked[0]]
                chosen = next(o for o in options if o[field] == picked[0])
                said = " ".join(m["content"] for m in run.messages[: c.message_index]
                                if m.get("role") == "user" and isinstance(m.get("content"), str))
                numbers = [n for _, _, n in number_tokens(said)]
                total += 1
                named: set[str] = set()
                for f, v in chosen.items():
                    if f == field or len(options) < 2:
                        continue
                    others = [o.get(f) for o in options if o is not chosen]
                    if isinstance(v, str) and not CLOCK.match(v) and text_mentions(v, said) and any(x != v for x in others):
                        counts[("match", f)] += 1
                        if "." in f:
                            named.add(f.split(".", 1)[0])
                    if isinstance(v, bool) and any(isinstance(x, bool) and x != v for x in others):
                        counts[("require", f, v)] += 1  # chosen with this value while another listed had the other
                    num = as_float(v)
                    if num is None or not all(as_float(x) is not None for x in others):
                        continue
                    if any(num >= n and any(as_float(x) < n for x in others) for n in numbers):
                        counts[("above", f)] += 1
                    if any(num <= n and any(as_float(x) > n for x in others) for n in numbers):
                        counts[("below", f)] += 1
                    if all(num < as_float(x) for x in others):
                        counts[("lowest", f)] += 1
                for group in named:  # the values the user named lie in one nested record (a variant's options)
                    counts[("group", group)] += 1
    return total, counts


def evidence_params(total: int, counts: Counter, field: str, share: float = 0.6) -> dict[str, Any] | None:
    """Option-selection params from what the chosen options had (`chosen_evidence`): each constraint most choices
    show (at least `share` of them); None when none does. Values named across several fields of one nested record (a
    variant's colour in one run, its capacity in another) make a `match_group` when the group is named more often than
    any one of its fields; a flag every chosen option had while another listed option lacked it, in most choices and
    against it in none, makes a requirement (`require_field`, `require_value`: an unavailable variant is no choice)."""
    if total < MIN_LINKS:
        return None

    def best(kind: str) -> str | None:
        found = [(n, key[1]) for key, n in counts.items() if key[0] == kind and len(key) == 2 and n >= share * total]
        return max(found)[1] if found else None

    match, above, below, lowest = best("match"), best("above"), best("below"), best("lowest")
    group = best("group")
    if group and (match is None or counts[("group", group)] > counts[("match", match)]):
        match = None if match and match.startswith(group + ".") else match
    else:
        group = None
    window = above or below
    if lowest == window:
        lowest = None
    params: dict[str, Any] = {"option_id": field}
    if match:
        params.update(match_field=match, match_label=path_words(match))
    if group:
        params.update(match_group=group)
    if window:
        params.update(window_field=window, window_side="above" if above else "below", window_label=path_words(window))
    if lowest and not window:
        params.update(cost_field=lowest, cost_label=path_words(lowest))
    if len(params) == 1:
        return None
    required = [(n, key[1], key[2]) for key, n in counts.items() if key[0] == "require" and n >= share * total
                and not counts[("require", key[1], not key[2])]]
    if required:
        _, flag, value = max(required)
        params.update(require_field=flag, require_value=value)
    return params


def _flat(option: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in option.items():
        if isinstance(v, dict) and not prefix:
            out.update(_flat(v, f"{k}."))
        elif isinstance(v, (str, int, float)):  # flags too (available): a requirement the chosen options met
            out[prefix + k] = v
    return out


def held_share(runs: list[Any], kinds: dict[str, str], write: str, arg: str, key: str) -> float:
    """The share of the ids `arg` of `write` passed that the written record itself held when last read (the order's
    own item that a new variant replaces, not an option chosen): an earlier read called with the write's `key`
    value returned them. 0 when the write never passed any."""
    held = total = 0
    for run in runs:
        reads: dict[Any, set[Any]] = {}
        for c in run.agent_calls:
            if c.error:
                continue
            if kinds.get(c.name) == "read" and isinstance(c.arguments.get(key), (str, int)):
                reads[c.arguments[key]] = set(_leaves(read_result(c.result)))
            elif c.name == write and kinds.get(c.name) == "write":
                for v in _leaves(c.arguments.get(arg)):
                    total += 1
                    held += v in reads.get(c.arguments.get(key), ())
    return held / total if total else 0.0


def _write_made(write: str) -> Check:
    return Check(applies_if=[CallRef(tool=write)], clauses=[CallMade(id="write_made", call=CallRef(tool=write))])


class OptionSelectionDetector(Detector):
    task = "option_selection"
    teaches = ("other_option",)

    def label(self, view: RunView, check: Check, args: dict[str, Any]) -> Label:
        """From the run's departures: LACKING when the write took another option an earlier result listed for the
        candidate's argument (any argument of any write for the candidate over every write: the flight, the payment
        method); PRESENT when the write matched. Without them: PRESENT when every
        option the run's writes took from its searches is one the ground truth's write chose, LACKING when a write
        took another searched option; NA without ground truth or such a write."""
        write, arg, field = args.get("write") or args["tool"], args["arg"], args["field"]
        searches = set(args.get("searches") or [args["search"]])
        # one write's candidate counts another option for its own argument only (a variant, not the order or the
        # payment method); the candidate over every write counts any
        any_write = bool(args.get("any_write"))
        by_gt = departures.arg_kind(view, None if any_write else write, None if any_write else arg, ("other_option",))
        if by_gt is not None:
            return by_gt
        if view.gt_steps is None:
            return "NA"
        wanted = {v for s in view.gt_steps if s.name == write for v in _leaves(s.arguments.get(arg))}
        if not wanted:
            return "NA"
        searched: set[Any] = set()
        picked: set[Any] = set()
        for step in view.trace.steps:
            if step.kind != "call" or step.error:
                continue
            if step.name in searches:
                searched |= set(listed_ids(read_result(step.result), field))
            elif step.name == write:
                picked |= set(_leaves(step.arguments.get(arg))) & searched
        if not picked:
            return "NA"
        return "PRESENT" if picked <= wanted else "LACKING"

    def portable_check(self, roles: dict[str, str]) -> tuple[Check, dict[str, Any]] | None:
        return None  # the labeler needs the option's id field, which only the runs tell

    def propose(self, ctx: ProposalContext) -> list[Proposal]:
        if not ctx.has_gt:
            return []
        links, results = option_links(ctx.runs, ctx.profile)
        grouped: dict[tuple[str, str, str], Counter] = {}
        for (search, write, arg, field), count in links.items():
            grouped.setdefault((write, arg, field), Counter())[search] += count
        # Two arguments of one write taking ids of the same listing (tau2 retail's item_ids and new_item_ids, both
        # among a product's variants): the one the written record already held is the item replaced, no choice; the
        # other carries the option chosen, and the env binds the replaced one to the record's item.
        replaced: dict[tuple[str, str], str] = {}
        for (write, arg, field) in grouped:
            keys = [(n, k) for (_, w, k), n in ctx.pairs.items() if w == write and k != arg]
            if not keys:
                continue
            key = max(keys)[1]
            shares = {a: held_share(ctx.runs, ctx.profile.kinds, write, a, key)
                      for (w, a, f) in grouped if w == write and f == field}
            owned = [a for a, share in shares.items() if share >= 0.5]
            if len(owned) == 1 and len(shares) == 2 and owned[0] != arg:
                replaced[(write, arg)] = owned[0]
        out = []
        for (write, arg, field), searches in sorted(grouped.items(), key=lambda kv: (-sum(kv[1].values()), kv[0])):
            if sum(searches.values()) < MIN_LINKS or write not in ctx.writes or not ctx.gt_counts[write]:
                continue
            if (write, arg) not in replaced and any(w == write and r == arg for (w, _), r in replaced.items()):
                continue  # the record's own item, replaced by the option another argument carries
            # The env's search is the one whose results list options as records; the labeler reads them all.
            flat = [s for s, _ in searches.most_common() if any(options_of(r, field) for r in results.get(s, []))]
            params = option_params(results[flat[0]], field, ctx.profile.tools[write]) if flat else None
            if params is None and flat:  # no price and time by their names: what the chosen options had
                params = evidence_params(*chosen_evidence(ctx.runs, ctx.profile.kinds, set(searches), write, arg,
                                                          field), field)
            # The record the write changes is looked up with another read than the search (the order, not the
            # product's variants): the read most often called on the write's key before it; a write addressed by
            # what the user states (a member id) has none.
            pairs = [(n, r, k) for (r, w, k), n in ctx.pairs.items() if w == write and r not in searches and k != arg]
            key = max(pairs)[2] if pairs else next((a for a in ctx.args(write) if a != arg), None)
            if params is None or key is None:
                continue
            if (write, arg) in replaced:
                params = {**params, "replaces": replaced[(write, arg)]}
            roles = {"write": write, "key": key, "search": flat[0], "arg": arg}
            if pairs:
                roles["read"] = max(pairs)[1]
            out.append(Proposal(
                name=f"pick_{field}_for_{write}",
                description=f"Among the options {listing(sorted(searches))} return(s), pass to {write} (argument "
                f"{arg}) the one that meets every constraint the user stated (cheapest, a time window, ...), not the "
                "first or any other.",
                roles=roles,
                label_check=_write_made(write),
                label_args={"tool": write, "arg": arg, "search": flat[0], "searches": sorted(searches), "field": field},
                params=params,
                results={flat[0]: results[flat[0]][:50]},
            ))
        if len(out) >= 2:
            # Picking another listed option (a flight, a payment method, an item) fails on whichever write the task
            # needs: where several writes take options, one candidate over every write, with the env of the most
            # linked one.
            top = out[0]
            out.append(Proposal(
                name="pick_listed_options",
                description="Among the options earlier results list (flights, payment methods, items), pass to every "
                "write the one that meets the user's constraints and the policy, not the first or any other.",
                roles=dict(top.roles), label_check=top.label_check,
                label_args={**top.label_args, "tool": None, "write": top.label_args["tool"], "any_write": True},
                params=top.params, results=top.results, extra_tools=list(ctx.writes),
            ))
        return out

    def target_tools(self, roles: dict[str, str]) -> list[str]:
        return [t for t in (roles.get("search"), roles.get("write")) if t]


register_detector(OptionSelectionDetector())
