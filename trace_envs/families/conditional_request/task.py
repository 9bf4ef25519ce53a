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

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from trace_envs.checks.clauses import CallMade, CallRef, Check, NoCall, Order
from trace_envs.families.kit import GOODBYE, Kit
from trace_envs.families.task import Task, register_task
from trace_envs.language import hints
from trace_envs.runtime import Scenario
from trace_envs.runtime.phrases import path_words
from trace_envs.runtime.records import get_path, set_path
from trace_envs.runtime.scenario import ToolError, UserRequest
from trace_envs.runtime.world import RecordEnv, ScenarioError, call, new_state

FIRST_SHARE = 0.5


class ConditionalParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    field: str = Field(description="Record field the user's condition is on (a dotted path); of the `fact` role's "
                       "records when the spec has one (an outage report for the user's area), else of the record.")
    link: str | None = Field(default=None, description="With a `fact` role: the path of the user's record that holds "
                             "the fact's key (the account's zip code, which the outage lookup takes).")
    values: list[Any] = Field(min_length=1, description="Values of `field` that select the `write` role's write.")
    other_values: list[Any] = Field(min_length=1, description="Values that select the `alt` role's write.")

    @model_validator(mode="after")
    def _disjoint(self) -> "ConditionalParams":
        if set(map(str, self.values)) & set(map(str, self.other_values)):
            raise ValueError("values and other_values must not share a value: the fact must select one branch")
        return self


def value_words(values: list[Any]) -> str:
    return " or ".join(str(v).replace("_", " ") for v in values)


def fact_sentence(field: str, value: Any) -> str:
    """What a lookup showed, in words: `There is an outage`, `There is no outage`, `The status is pending`."""
    if isinstance(value, bool):
        return f"There is {_article(path_words(field)) if value else 'no'} {path_words(field)}"
    return f"The {path_words(field)} is {str(value).replace('_', ' ')}"


def _article(words: str) -> str:
    return "an" if words[:1] in "aeiou" else "a"


def condition_phrase(field: str, values: list[Any], where: str) -> str:
    """The user's condition in words: `if the status of my order #W1 is pending`; on a flag, whether it is set:
    `if there is an outage for my zip`, `if there is no outage for my zip`."""
    if values and all(isinstance(v, bool) for v in values):
        words = path_words(field)
        return f"if there is {_article(words) if values[0] else 'no'} {words} for {where}"
    return f"if the {path_words(field)} of {where} is {value_words(values)}"


