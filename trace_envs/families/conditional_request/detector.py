"""Detector of conditional_request: how the miner finds it in real runs (see task.py for the env)."""

from __future__ import annotations

import re
from functools import lru_cache
from collections import Counter
from typing import Any

from trace_envs.checks.attribution import FREE_TEXT_ARGS
from trace_envs.checks.clauses import CallRef, Check, Order
from trace_envs.language.sentences import sentences
from trace_envs.checks.trace import read_result
from trace_envs.language.patterns import words_regex
from trace_envs.language.words import tool_words, verb_synonyms
from trace_envs.families.conditional_request.task import value_words
from trace_envs.mining.detector import Detector, Label, Proposal, ProposalContext, register_detector
from trace_envs.mining.gates import rules_gate
from trace_envs.runtime.phrases import path_words
from trace_envs.trajectories.kinds import kind_from_name
from trace_envs.trajectories.results import ResultIndex, flatten, listed_record

MIN_SUPPORT = 2  # writes seen after a read of each branch's value before a split counts as the runs' own
MAX_PER_READ = 3
MIN_CONDITIONAL_RUNS = 2  # one user's conditional is no recurring request
# A conditional as users write one: an "if" clause, then the other branch ("If not, ...", "otherwise", "or else").
# the clause that states the condition, as users word one: "if", "in case", "unless", "provided", "assuming", "should
# it be ..."
_IF = re.compile(r"\b(?:if|in case|unless|provided|assuming)\b|(?:^|[.!?]\s+)should (?:it|my|the|they|that)\b", re.I)
_ALTERNATIVE = re.compile(r"^\W*(?:if not|otherwise|else|if (?:it|that|they)(?:'s| is| are) not|if (?:it|that) isn't)\b"
                          r"|[,;]\s*(?:otherwise|or else|else|if not|if there(?:'s| is) not?"
                          r"|if (?:it|that|they)(?:'s| is| are) not|if (?:it|that) isn't|if they aren't)\b", re.I)
# "if" in phrases that put no condition on a record ("if that's possible", "let me know if", "what if").
_NO_CONDITION = re.compile(r"\bif (?:that['’]?s|that is|it['’]?s|it is) (?:possible|okay|ok|alright|all right)\b|\bif possible\b"
                           r"|\bif (?:that|it) helps\b|\b(?:know|what|not sure|wonder(?:ing)?|even|as|see|check) if\b",
                           re.I)


def branch_split(index: ResultIndex, read: str, write: str, alt: str, key: str, rules: Any = None
                 ) -> tuple[str, list[str], list[str], int] | None:
    """The enum field of `read`'s records whose values before `write` and before `alt` (in passed runs) never
    overlap: (field, values before `write`, values before `alt`, support), the best supported field; None when no
    field splits the two writes with at least MIN_SUPPORT writes on each side. A value the domain's `rules` forbid
    the write on is dropped: seen before it, it was a failed attempt (a cancel of a processed order)."""
    best = None
    for path in sorted(index.enum_fields(read)):
        a = index.before_write.get((read, write, key), {}).get(path, Counter())
        b = index.before_write.get((read, alt, key), {}).get(path, Counter())
        if sum(a.values()) < MIN_SUPPORT or sum(b.values()) < MIN_SUPPORT or set(a) & set(b):
            continue
        values, others = _allowed(rules, write, index, read, path, a), _allowed(rules, alt, index, read, path, b)
        support = min(sum(a.values()), sum(b.values()))
        if values and others and (best is None or support > best[3]):
            best = (path, values, others, support)
    return best


def named_value(run: Any, values: list[Any]) -> str | None:
    """The one value of `values` (a field's values) a user's "if" clause names: `locked` in "If its term phase is
    locked, drop it". Users who ask the same conditional name different values ("if it is locked", "if it is
    graded"), so the value that selects a branch is the run's own, not the domain's. None when no clause names
    exactly one."""
    words = {str(v): re.compile(r"(?<![\w/-])" + re.escape(str(v).replace("_", " ")) + r"(?![\w/-])", re.I)
             for v in values if isinstance(v, str) and v.strip()}
    found: set[str] = set()
    for m in run.messages:
        text = m.get("content") if m.get("role") == "user" else None
        if not isinstance(text, str):
            continue
        for s in sentences(text):
            plain = _NO_CONDITION.sub(" ", s.replace("_", " "))
            for cond in _IF.finditer(plain):
                clause = re.split(r"[,;:]", plain[cond.end():], maxsplit=1)[0]
                found |= {v for v, rx in words.items() if rx.search(clause)}
    return found.pop() if len(found) == 1 else None


