"""Conditional request: the user's request depends on a fact of their record; read it, then do the branch it selects.

The user states a condition on one field of one of their records (`params.field`) and one write for each branch: "If
the status of my order #W1 is pending, I'd like to cancel pending order #W1; otherwise, I'd like to return the
delivered items of order #W1." A value of `params.values` selects the `write` role, one of `params.other_values` the
`alt` role. The user does not know which holds (the opening never says), so the agent must look the record up and
make the write the value selects. The two branches are balanced classes (`first` and `other`), so "always the first
branch" succeeds on about half the seeds; the other branch's write, both writes, or any other write zero the score;
the selected write without reading first earns a part. Bindings: `target`, `first` (the value selects `write`),
`value`, `value_words`.

Example episode (`trace/retail_cancel_if_pending_else_return`, seed 1, a delivered order):

    user:  Hi! My user id is isabella_lopez_4650. If the status of my order #W5831402 is pending, I'd like to cancel
           pending order #W5831402 (reason: no longer needed); otherwise, I'd like to return the delivered items of
           order #W5831402. For the item ids and payment method id, use the ones on my order.
    agent: get_order_details(order_id=#W5831402)  -> {..., "status": "delivered", ...}
    agent: Here is what I will do: return delivered order items for order id #W5831402 with {"item_ids":
           ["3788616824"], "payment_method_id": "gift_card_7711863"}. Do you confirm that I should proceed (yes/no)?
    user:  Yes, please go ahead.
    agent: return_delivered_order_items(order_id=#W5831402, item_ids=[3788616824], payment_method_id=gift_card_7711863)
    agent: Your order #W5831402 has status delivered, so I have done that. Is there anything else? ...

Labelling a real run: it applies when a user message states a conditional whose sentence names one of the two writes'
actions: an "if" clause with its other branch ("can you check if it's shipped yet? If not, I'd like to change it", the
two runs of tau2 retail task 42), or an "if" naming a branch value ("If the order is still pending, ...").
Where the source has expected actions, the branch it expects is the selected one: PRESENT when that write was made
and the other branch's was not; LACKING when the other branch's write was made (an `unwarranted_write`), in place of
the expected one or beside it. Without expected actions, the value the read returned selects the
branch: PRESENT when its write followed the read and the other branch's did not, LACKING when the other's was made.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from trace_envs.checks.clauses import CallMade, CallRef, Check, NoCall, Order
from trace_envs.language.sentences import sentences
from trace_envs.checks.trace import parse_result
from trace_envs.language.patterns import words_regex
from trace_envs.language.words import verb_synonyms
from trace_envs.families.base import FREE_TEXT_ARGS, Family, Label, Proposal, ProposalContext, rules_gate
from trace_envs.families.kit import GOODBYE, Kit
from trace_envs.families.registry import register_family
from trace_envs.runtime import Scenario
from trace_envs.runtime.phrases import path_words
from trace_envs.runtime.records import get_path
from trace_envs.runtime.scenario import UserRequest
from trace_envs.runtime.world import RecordEnv, ScenarioError, call, new_state
from trace_envs.trajectories.results import ResultIndex, flatten

FIRST_SHARE = 0.5
MIN_SUPPORT = 2  # writes seen after a read of each branch's value before a split counts as the runs' own
MAX_PER_READ = 3
MIN_CONDITIONAL_RUNS = 2  # one user's conditional is no recurring request
# A conditional as users write one: an "if" clause, then the other branch ("If not, ...", "otherwise", "or else").
# the clause that states the condition, as users word one: "if", "in case", "unless", "provided", "assuming", "should
# it be ..."
_IF = re.compile(r"\b(?:if|in case|unless|provided|assuming)\b|(?:^|[.!?]\s+)should (?:it|my|the|they|that)\b", re.I)
_ALTERNATIVE = re.compile(r"^\W*(?:if not|otherwise|else|if (?:it|that|they)(?:'s| is| are) not|if (?:it|that) isn't)\b"
                          r"|[,;]\s*(?:otherwise|or else|else)\b", re.I)
# "if" in phrases that put no condition on a record ("if that's possible", "let me know if", "what if").
_NO_CONDITION = re.compile(r"\bif (?:that['’]?s|that is|it['’]?s|it is) (?:possible|okay|ok|alright|all right)\b|\bif possible\b"
                           r"|\bif (?:that|it) helps\b|\b(?:know|what|not sure|wonder(?:ing)?|even|as|see|check) if\b",
                           re.I)


class ConditionalParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    field: str = Field(description="Record field the user's condition is on (a dotted path).")
    values: list[Any] = Field(min_length=1, description="Values of `field` that select the `write` role's write.")
    other_values: list[Any] = Field(min_length=1, description="Values that select the `alt` role's write.")

    @model_validator(mode="after")
    def _disjoint(self) -> "ConditionalParams":
        if set(map(str, self.values)) & set(map(str, self.other_values)):
            raise ValueError("values and other_values must not share a value: the fact must select one branch")
        return self


def value_words(values: list[Any]) -> str:
    return " or ".join(str(v).replace("_", " ") for v in values)


class ConditionalEnv(RecordEnv):
    def build_scenario(self, rng) -> Scenario:
        spec = self.SPEC
        kit = Kit(spec, rng)
        key, field = kit.key, str(spec.params["field"])
        write, alt = spec.roles["write"], spec.roles["alt"]
        first = self.class_draw < FIRST_SHARE
        picked = list(spec.params["values"] if first else spec.params["other_values"])
        record = kit.source.draw(lambda r: get_path(r, field)[0] and get_path(r, field)[1] in picked)
        if record is None:
            raise ScenarioError(f"no real record has {field} in {picked}")
        value = get_path(record, field)[1]
        others = kit.source.records(spec.knobs.distractors)
        target = record[key]
        kit.knows(target)
        chosen, skipped = (write, alt) if first else (alt, write)
        args = {t: branch_args(kit, t, record) for t in (write, alt)}
        opening = (f"{kit.greeting()} If the {path_words(field)} of my {kit.noun} {target} is "
                   f"{value_words(spec.params['values'])}, I'd like to {_branch(kit, write, target, args[write])}; "
                   f"otherwise, I'd like to {_branch(kit, alt, target, args[alt])}.")
        hidden = sorted({a for t in (write, alt) for a in args[t][0] if a != key and a not in args[t][1]})
        if hidden:
            opening += f" For the {' and '.join(a.replace('_', ' ') for a in hidden)}, use the ones on my {kit.noun}."
        read = kit.read_call(target)
        steps = kit.write_steps(chosen, target, args[chosen][0])
        wrong = kit.write_steps(skipped, target, args[skipped][0])
        said = f"Your {kit.noun} {target} has {path_words(field)} {str(value).replace('_', ' ')}, so I have done that."
        done = f"{said} {GOODBYE}"
        other_target = others[0][key] if others else kit.source.fresh_id()
        other_args = dict(args[chosen][0], **{key: other_target})
        ask = (f"Your {kit.noun} {target} has {path_words(field)} {str(value).replace('_', ' ')}. Would you like me "
               f"to {kit.phrase(write, target)} or to {kit.phrase(alt, target)}?")
        oracle = [read, *steps, done]
        mutants = {
            "drop_required_call": [*steps, done],
            "swap_calls": [*steps, read, done],
            "wrong_argument": [read, *kit.write_steps(chosen, other_target, other_args), done],
            "forbidden_extra_call": [read, *steps, call(skipped, **args[skipped][0]), done],
            "text_only": [done],
            "other_branch": [read, *wrong, done],
            "both_writes": [read, *wrong, *steps, done],
            "read_then_ask": [read, ask, f"Please tell me which one you want, and I will do it. {GOODBYE}"],
        }
        records = {target: record, **{r[key]: r for r in others}}
        return Scenario(
            state=new_state(records),
            bindings={"target": target, "first": first, "value": value,
                      "value_words": str(value).replace("_", " ")},
            opening=opening,
            facts=kit.facts,
            # The user asks for both branches under one condition and cannot say which holds.
            requests=[UserRequest(kind="write", tool=chosen, target=target,
                                  phrase=f"{kit.phrase(write, target)} if its {path_words(field)} is "
                                  f"{value_words(spec.params['values'])}, or else {kit.phrase(alt, target)}")],
            oracle=oracle,
            mutants=mutants,
            klass="first" if first else "other",
        )


def branch_args(kit: Kit, tool: str, record: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The write's arguments on `record` and the ones the user states. A list of ids named after a list of the
    record (`item_ids` and `items[*].item_id`) is every id of that list: "return the items of my order"."""
    args, stated = kit.write_args(tool, record)
    for arg in list(stated):
        ids = record_ids(arg, record)
        if ids:
            args[arg] = ids
            del stated[arg]
    return args, stated


