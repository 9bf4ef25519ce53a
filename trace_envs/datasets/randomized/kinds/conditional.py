"""Conditional request: the customer's request depends on a fact of their record ("if it is X, do A; otherwise do
B"); look the record up and do the branch it selects. The deficit does not look: it always takes the first branch;
it matters when the fact does not hold."""

from __future__ import annotations

from trace_envs.datasets.randomized.core import Core, Task, expected
from trace_envs.datasets.sim import PlantedDeficit, TaskOutcome

FAMILY = "conditional_request"
P_MATTERS = 0.5
_FORMS = ("If the {field} of my {record} {id} is {value}, please {first}; otherwise, please {second}.",
          "Could you check my {record} {id}? If its {field} is {value}, {first}. If not, {second}.",
          "I'm not sure what state my {record} {id} is in: if the {field} is {value}, I'd like you to {first}; "
          "if it isn't, {second} instead.")


def install(core: Core, rng, rate: float) -> None:
    t = core.theme
    gate = rng.choice(t.gates)
    values = gate.allowed + gate.blocked
    first, second = core.take_act(rng), core.take_act(rng)
    tools = [core.write_tool(a) for a in (first, second)]
    core.dom.add_policy(f"- When a request depends on what a {t.record} shows, look the {t.record} up with "
                        f"{core.read} first and do what the {t.person} asked for that case.")
    name = f"ignores_{gate.field}_condition"
    deficit = PlantedDeficit(name, FAMILY, (core.read, *tools), rate,
                             f"never looks the {t.record}'s {gate.field.replace('_', ' ')} up and always takes the "
                             "first branch")

    def plan(rng, person, k: int) -> Task:
        value = rng.choice(values)
        holds = not core.balanced(k, P_MATTERS)
        actual = value if holds else rng.choice([v for v in values if v != value])
        task = core.task(rng, person, {gate.field: actual})
        task.data.update(value=value, holds=holds, form=rng.choice(_FORMS),
                         args=[core.arg_value(first, rng), core.arg_value(second, rng)])
        return task

    def simulate(b, rng, task: Task, flags) -> TaskOutcome:
        rec, d = task.target, task.data
        phrases = [core.says(a, rec, arg).replace(f"my {t.record} {rec['id']}", f"the {t.record}").replace(
            f"{t.record} {rec['id']}", f"the {t.record}") for a, arg in zip((first, second), d["args"])]
        ask = d["form"].format(field=gate.field.replace("_", " "), record=t.record, id=rec["id"], value=d["value"],
                               first=phrases[0], second=phrases[1])
        core.talk.open(b, rng, task.person.pid, ask, lambda: core.authenticate(b, rng, task))
        right = 0 if d["holds"] else 1
        branch = 0 if flags[name] else right
        if not flags[name]:
            core.read_record(b, task, rec)
        act, tool, arg = (first, second)[branch], tools[branch], d["args"][branch]
        core.write(b, tool, rec, act, **core.act_args(act, arg))
        core.talk.close(b, rng, core.done(act, rec))
        good = (first, second)[right]
        truth = [expected(tools[right], {core.record_key: rec["id"], **{
            core.naming.field(k): v for k, v in core.act_args(good, d["args"][right]).items()}})]
        return TaskOutcome(truth, {name} if branch != right else set())

    core.add_kind(FAMILY, deficit, P_MATTERS, plan, simulate, rng)