def _branch_seen(run: Any, read: str, write: str, alt: str, field: str, lists: Any = None) -> tuple[Any, str | None]:
    """The value of `field` the last `read` before the first of the two writes returned, and that write. A listing
    read (`lists`: (list path, id field)) shows it on the listed record the write then took."""
    seen: Any = None
    listed: Any = None
    for c in run.agent_calls:
        if c.error:
            continue
        if c.name == read:
            parsed = read_result(c.result) if c.result else None
            if lists:
                listed = parsed
            else:
                seen = (flatten(parsed) if isinstance(parsed, dict) else {}).get(field, seen)
        elif c.name in (write, alt):
            if lists and listed is not None:
                seen = (listed_record(listed, lists, c.arguments) or {}).get(field)
            return seen, c.name
    return seen, None


def named_split(index: ResultIndex, runs: list[Any], read: str, write: str, alt: str, lists: Any = None
                ) -> tuple[str, list[str], list[str], int, bool] | None:
    """When users name the condition's value themselves: the enum field of `read`'s records whose value, in passed
    runs, equals the value the user named exactly when one of the writes was made (and differs when the other was):
    (field, [the value named most often], the field's other values, support, whether `alt` is the write a match
    selects). None when no field splits the passed runs that way with MIN_SUPPORT on each side and no exception."""
    best = None
    for path, seen_values in sorted(index.enum_fields(read).items()):
        values = [v for v in seen_values if isinstance(v, str)]
        if len(values) < 2:
            continue
        sides: Counter = Counter()
        named_by: Counter = Counter()
        for run in runs:
            if not run.success:
                continue
            named = named_value(run, values)
            seen, made = _branch_seen(run, read, write, alt, path, lists) if named else (None, None)
            if made is None or seen is None:
                continue
            sides[(str(seen) == named, made == write)] += 1
            named_by[named] += 1
        for match_is_write in (True, False):
            agree = sides[(True, match_is_write)], sides[(False, not match_is_write)]
            if min(agree) < MIN_SUPPORT or sides[(True, not match_is_write)] or sides[(False, match_is_write)]:
                continue
            top = sorted(named_by, key=lambda v: (-named_by[v], v))[0]
            others = sorted(v for v in values if v != top)
            if best is None or min(agree) > best[3]:
                best = (path, [top], others, min(agree), not match_is_write)
    return best


def _asked(runs: list[Any], write: str, alt: str, values: list[str], said: list[str] = ()) -> bool:
    """Whether users of at least MIN_CONDITIONAL_RUNS runs state a conditional over the two writes, and runs that
    state one make each of them (a write no conditional run makes is no branch of one)."""
    n, made = 0, set()
    for run in runs:
        if states_condition(run, [write, alt], values, said):
            n += 1
            made |= {c.name for c in run.agent_calls} & {write, alt}
    return n >= MIN_CONDITIONAL_RUNS and made == {write, alt}


def _allowed(rules: Any, write: str, index: ResultIndex, read: str, field: str, seen: Counter) -> list[Any]:
    gate = rules_gate(rules, write, index.enum_fields(read)) if rules is not None else None
    values = sorted(seen, key=str)
    return [v for v in values if str(v) in map(str, gate["allowed"])] if gate and gate["field"] == field else values


def action_words(tool: str) -> tuple[str, ...]:
    """Words a user asking for `tool`'s action uses: the synonyms of the verb its name holds, wherever it stands
    (`cancel_hold`, `hold_cancel`, `holds.cancel`); a name whose verb no list knows (`policies.pause`) offers all
    its words."""
    found = kind_from_name(tool)
    return verb_synonyms(found[1]) if found and found[0] == "write" else tuple(tool_words(tool))


