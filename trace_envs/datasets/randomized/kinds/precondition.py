"""Precondition before write: look the record up and check the field the policy gates the write on before making
it. The deficit writes without reading; it matters when the record's field forbids the write."""

from __future__ import annotations

from trace_envs.datasets.randomized.core import Core, Task, expected
from trace_envs.datasets.sim import PlantedDeficit, TaskOutcome

FAMILY = "precondition_before_write"
P_MATTERS = 0.5


def install(core: Core, rng, rate: float) -> None:
    t = core.theme
    gate = rng.choice(t.gates)
    act = core.take_act(rng)
    tool = core.write_tool(act)
    field = core.field_words(gate.field)
    core.dom.add_policy(
        f"- You may {core.generic(act)} only when "
        f"its {field} is {' or '.join(gate.allowed)}. Look the {t.record} up with {core.read} before you do; when the "
        f"{field} is anything else, do not do it and tell the {t.person} why.")
    name = f"skips_{gate.field}_check"
    deficit = PlantedDeficit(name, FAMILY, (core.read, tool), rate,
                             f"{act.verb}s a {t.record} without looking it up, so a {t.record} whose {field} forbids "
                             "it is changed too", also=("policy_refusal",))

    def simulate(b, rng, task: Task, flags) -> TaskOutcome:
        rec, arg, allowed = task.target, task.data["arg"], task.data["allowed"]
        core.talk.open(b, rng, task.person.pid, core.talk.request(rng, core.says(act, rec, arg)),
                       lambda: core.authenticate(b, rng, task))
        args = {core.record_key: rec["id"], **{core.naming.field(k): v for k, v in core.act_args(act, arg).items()}}
        truth = [expected(tool, args)] if allowed else []
        if flags[name]:
            core.write(b, tool, rec, act, **core.act_args(act, arg))
            core.talk.close(b, rng, core.done(act, rec))
            return TaskOutcome(truth, set() if allowed else {name})
        core.read_record(b, task, rec)
        if allowed:
            core.write(b, tool, rec, act, **core.act_args(act, arg))
            core.talk.close(b, rng, core.done(act, rec))
        else:
            value = rec["state"][gate.field]
            core.refuse(b, rng, f"I can't {core.agent_says(act, rec)}: its {field} is {value}, and our policy allows "
                                f"that only when it is {' or '.join(gate.allowed)}.")
        return TaskOutcome(truth)

    core.add_kind(FAMILY, deficit, P_MATTERS, core.gated_plan(gate, act, P_MATTERS), simulate, rng)
