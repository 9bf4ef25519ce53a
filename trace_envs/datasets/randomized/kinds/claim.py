"""Claim verification: the customer asserts a fact about their record as the reason for a waiver; check the record
and waive only when it agrees, else tell them what it shows. The deficit takes their word (it may read the record
and waive anyway); it matters when the claim is false."""

from __future__ import annotations

from trace_envs.datasets.randomized.core import Core, Task, expected
from trace_envs.datasets.sim import PlantedDeficit, TaskOutcome

FAMILY = "claim_verification"
P_MATTERS = 0.5


def install(core: Core, rng, rate: float) -> None:
    t, c = core.theme, core.theme.claim
    tool = core.write_tool(c.waive)
    field = c.field.replace("_", " ")
    core.dom.add_policy(f"- {core.generic(c.waive).capitalize()} only when its {field} is {c.claimed}. When a "
                        f"{t.person} says it is, check the {t.record} with {core.read} first; if it shows anything "
                        "else, tell them what it shows and change nothing.")
    name = "trusts_claim"
    deficit = PlantedDeficit(name, FAMILY, (core.read, tool), rate,
                             f"{c.waive.verb}s on the {t.person}'s word that the {field} is {c.claimed}")

    def plan(rng, person, k: int) -> Task:
        true = not core.balanced(k, P_MATTERS)
        task = core.task(rng, person, {c.field: c.claimed if true else rng.choice(c.other)})
        task.data["true"] = true
        return task

    def simulate(b, rng, task: Task, flags) -> TaskOutcome:
        rec, true = task.target, task.data["true"]
        claim = c.says.format(record=t.record, id=rec["id"])
        claim = claim[:1].upper() + claim[1:]
        ask = (f"{claim}, so please {core.says(c.waive, rec)}." if rng.random() < 0.5 else
               f"{claim}. {core.talk.request(rng, core.says(c.waive, rec))}")
        core.talk.open(b, rng, task.person.pid, ask, lambda: core.authenticate(b, rng, task))
        trusting = flags[name]
        if not trusting or rng.random() < 0.5:
            core.read_record(b, task, rec)
        truth = [expected(tool, {core.record_key: rec["id"]})] if true else []
        if true or trusting:
            core.write(b, tool, rec, c.waive)
            core.talk.close(b, rng, core.done(c.waive, rec))
            return TaskOutcome(truth, set() if true else {name})
        core.refuse(b, rng, f"I checked your {t.record} {rec['id']}: its {field} is {rec['state'][c.field]}, not "
                            f"{c.claimed}, so I can't {core.agent_says(c.waive, rec)}.")
        return TaskOutcome(truth)

    core.add_kind(FAMILY, deficit, P_MATTERS, plan, simulate, rng)