class ConditionalEnv(RecordEnv):
    """Without a `fact` role the condition is on the user's record itself; with one, on a record another lookup
    returns (`fact`, keyed by `fact_key`), whose key the user's record holds at `params.link`."""

    def works(self, tool) -> bool:
        return tool.name == self.SPEC.roles.get("fact") or super().works(tool)

    def run_tool(self, name: str, args: dict[str, Any], state: dict[str, Any]) -> Any:
        roles = self.SPEC.roles
        if name != roles.get("fact"):
            return super().run_tool(name, args, state)
        value = args.get(roles["fact_key"])
        fact = state["facts"].get(str(value)) if isinstance(value, (str, int)) else None
        if fact is None:
            raise ToolError(f"{roles['fact_key']} {value!r} not found")
        return json.dumps(fact)

    def _fact(self, kit: Kit, record: dict[str, Any], picked: list[Any], rng) -> tuple[dict[str, Any], Any]:
        """A real record of the fact lookup with the condition's field set to one of `picked`, keyed by the value the
        user's record holds at `link`."""
        spec = self.SPEC
        fact_tool, fact_key, field = spec.tool(spec.roles["fact"]), spec.roles["fact_key"], str(spec.params["field"])
        pool = [r for r in fact_tool.result_examples if isinstance(r, dict)] or \
            ([fact_tool.result_example] if isinstance(fact_tool.result_example, dict) else [])
        if not pool:
            raise ScenarioError(f"no real result of {fact_tool.name} to build the fact from")
        fact = json.loads(json.dumps(pool[int(rng.integers(len(pool)))]))
        value = picked[int(rng.integers(len(picked)))]
        set_path(fact, field, value)
        found, link_value = get_path(record, str(spec.params["link"]))
        if not found or not isinstance(link_value, (str, int)):
            raise ScenarioError(f"the record holds no {spec.params['link']} to look the fact up by")
        if fact_key in fact:
            fact[fact_key] = link_value
        return fact, value

    def build_scenario(self, rng) -> Scenario:
        spec = self.SPEC
        kit = Kit(spec, rng)
        key, field = kit.key, str(spec.params["field"])
        write, alt = spec.roles["write"], spec.roles["alt"]
        first = self.class_draw < FIRST_SHARE
        picked = list(spec.params["values"] if first else spec.params["other_values"])
        fact_tool = spec.roles.get("fact")
        if fact_tool:
            link = str(spec.params.get("link") or "")
            record = kit.source.draw(lambda r: get_path(r, link)[0])
            if record is None:
                raise ScenarioError(f"no real record has {link}")
            fact, value = self._fact(kit, record, picked, rng)
            fact_target = get_path(record, link)[1]
        else:
            record = kit.source.draw(lambda r: get_path(r, field)[0] and get_path(r, field)[1] in picked)
            if record is None:
                raise ScenarioError(f"no real record has {field} in {picked}")
            value = get_path(record, field)[1]
            fact, fact_target = None, None
        others = kit.source.records(spec.knobs.distractors)
        target = record[key]
        kit.knows(target)
        chosen, skipped = (write, alt) if first else (alt, write)
        args = {t: branch_args(kit, t, record) for t in (write, alt)}
        where = (f"my {path_words(spec.roles['fact_key'])}" if fact_tool else f"my {kit.noun} {target}")
        condition = condition_phrase(field, spec.params["values"], where)
        opening = (f"{kit.greeting()} {condition[:1].upper() + condition[1:]}, I'd like "
                   f"to {_branch(kit, write, target, args[write])}; otherwise, I'd like to "
                   f"{_branch(kit, alt, target, args[alt])}.")
        if fact_tool:
            opening += f" My {kit.key_label} is {target}."
        hidden = sorted({a for t in (write, alt) for a in args[t][0] if a != key and a not in args[t][1]})
        if hidden:
            opening += f" For the {' and '.join(a.replace('_', ' ') for a in hidden)}, use the ones on my {kit.noun}."
        read = kit.read_call(target)
        if fact_tool:  # the user's record first (it holds the fact's key), then the fact
            read = [read, call(fact_tool, **{spec.roles["fact_key"]: fact_target})]
        else:
            read = [read]
        steps = kit.write_steps(chosen, target, args[chosen][0])
        wrong = kit.write_steps(skipped, target, args[skipped][0])
        said = (f"{fact_sentence(field, value)}, so I have done that." if fact_tool else
                f"Your {kit.noun} {target} has {path_words(field)} {str(value).replace('_', ' ')}, so I have done that.")
        done = f"{said} {GOODBYE}"
        other_target = others[0][key] if others else kit.source.fresh_id()
        other_args = dict(args[chosen][0], **{key: other_target})
        ask = (f"{said.split(', so ')[0]}. Would you like me to {kit.phrase(write, target)} or to "
               f"{kit.phrase(alt, target)}?")
        oracle = [*read, *steps, done]
        mutants = {
            "drop_required_call": [*read[:-1], *steps, done],
            "swap_calls": [*read[:-1], *steps, read[-1], done],
            "wrong_argument": [*read, *kit.write_steps(chosen, other_target, other_args), done],
            "forbidden_extra_call": [*read, *steps, call(skipped, **args[skipped][0]), done],
            "text_only": [done],
            "other_branch": [*read, *wrong, done],
            "both_writes": [*read, *wrong, *steps, done],
            "read_then_ask": [*read, ask, f"Please tell me which one you want, and I will do it. {GOODBYE}"],
        }
        records = {target: record, **{r[key]: r for r in others}}
        state = new_state(records)
        if fact is not None:
            state["facts"] = {str(fact_target): fact}
        return Scenario(
            state=state,
            bindings={"target": target, "first": first, "value": value, "fact_target": fact_target,
                      "value_words": str(value).replace("_", " ")},
            opening=opening,
            facts=kit.facts,
            # The user asks for both branches under one condition and cannot say which holds.
            requests=[UserRequest(kind="write", tool=chosen, target=target,
                                  phrase=f"{kit.phrase(write, target)} "
                                  f"{condition_phrase(field, spec.params['values'], 'it')}, or else "
                                  f"{kit.phrase(alt, target)}")],
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


class ConditionalRequest(Task):
    name = "conditional_request"
    summary = ("When the user's request depends on a fact of their record, read the record and make the write the "
               "fact selects, never the other branch's.")
    roles = ("read", "write", "alt", "key")
    params = ConditionalParams
    env_class = ConditionalEnv

    def hint(self, spec: Any) -> str:
        roles, p = spec.roles, spec.params
        return hints.join([hints.read_first(roles["read"], roles.get("key"), p.get("field")),
                           hints.condition(p.get("field"), p.get("values", []), roles["write"],
                                           p.get("other_values", []), roles["alt"]),
                           hints.confirm(roles["write"]) if spec.rules.confirm_writes else ""])

    def check(self, roles: dict[str, str], params: dict[str, Any], requests: int = 2) -> Check:
        key, read, write, alt = roles["key"], roles["read"], roles["write"], roles["alt"]
        target = {key: {"$var": "target"}}
        write_target, alt_target = CallRef(tool=write, args=target), CallRef(tool=alt, args=target)
        if roles.get("fact"):  # the fact is another lookup's, keyed by what the record holds
            read_target = CallRef(tool=roles["fact"], args={roles["fact_key"]: {"$var": "fact_target"}})
            join, read = [], roles["fact"]
        else:
            read_target, join = CallRef(tool=read, args=target), [key]
        return Check(clauses=[
            CallMade(id="write_made", weight=2, when="first", call=write_target,
                     description=f"{write} on the record, the branch its value selects"),
            Order(id="write_after_read", weight=1, when="first", requires=["write_made"], first=read_target,
                  then=write_target, join=join, description=f"read the fact with {read} before deciding"),
            CallMade(id="alt_made", weight=2, when="!first", call=alt_target,
                     description=f"{alt} on the record, the branch its value selects"),
            Order(id="alt_after_read", weight=1, when="!first", requires=["alt_made"], first=read_target,
                  then=alt_target, join=join, description=f"read the fact with {read} before deciding"),
            NoCall(id="no_alt", when="first", penalty=True, call=CallRef(tool=alt),
                   description=f"not {alt}: the record's value selects the other branch"),
            NoCall(id="no_write", when="!first", penalty=True, call=CallRef(tool=write),
                   description=f"not {write}: the record's value selects the other branch"),
            NoCall(id="no_other_write", penalty=True, call=CallRef(kind="write"), unless=[write_target, alt_target],
                   description="no write on another record, nor any write the user did not ask for"),
        ])


register_task(ConditionalRequest())
