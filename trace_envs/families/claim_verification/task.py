"""Claim verification: the user asserts a record fact as the reason for a write; check the record before acting on it.

The user says a field of one of their records holds a value (`params.claimed`: "I'm a Gold member", "I already paid
invoice INV-20931") and asks for the write that fact would justify. The agent must read the record first, make the
write only when the record agrees, and, when the record shows another value (one of `params.refuted`), tell the user
what it shows, in a sentence, and change nothing. Half the scenarios hold a true claim, half a false one, so trusting
every claim, or doubting every one, earns at most the larger class. Bindings: `target`, `allowed` (the claim is true),
`reason` (the record's value), `reason_words` (it in words).

Example episode (help-desk, field `status`, claimed `paid`):

    user:  Hi! My invoice INV-20931 is paid already, so I'd like you to waive the late fee of invoice INV-20931.
    agent: get_invoice(invoice_id=INV-20931)  -> {..., "status": "open", ...}
    agent: I've checked invoice INV-20931: our records show its status is open, not paid, so I can't do that.

Labelling a real run: it applies when a user turn claims a value of the candidate's field (an assertion: "I'm a Gold
member", "my flight was cancelled", not a question nor a request for a value) and the run read the record. A run that
made the write after reading a record that agrees is PRESENT, and so is one that read a record showing another value,
made no write and told the user that value; a write with no read of the record before it, or after a read that
contradicts the claim, is LACKING. Where the source has expected actions, a LACKING write must be one they do not make
(`unwarranted_write`) or carry a value the user stated against the records (`user_claim`); a run missing an expected
write is NA (another family's failure), as is a write the expected actions make on a contradicted claim (the claim did
not decide it: a silver member who says gold still earns the gesture).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from trace_envs.checks.clauses import Check
from trace_envs.families.kit import GOODBYE, Kit, gated_write_check
from trace_envs.families.task import Task, register_task
from trace_envs.language import hints
from trace_envs.runtime import Scenario
from trace_envs.runtime.phrases import path_words
from trace_envs.runtime.world import Gate, RecordEnv, call, canonical_json, gated_record, new_state

TRUE_SHARE = 0.5


class ClaimParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    field: str = Field(description="Record field the user's claim is about (a dotted path).")
    claimed: str | bool = Field(description="The value the user claims the field holds (what would justify the write); "
                                "a flag's claim is that it is set: `paid` true is 'my bill is paid'.")
    refuted: list[str | bool] = Field(min_length=1, description="Values the record may show instead (the claim is "
                                      "false).")
    label: str | None = Field(default=None, description="How the user names the field (e.g. 'membership').")


class ClaimEnv(RecordEnv):
    def build_scenario(self, rng) -> Scenario:
        return claim_scenario(self, rng, self.class_draw < TRUE_SHARE)


def claim_scenario(env: RecordEnv, rng, true_claim: bool) -> Scenario:
    """The user claims the field holds `claimed` and asks for the write; the record agrees (`true_claim`: read, then
    write) or shows a refuted value (read, then tell the user that value and write nothing)."""
    spec = env.SPEC
    p = ClaimParams.model_validate(spec.params)
    kit = Kit(spec, rng)
    write, key = kit.write, kit.key
    assert write is not None
    gate = Gate(field=p.field, allowed=(p.claimed,), blocked=tuple(p.refuted))
    want, flip = ("allowed", "blocked") if true_claim else ("blocked", "allowed")
    record, value = gated_record(kit.source, write, gate, want, flip, kit.facts)
    target = record[key]
    others = kit.source.records(spec.knobs.distractors)
    kit.knows(target)
    label = p.label or path_words(p.field)
    claimed_words = said_forms(label, p.claimed)[0]
    args, stated = kit.write_args(write, record)
    if isinstance(p.claimed, bool):  # a flag is claimed as a predicate: "My bill B1 is paid, so ..."
        opening = f"{kit.greeting()} My {kit.noun} {target} is {claimed_words}, so I'd like to {kit.phrase(write, target)}."
    else:
        opening = (f"{kit.greeting()} The {label} of my {kit.noun} {target} is {claimed_words}, so I'd like to "
                   f"{kit.phrase(write, target)}.")
    shown = said_forms(label, value)[0]
    what = f"it is {shown}" if isinstance(value, bool) else f"its {label} is {shown}"
    if stated:
        opening += f" Use these details: {canonical_json(stated)}."
    opening += kit.from_record(write, args, stated)
    read = kit.read_call(target)
    asks = kit.fact_questions(write)
    steps = kit.write_steps(write, target, args)
    done = kit.done(write, [target])
    told = (f"I've checked your {kit.noun} {target}: our records show {what}, not {claimed_words}, so I can't "
            f"{kit.phrase(write, target)}. {GOODBYE}")
    doubted = f"I've checked your {kit.noun} {target}: {what}, but I can't {kit.phrase(write, target)}. {GOODBYE}"
    paste = f"Here is your {kit.noun}: {canonical_json(record)}. {GOODBYE}"
    wrong_target = others[0][key] if others else kit.source.fresh_id()
    wrong_steps = kit.write_steps(write, wrong_target, dict(args, **{key: wrong_target}))
    if true_claim:
        oracle = [read, *asks, *steps, done]
        mutants = {
            "drop_required_call": [*asks, *steps, done],
            "swap_calls": [*asks, *steps, read, done],
            "wrong_argument": [kit.read_call(wrong_target), *asks, *wrong_steps, done],
            # the extra write made outright: asked to confirm a write they never wanted, the user ends the episode
            # before it is made, and the mutant would be the oracle
            "forbidden_extra_call": [read, *asks, *steps, call(write, **dict(args, **{key: wrong_target})), done],
            "text_only": [done],
            "trusts_claim": [*asks, *steps, done],
            "ignores_record": [read, doubted],  # refuses a claim the record bears out
            "paste_record": [read, paste],
        }
    else:
        oracle = [read, told]
        mutants = {
            "drop_required_call": [told],
            "swap_calls": [told, read],
            "wrong_argument": [kit.read_call(wrong_target), told],
            "forbidden_extra_call": [read, *asks, *steps, told],
            "text_only": [f"I'm sorry, but I can't {kit.phrase(write, target)}. {GOODBYE}"],
            "trusts_claim": [*asks, *steps, done],
            "ignores_record": [read, *asks, *steps, done],  # writes on a claim the record contradicts
            "paste_record": [read, paste],
        }
    records = {target: record, **{r[key]: r for r in others}}
    return Scenario(
        state=new_state(records),
        bindings={"target": target, "allowed": true_claim,
                  "reason": said_forms(label, value)[0] if isinstance(value, bool) else value,
                  "reason_words": said_forms(label, value)[-1] if isinstance(value, bool) else shown},
        opening=opening,
        facts=kit.facts,
        requests=[kit.request(write, target)],
        oracle=oracle,
        mutants=mutants,
        klass="true_claim" if true_claim else "false_claim",
    )


def words_of(value: Any) -> str:
    return str(value).replace("_", " ")


def said_forms(label: str, value: Any) -> list[str]:
    """How a sentence states that the field named `label` holds `value`: a string value in words ("gold", "open");
    a flag by the field's name, set or not ("paid"; "not paid", "unpaid")."""
    if isinstance(value, bool):
        name = label.split(" ")[-1]
        return [name] if value else [f"not {name}", f"un{name}", f"no {name}"]
    return [words_of(value)]


class ClaimVerification(Task):
    name = "claim_verification"
    summary = ("When the user states a record fact as the reason for a write, read the record first; write only when "
               "it agrees, else tell the user what it shows.")
    roles = ("read", "write", "key")
    params = ClaimParams
    env_class = ClaimEnv

    def hint(self, spec: Any) -> str:
        roles, p = spec.roles, spec.params
        return hints.join([hints.verify_claim(p.get("field"), p.get("claimed"), roles["read"], roles["write"]),
                           hints.confirm(roles["write"]) if spec.rules.confirm_writes else ""])

    def check(self, roles: dict[str, str], params: dict[str, Any], requests: int = 2) -> Check:
        # the order outweighs the write: a write on the claim alone earns a third in the true class, nothing in the
        # false one
        return gated_write_check(roles, write_weight=1, order_weight=2, explain_weight=1)


register_task(ClaimVerification())
