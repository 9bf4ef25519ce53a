"""Answer from records ("tool then tell"): read the record the user asks about, then tell them the value.

The user names one of their records by its key and asks for one of its values (`params.field`, a field name or a
dotted path such as `flights.0.date`; `params.label` is how the user names it). The agent must look that record up
and then state the value in a sentence; reading the answer and never saying it (the paper's ToolSandbox failure "tool
then communicate"), pasting the record, or listing many of its values earns nothing, and reading another record or
writing anything zeroes the score. The user has other records with other values there, so the value of the wrong
record is a wrong answer. Bindings: `target`, `answer`.

Example episode (`trace/retail_tell_order_status`, seed 0):

    user:  Hi! My user id is isabella_lopez_7655. Could you tell me the status of my order #W4919065?
    agent: get_order_details(order_id=#W4919065)
    agent: The status of order #W4919065 is pending. Is there anything else? If not, have a nice day!

Labelling a real run: it applies when the run read a record (with the candidate's read) holding a value of a field a
user question of the run asks for ("Can you give me the tracking number for that order?") that the user had not said
themselves. A run that stated that value after the read is
PRESENT. Where the source has expected actions, a failed run whose only departure is `said` (every write right, the
failure in what was said) and that never stated it is LACKING, anything else NA; without expected actions, a run that
never stated it is LACKING.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from trace_envs.checks.clauses import CallMade, CallRef, Check, Communicated, NoCall
from trace_envs.families.kit import GOODBYE, Kit
from trace_envs.families.task import Task, register_task
from trace_envs.language import hints
from trace_envs.language.values import is_letter_value, is_numeric_text
from trace_envs.runtime import Scenario
from trace_envs.runtime.phrases import path_words
from trace_envs.runtime.records import get_path
from trace_envs.runtime.scenario import UserRequest
from trace_envs.runtime.world import RecordEnv, ScenarioError, new_state

# Values no sentence can be said to state: yes/no flags match half the sentences a person writes.
UNTELLABLE = frozenset({"yes", "no", "true", "false", "none", "null", "n/a"})


class AnswerParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    field: str = Field(description="Record field whose value the user asks for (a dotted path).")
    label: str | None = Field(default=None, description="How the user names the field (e.g. 'cabin class').")


class AnswerEnv(RecordEnv):
    def build_scenario(self, rng) -> Scenario:
        spec = self.SPEC
        kit = Kit(spec, rng)
        key, path = kit.key, str(spec.params["field"])
        asked = str(spec.params.get("label") or path_words(path))
        n = max(spec.knobs.entities, 1 + spec.knobs.distractors, 2)
        answers: list[Any] = []

        def answerable(record: dict[str, Any]) -> bool:
            found, value = get_path(record, path)
            return found and tellable(value) and value not in answers

        records = []
        for _ in range(n):  # the user's other records hold other values: the wrong record's value is a wrong answer
            record = kit.source.draw(answerable)
            if record is None:
                raise ScenarioError(f"no real record has a distinct value at {path} for every record of the user")
            answers.append(get_path(record, path)[1])
            records.append(record)
        target, answer = records[0][key], answers[0]
        other = records[1][key]
        kit.knows(target)
        opening = f"{kit.greeting()} Could you tell me the {asked} of my {kit.noun} {target}?"
        say = f"The {asked} of {kit.noun} {target} is {answer}. {GOODBYE}"
        say_other = f"The {asked} of {kit.noun} {other} is {answers[1]}. {GOODBYE}"
        read, read_other = kit.read_call(target), kit.read_call(other)
        paste = f"Here is your {kit.noun}: {json.dumps(records[0])}. {GOODBYE}"
        silent = f"I have looked up your {kit.noun} {target}. {GOODBYE}"
        oracle = [read, say]
        mutants = {
            "drop_required_call": [say],
            "swap_calls": [say, read],
            "wrong_argument": [read_other, say_other],
            "forbidden_extra_call": [read, read_other, say],
            "text_only": [silent],
            "read_never_tell": [read, silent],
            "paste_record": [read, paste],
        }
        return Scenario(
            state=new_state({r[key]: r for r in records}),
            bindings={"target": target, "answer": answer, **kit.owner_binding},
            opening=opening,
            facts=kit.facts,
            requests=[UserRequest(kind="info", tool=kit.read, target=target,
                                  phrase=f"know the {asked} of my {kit.noun} {target}")],
            oracle=oracle,
            mutants=mutants,
        )


def tellable(value: Any) -> bool:
    """A value a sentence can state: a number (also as a string: credits "2"), one capital letter (a section "B",
    see `language.values.letter_spans`), or a string of 2+ characters that is not a yes/no flag."""
    if isinstance(value, bool):
        return False
    if isinstance(value, (int, float)):
        return True
    if not isinstance(value, str):
        return False
    text = value.strip()
    if is_numeric_text(text):
        return True
    if len(text) == 1:
        return is_letter_value(text)
    return len(text) >= 2 and text.lower() not in UNTELLABLE


def told_check(read: str, key: str, read_target: CallRef, answer: Any, penalties: bool = True,
               about: Any = None) -> Check:
    """Pay the value told after reading the record (3) and the read itself (1, only with the answer told); the
    penalties: no write, no read of another record. With `about`, a message naming another record's id tells
    nothing."""
    clauses: list[Any] = [
        Communicated(id="told", weight=3, values=[answer], after=read_target, about=about,
                     description="after reading the record, tell the user the value they asked for in a sentence"),
        CallMade(id="read_target", weight=1, requires=["told"], call=read_target,
                 description="look up the record the user asked about"),
    ]
    if penalties:
        clauses += [
            NoCall(id="no_write", penalty=True, call=CallRef(kind="write"), description="change nothing"),
            NoCall(id="no_other_read", penalty=True,
                   call=CallRef(tool=read, args={key: {"$not": read_target.args[key]}}),
                   description="read only the record the user asked about"),
        ]
    return Check(clauses=clauses)


class AnswerFromRecords(Task):
    name = "answer_from_records"
    summary = "After reading the record that holds the answer, tell the user the value they asked for in a sentence."
    roles = ("read", "key")
    params = AnswerParams
    env_class = AnswerEnv

    def hint(self, spec: Any) -> str:
        p = spec.params
        return hints.join([hints.read_first(spec.roles["read"], spec.roles.get("key")),
                           hints.answer(p.get("label") or hints.path_words(p.get("field")))])

    def check(self, roles: dict[str, str], params: dict[str, Any], requests: int = 2) -> Check:
        key, read = roles["key"], roles["read"]
        read_target = CallRef(tool=read, args={key: {"$var": "target"}})
        return told_check(read, key, read_target, {"$var": "answer"}, about={"$var": "target"})


register_task(AnswerFromRecords())