@lru_cache(maxsize=256)  # asked of every run for each pair of writes
def _condition_patterns(writes: tuple[str, ...], values: tuple[str, ...], said: tuple[str, ...]
                        ) -> tuple[re.Pattern[str], re.Pattern[str] | None]:
    """The words of the writes' actions, and the branch values, as `states_condition` searches for them."""
    actions = words_regex(tuple(dict.fromkeys([*(v for w in writes for v in action_words(w)), *said])))
    named = re.compile(r"\b(?:" + "|".join(re.escape(v.replace("_", " ")) for v in values) + r")\b", re.I) \
        if values else None
    return actions, named


def states_condition(run: Any, writes: list[str], values: list[Any] = (), said: list[str] = ()) -> bool:
    """Whether a user message of `run` states a conditional request over a record fact: a sentence naming the action
    of one of `writes` (by its name's words, or by `said`: the words the domain's users ask for them with, "cancel"
    for `appointments.withdraw`, `ResultIndex.asked_words`) either gives the other branch ("If not, I'd like to change
    it", "..., otherwise return it") after an "if" clause in it or the sentence before ("can you check if it's shipped
    yet?" counts as that clause), or is an "if" sentence naming one of the branch `values` ("If my line is suspended,
    restore it")."""
    actions, named = _condition_patterns(tuple(writes), tuple(map(str, values)), tuple(said))
    for m in run.messages:
        text = m.get("content") if m.get("role") == "user" else None
        if not isinstance(text, str):
            continue
        for s, alternative, both, after_if, supposes in _if_sentences(text):
            # both branches in one sentence ("If there's an outage, a credit; if not, send a technician"): a request
            # by its two cases, whatever words the user has for the two actions
            if both:
                return True
            if not actions.search(s):
                continue
            if alternative and after_if:
                return True
            if named is not None and supposes and named.search(s.replace("_", " ")):
                return True
    return False


@lru_cache(maxsize=8192)  # every user turn is read once per pair of writes the miner tries
def _if_sentences(text: str) -> tuple[tuple[str, bool, bool, bool, bool], ...]:
    """What `states_condition` reads of each sentence of a turn that says "if" (none of one that does not), whatever
    the writes: (the sentence, whether it opens on the other branch, whether an "if" clause comes before that, whether
    the sentence before says "if", whether the sentence says "if" other than "if possible")."""
    if not _IF.search(text):
        return ()
    said = sentences(text)
    out = []
    for i, s in enumerate(said):
        plain = _NO_CONDITION.sub(" ", s)
        alternative = _ALTERNATIVE.search(s)
        out.append((s, alternative is not None, bool(alternative and _IF.search(plain[: alternative.start()])),
                    bool(i and _IF.search(said[i - 1])), bool(_IF.search(plain))))
    return tuple(out)


def _label_from_read(view: Any, read: str, write: str, alt: str, key: str | None, field: str | None,
                     values: list[Any], others: list[Any], lists: Any = None) -> Label:
    """Without expected actions: the last value of `field` the read returned before the first of the two writes
    selects the branch (for a listing read, `lists`, on the listed record the write took); a branch written without
    reading the fact first is LACKING."""
    if not field:
        return "NA"
    seen: Any = None
    listed: Any = None
    made: list[str] = []
    for c in view.run.agent_calls:
        if c.error:
            continue
        if c.name == read and not made:
            parsed = read_result(c.result) if c.result else None
            if lists:
                listed = parsed
            else:
                flat = flatten(parsed) if isinstance(parsed, dict) else {}
                seen = flat.get(field, seen)
        elif c.name in (write, alt):
            if lists and listed is not None and not made:
                seen = (listed_record(listed, lists, c.arguments) or {}).get(field)
            made.append(c.name)
    if not made:
        return "NA"
    if seen is None:  # a branch taken without looking the fact up: right or wrong, by chance
        return "LACKING"
    named = named_value(view.run, [*values, *others])
    if named is not None:  # the user named the value that selects `write`: any other selects `alt`
        values, others = [named], [v for v in [*values, *others] if v != named]
    chosen = write if str(seen) in map(str, values) else alt if str(seen) in map(str, others) else None
    if chosen is None:
        return "NA"
    skipped = alt if chosen == write else write
    if skipped in made:
        return "LACKING"
    return "PRESENT" if chosen in made else "NA"