def record_ids(arg: str, record: dict[str, Any]) -> list[str]:
    """`item_ids` -> the `item_id` of every dict in the record's `items` list (empty when there is no such list)."""
    if not arg.endswith("_ids"):
        return []
    one = arg[:-1]
    items = record.get(one[: -len("_id")] + "s")
    if not isinstance(items, list):
        return []
    return [str(i[one]) for i in items if isinstance(i, dict) and isinstance(i.get(one), (str, int))]


def _branch(kit: Kit, tool: str, target: str, args: tuple[dict[str, Any], dict[str, Any]]) -> str:
    stated = args[1]
    details = ", ".join(f"{k.replace('_', ' ')}: {v}" for k, v in stated.items())
    return kit.phrase(tool, target) + (f" ({details})" if details else "")


class ConditionalRequest(Family):
    name = "conditional_request"
    summary = ("When the user's request depends on a fact of their record, read the record and make the write the "
               "fact selects, never the other branch's.")
    roles = ("read", "write", "alt", "key")
    params = ConditionalParams
    env_class = ConditionalEnv
    teaches = ("unwarranted_write",)

    def check(self, roles: dict[str, str], params: dict[str, Any], requests: int = 2) -> Check:
        key, read, write, alt = roles["key"], roles["read"], roles["write"], roles["alt"]
        target = {key: {"$var": "target"}}
        read_target = CallRef(tool=read, args=target)
        write_target, alt_target = CallRef(tool=write, args=target), CallRef(tool=alt, args=target)
        return Check(clauses=[
            CallMade(id="write_made", weight=2, when="first", call=write_target,
                     description=f"{write} on the record, the branch its value selects"),
            Order(id="write_after_read", weight=1, when="first", requires=["write_made"], first=read_target,
                  then=write_target, join=[key], description=f"read the record with {read} before deciding"),
            CallMade(id="alt_made", weight=2, when="!first", call=alt_target,
                     description=f"{alt} on the record, the branch its value selects"),
            Order(id="alt_after_read", weight=1, when="!first", requires=["alt_made"], first=read_target,
                  then=alt_target, join=[key], description=f"read the record with {read} before deciding"),
            NoCall(id="no_alt", when="first", penalty=True, call=CallRef(tool=alt),
                   description=f"not {alt}: the record's value selects the other branch"),
            NoCall(id="no_write", when="!first", penalty=True, call=CallRef(tool=write),
                   description=f"not {write}: the record's value selects the other branch"),
            NoCall(id="no_other_write", penalty=True, call=CallRef(kind="write"), unless=[write_target, alt_target],
                   description="no write on another record, nor any write the user did not ask for"),
        ])

    def label(self, view, check: Check, args: dict[str, Any]) -> Label:
        read, write, alt, key = args.get("read"), args.get("write"), args.get("alt"), args.get("key")
        values = [*(args.get("values") or []), *(args.get("other_values") or [])]
        if not (read and write and alt) or not states_condition(view.run, [write, alt], values):
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
                                args.get("other_values") or [])

    def portable_check(self, roles: dict[str, str]) -> tuple[Check, dict[str, Any]] | None:
        r, w, alt, k = roles.get("read"), roles.get("write"), roles.get("alt"), roles.get("key")
        if not (r and w and alt and k):
            return None
        return _read_before_branch(r, w, alt, k), {"read": r, "write": w, "alt": alt, "key": k}

    def propose(self, ctx: ProposalContext) -> list[Proposal]:
        out = []
        for r in ctx.reads:
            found = []
            for k in ctx.args(r):
                if k in FREE_TEXT_ARGS:
                    continue
                after = sorted(w for w in ctx.writes if ctx.pairs[(r, w, k)])
                for i, w in enumerate(after):
                    for alt in after[i + 1:]:
                        split = branch_split(ctx.index, r, w, alt, k, ctx.rules)
                        if split is not None and _asked(ctx.runs, w, alt, [*split[1], *split[2]]):
                            found.append((split[3], w, alt, k, split))
            for _, w, alt, k, (field, values, others, _) in sorted(found, key=lambda f: (-f[0], f[1:4]))[:MAX_PER_READ]:
                params = {"field": field, "values": values, "other_values": others}
                out.append(Proposal(
                    name=f"{_short(w)}_if_{_slug(values[0])}_else_{_short(alt)}",
                    description=f"When the user asks to {w.replace('_', ' ')} if the {path_words(field)} of their "
                    f"record is {value_words(values)} and to {alt.replace('_', ' ')} otherwise, read it with {r} "
                    "first and make only the write its value selects.",
                    roles={"read": r, "write": w, "alt": alt, "key": k},
                    label_check=_read_before_branch(r, w, alt, k),
                    label_args={"read": r, "write": w, "alt": alt, "key": k, **params},
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


def _asked(runs: list[Any], write: str, alt: str, values: list[str]) -> bool:
    """Whether users of at least MIN_CONDITIONAL_RUNS runs state a conditional over the two writes, and runs that
    state one make each of them (a write no conditional run makes is no branch of one)."""
    n, made = 0, set()
    for run in runs:
        if states_condition(run, [write, alt], values):
            n += 1
            made |= {c.name for c in run.agent_calls} & {write, alt}
    return n >= MIN_CONDITIONAL_RUNS and made == {write, alt}


def _allowed(rules: Any, write: str, index: ResultIndex, read: str, field: str, seen: Counter) -> list[str]:
    gate = rules_gate(rules, write, index.enum_fields(read)) if rules is not None else None
    values = sorted(map(str, seen))
    return [v for v in values if v in gate["allowed"]] if gate and gate["field"] == field else values


def states_condition(run: Any, writes: list[str], values: list[Any] = ()) -> bool:
    """Whether a user message of `run` states a conditional request over a record fact: a sentence naming the action
    of one of `writes` either gives the other branch ("If not, I'd like to change it", "..., otherwise return it")
    after an "if" clause in it or the sentence before ("can you check if it's shipped yet?" counts as that clause),
    or is an "if" sentence naming one of the branch `values` ("If my line is suspended, restore it")."""
    actions = words_regex(tuple(v for w in writes for v in verb_synonyms(w)))
    named = re.compile(r"\b(?:" + "|".join(re.escape(str(v).replace("_", " ")) for v in values) + r")\b", re.I) \
        if values else None
    for m in run.messages:
        text = m.get("content") if m.get("role") == "user" else None
        if not isinstance(text, str) or not _IF.search(text):
            continue
        said = sentences(text)
        for i, s in enumerate(said):
            if not actions.search(s):
                continue
            plain = _NO_CONDITION.sub(" ", s)
            alternative = _ALTERNATIVE.search(s)
            if alternative and (_IF.search(plain[: alternative.start()]) or (i and _IF.search(said[i - 1]))):
                return True
            if named is not None and _IF.search(plain) and named.search(s.replace("_", " ")):
                return True
    return False


def _label_from_read(view: Any, read: str, write: str, alt: str, key: str | None, field: str | None,
                     values: list[Any], others: list[Any]) -> Label:
    """Without expected actions: the last value of `field` the read returned before the first of the two writes
    selects the branch."""
    if not field:
        return "NA"
    seen: Any = None
    made: list[str] = []
    for c in view.run.agent_calls:
        if c.error:
            continue
        if c.name == read and not made:
            parsed = parse_result(c.result) if c.result else None
            flat = flatten(parsed) if isinstance(parsed, dict) else {}
            seen = flat.get(field, seen)
        elif c.name in (write, alt):
            made.append(c.name)
    if seen is None or not made:
        return "NA"
    chosen = write if str(seen) in map(str, values) else alt if str(seen) in map(str, others) else None
    if chosen is None:
        return "NA"
    skipped = alt if chosen == write else write
    if skipped in made:
        return "LACKING"
    return "PRESENT" if chosen in made else "NA"


def _read_before_branch(read: str, write: str, alt: str, key: str) -> Check:
    return Check(
        applies_if=[CallRef(tool=write), CallRef(tool=alt)],
        clauses=[Order(id="read_before_branch", first=CallRef(tool=read), then=CallRef(kind="write"), join=[key])],
    )


def _short(tool: str) -> str:
    """`cancel_pending_order` -> `cancel_order`, `return_delivered_order_items` -> `return_items`: verb and object."""
    words = tool.split("_")
    return "_".join(words[:1] + words[-1:]) if len(words) > 2 else tool


def _slug(value: Any) -> str:
    return re.sub(r"[^a-z0-9]+", "_", str(value).lower()).strip("_")[:20] or "value"


register_family(ConditionalRequest())
