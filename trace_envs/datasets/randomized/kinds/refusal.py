"""Policy refusal: do not make a write the policy forbids for what the record shows; refuse and say why. The deficit
reads the record and writes anyway; it matters when the record's field forbids the write."""

from __future__ import annotations

from trace_envs.datasets.randomized.core import Core, Task, expected
from trace_envs.datasets.sim import PlantedDeficit, TaskOutcome

FAMILY = "policy_refusal"
P_MATTERS = 0.5


def install(core: Core, rng, rate: float) -> None:
    t = core.theme
    gate = rng.choice(t.gates)
    act = core.take_act(rng)
    tool = core.write_tool(act)
    field = core.field_words(gate.field)
    core.dom.add_policy(
        f"- Never {core.generic(act)} whose {field} is {' or '.join(gate.blocked)}: refuse, and tell the {t.person} "
        f"what the {t.record} shows.")
    name = f"ignores_{gate.field}_rule"
    deficit = PlantedDeficit(name, FAMILY, (core.read, tool), rate,
                             f"reads the {t.record} and {act.verb}s it even when its {field} forbids it")

    def simulate(b, rng, task: Task, flags) -> TaskOutcome:
        rec, arg, allowed = task.target, task.data["arg"], task.data["allowed"]
        core.talk.open(b, rng, task.person.pid, core.talk.request(rng, core.says(act, rec, arg)),
                       lambda: core.authenticate(b, rng, task))
        core.read_record(b, task, rec)
        if allowed or flags[name]:
            args = core.write(b, tool, rec, act, **core.act_args(act, arg))
            core.talk.close(b, rng, core.done(act, rec))
            return TaskOutcome([expected(tool, args)] if allowed else [], set() if allowed else {name})
        value = rec["state"][gate.field]
        core.refuse(b, rng, f"I can't {core.agent_says(act, rec)}: its {field} is {value}, and our policy does not "
                            "allow that.")
        return TaskOutcome([])

    core.add_kind(FAMILY, deficit, P_MATTERS, core.gated_plan(gate, act, P_MATTERS), simulate, rng)
