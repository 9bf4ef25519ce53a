"""Multi-request completion: do every write the customer asked for, and only those (the desk offers others). The
deficit stops after the first request and reports it as done; the second is never made."""

from __future__ import annotations

from trace_envs.datasets.randomized.core import Core, Task, expected
from trace_envs.datasets.sim import PlantedDeficit, TaskOutcome

FAMILY = "multi_request_completion"
P_MATTERS = 1.0


def install(core: Core, rng, rate: float) -> None:
    t = core.theme
    first, second = core.take_act(rng), core.take_act(rng)
    tools = [core.write_tool(a) for a in (first, second)]
    core.dom.add_policy(f"- Handle every request the {t.person} makes in the conversation, one after the other, and "
                        "nothing they did not ask for.")
    name = "drops_second_request"
    deficit = PlantedDeficit(name, FAMILY, tuple(tools), rate,
                             f"makes the first of two requested writes and never the second ({tools[1]})")

    def plan(rng, person, k: int) -> Task:
        task = core.task(rng, person, others=1)
        task.data.update(second=next(r for r in task.records if r is not task.target),
                         args=[core.arg_value(first, rng), core.arg_value(second, rng)])
        return task

    def simulate(b, rng, task: Task, flags) -> TaskOutcome:
        recs, (a1, a2) = [task.target, task.data["second"]], task.data["args"]
        ask = f"{core.says(first, recs[0], a1)} and {core.says(second, recs[1], a2)}"
        core.talk.open(b, rng, task.person.pid, core.talk.request(rng, ask), lambda: core.authenticate(b, rng, task))
        truth, done = [], []
        for i, (act, tool, rec, arg) in enumerate(zip((first, second), tools, recs, (a1, a2))):
            if i and flags[name]:
                break
            core.read_record(b, task, rec)
            truth.append(expected(tool, core.write(b, tool, rec, act, **core.act_args(act, arg))))
            done.append(core.done(act, rec))
        if flags[name]:
            truth.append(expected(tools[1], {core.record_key: recs[1]["id"], **{
                core.naming.field(k): v for k, v in core.act_args(second, a2).items()}}))
        core.talk.close(b, rng, " ".join(done))
        return TaskOutcome(truth, {name} if flags[name] else set())

    core.add_kind(FAMILY, deficit, P_MATTERS, plan, simulate, rng)