def _read_before_branch(read: str, write: str, alt: str, key: str | None) -> Check:
    return Check(
        applies_if=[CallRef(tool=write), CallRef(tool=alt)],
        clauses=[Order(id="read_before_branch", first=CallRef(tool=read), then=CallRef(kind="write"),
                       join=[key] if key else [])],
    )


def _short(tool: str) -> str:
    """`cancel_pending_order` -> `cancel_order`, `return_delivered_order_items` -> `return_items`: verb and object."""
    words = re.split(r"[\W_]+", tool)
    return "_".join(words[:1] + words[-1:]) if len(words) > 2 else tool


def _said(ctx: ProposalContext, *writes: str) -> list[str]:
    """The words the domain's users ask for `writes` with (`ResultIndex.asked_words`)."""
    return list(dict.fromkeys(w for t in writes for w in ctx.index.asked_words.get(t, [])))


def _slug(value: Any) -> str:
    return re.sub(r"[^a-z0-9]+", "_", str(value).lower()).strip("_")[:20] or "value"


class ConditionalRequestDetector(Detector):
    task = "conditional_request"
    teaches = ("unwarranted_write",)
    # the other branch's write is also an unwarranted write, and one taken without reading the fact is a write made
    # before its read; the capability naming the fact and both branches says what went wrong
    refines = ("policy_refusal", "precondition_before_write")

    def label(self, view, check: Check, args: dict[str, Any]) -> Label:
        read, write, alt, key = args.get("read"), args.get("write"), args.get("alt"), args.get("key")
        values = [*(args.get("values") or []), *(args.get("other_values") or [])]
        if not (read and write and alt) or not states_condition(view.run, [write, alt], values, args.get("said", [])):
            return "NA"
        a = view.attribution
        if a is not None:
            expected = {g.name for g in view.run.ground_truth or [] if g.requestor == "agent"} & {write, alt}
            if len(expected) != 1:
                return "NA"  # the task expects neither branch (or both): no condition decided it
            chosen = expected.pop()
            skipped = alt if chosen == write else write
            if a.of("unwarranted_write", skipped):
                return "LACKING"  # the other branch, instead of the expected write or beside it (as the check zeroes)
            made = chosen in view.called and not a.of("missing_write", chosen)
            return "PRESENT" if made and skipped not in view.called else "NA"
        return _label_from_read(view, read, write, alt, key, args.get("field"), args.get("values") or [],
                                args.get("other_values") or [], args.get("lists"))

    def portable_check(self, roles: dict[str, str]) -> tuple[Check, dict[str, Any]] | None:
        r, w, alt, k = roles.get("read"), roles.get("write"), roles.get("alt"), roles.get("key")
        if not (r and w and alt and k):
            return None
        return _read_before_branch(r, w, alt, k), {"read": r, "write": w, "alt": alt, "key": k}

    def propose(self, ctx: ProposalContext) -> list[Proposal]:
        on_record = self._on_the_record(ctx)
        branches = {(p.roles["write"], p.roles["alt"]) for p in on_record}
        # a condition the write's own record decides needs no other lookup's fact
        return on_record + [p for p in self._on_a_fact(ctx) if (p.roles["write"], p.roles["alt"]) not in branches]

    def _on_a_fact(self, ctx: ProposalContext) -> list[Proposal]:
        """Conditions on a fact another lookup returns (an outage for the user's area), keyed by a value the user's
        record holds (its zip code): the passed runs read the record, pass that value to the lookup, and make the
        write the fact selects."""
        out = []
        for (r, f, a), paths in sorted(ctx.index.read_sources.items()):
            if f not in ctx.reads or r not in ctx.reads or a in FREE_TEXT_ARGS:
                continue
            link = paths.most_common(1)[0][0]
            for k in ctx.args(r):
                after = sorted(w for w in ctx.writes if ctx.pairs[(r, w, k)])
                found = []
                for i, w in enumerate(after):
                    for alt in after[i + 1:]:
                        split = branch_split(ctx.index, f, w, alt, "*", ctx.rules)
                        if split is not None and _asked(ctx.runs, w, alt, [*split[1], *split[2]], _said(ctx, w, alt)):
                            found.append((split[3], w, alt, split))
                for _, w, alt, (field, values, others, _) in sorted(found, key=lambda x: (-x[0], x[1:3]))[:MAX_PER_READ]:
                    params = {"field": field, "values": values, "other_values": others, "link": link}
                    roles = {"read": r, "write": w, "alt": alt, "key": k, "fact": f, "fact_key": a}
                    out.append(Proposal(
                        name=f"{_short(w)}_if_{_slug(path_words(field) if isinstance(values[0], bool) else values[0])}"
                             f"_else_{_short(alt)}",
                        description=f"When the user asks to {w.replace('_', ' ')} if the {path_words(field)} that "
                        f"{f} reports is {value_words(values)} and to {alt.replace('_', ' ')} otherwise, look it up "
                        f"with {f} (by the {path_words(link)} of their record) first and make only the write it "
                        "selects.",
                        roles=roles,
                        label_check=_read_before_branch(f, w, alt, None),
                        label_args={"read": f, "write": w, "alt": alt, "key": None, **params, "said": _said(ctx, w, alt)},
                        params=params,
                    ))
        return out

    def _on_the_record(self, ctx: ProposalContext) -> list[Proposal]:
        out = []
        for r in ctx.reads:
            found = []
            lists = ctx.index.listed.get(r)
            # a read listing the user's records also keys them by their own id (the writes' key)
            for k in [*ctx.args(r), *([lists[1]] if lists and lists[1] not in ctx.args(r) else [])]:
                if k in FREE_TEXT_ARGS:
                    continue
                by_list = lists if lists and k == lists[1] else None
                after = sorted(w for w in ctx.writes if ctx.pairs[(r, w, k)])
                for i, w in enumerate(after):
                    for alt in after[i + 1:]:
                        split = branch_split(ctx.index, r, w, alt, k, ctx.rules)
                        first, second = w, alt
                        if split is None:
                            named = named_split(ctx.index, ctx.runs, r, w, alt, by_list)
                            if named is not None:
                                split, (first, second) = named[:4], ((alt, w) if named[4] else (w, alt))
                        if split is not None and _asked(ctx.runs, w, alt, [*split[1], *split[2]], _said(ctx, w, alt)):
                            found.append((split[3], first, second, k, split))
            for _, w, alt, k, (field, values, others, _) in sorted(found, key=lambda f: (-f[0], f[1:4]))[:MAX_PER_READ]:
                params = {"field": field, "values": values, "other_values": others}
                out.append(Proposal(
                    name=f"{_short(w)}_if_{_slug(values[0])}_else_{_short(alt)}",
                    description=f"When the user asks to {w.replace('_', ' ')} if the {path_words(field)} of their "
                    f"record is {value_words(values)} and to {alt.replace('_', ' ')} otherwise, read it with {r} "
                    "first and make only the write its value selects.",
                    roles={"read": r, "write": w, "alt": alt, "key": k},
                    label_check=_read_before_branch(r, w, alt, k),
                    label_args={"read": r, "write": w, "alt": alt, "key": k, **params, "said": _said(ctx, w, alt),
                                **({"lists": list(lists)} if lists and k == lists[1] else {})},
                    params=params,
                ))
        return out

    def infer_params(self, roles: dict[str, str], index: ResultIndex, policy: str = "", rules: Any = None
                     ) -> tuple[dict[str, Any], str]:
        split = branch_split(index, roles.get("read", ""), roles.get("write", ""), roles.get("alt", ""),
                             roles.get("key", ""), rules)
        if split is None:
            return {}, ""
        field, values, others, _ = split
        return ({"field": field, "values": values, "other_values": others},
                f" The {path_words(field)} being {value_words(values)} selects {roles['write']}; "
                f"{value_words(others)} selects {roles['alt']}.")

    def target_tools(self, roles: dict[str, str]) -> list[str]:
        return [roles[k] for k in ("read", "write", "alt") if roles.get(k)]


register_detector(ConditionalRequestDetector())
