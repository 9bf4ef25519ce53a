"""Error recovery: a write fails with an error naming something the customer's profile lacks; another tool fixes
it, and the write then succeeds on a retry. The deficit gives up (or says it is done) after the error; it matters
whenever the profile lacks it. The error comes in the domain's error shape, and names the fixing tool in some domains
and only the missing condition in others."""

from __future__ import annotations

from trace_envs.datasets.randomized.core import Core, Task, expected
from trace_envs.datasets.randomized.themes import Act
from trace_envs.datasets.sim import PlantedDeficit, TaskOutcome

FAMILY = "error_recovery"
P_MATTERS = 0.6
# (profile field, value that blocks, value that allows, the fix, what it did)
PREREQS = (
    ("autopay", "off", "on", Act("enable", "autopay", "", "enabled")),
    ("contact_verified", "no", "yes", Act("verify", "contact details", "", "verified")),
    ("consent_form", "missing", "signed", Act("record", "consent", "", "recorded")),
    ("id_check", "pending", "passed", Act("complete", "id check", "", "completed")),
)


def install(core: Core, rng, rate: float) -> None:
    t = core.theme
    field, bad, good, fix_act = rng.choice(PREREQS)
    names_fix = rng.random() < 0.5
    act = core.take_act(rng)
    tool = core.write_tool(act)
    fix = core.tool(fix_act.verb, fix_act.obj, f"{fix_act.verb.replace('_', ' ').capitalize()} the {fix_act.obj} of a "
                    f"{t.person}'s profile.", {core.person_key: {"type": "string"}}, "write")
    words = field.replace("_", " ")
    core.dom.add_policy(f"- {core.generic(act).capitalize()} needs the {t.person}'s {words} to be {good}. If {tool} "
                        f"fails because it is not, {fix} sets it; then try again.")
    name = f"gives_up_on_{field}_error"
    deficit = PlantedDeficit(name, FAMILY, (tool, fix), rate,
                             f"{tool} fails on the {words}; the agent gives up instead of calling {fix} and retrying")

    def plan(rng, person, k: int) -> Task:
        task = core.task(rng, person)
        ready = not core.balanced(k, P_MATTERS)
        task.profile[field] = good if ready else bad
        task.data.update(ready=ready, arg=core.arg_value(act, rng))
        return task

    def simulate(b, rng, task: Task, flags) -> TaskOutcome:
        rec, d = task.target, task.data
        core.talk.open(b, rng, task.person.pid, core.talk.request(rng, core.says(act, rec, d["arg"])),
                       lambda: core.authenticate(b, rng, task))
        core.read_record(b, task, rec)
        args = {core.record_key: rec["id"], **{core.naming.field(k): v for k, v in core.act_args(act, d["arg"]).items()}}
        fix_args = {core.person_key: task.person.pid}
        if d["ready"]:
            core.write(b, tool, rec, act, **core.act_args(act, d["arg"]))
            core.talk.close(b, rng, core.done(act, rec))
            return TaskOutcome([expected(tool, args)])
        message = (f"{words} is {bad} for {t.person} {task.person.pid}; call {fix} first" if names_fix else
                   f"cannot change {t.record} {rec['id']}: the {t.person}'s {words} must be {good}")
        b.call(tool, args, core.shapes.error(message, 412 if names_fix else 409), error=True)
        truth = [expected(fix, fix_args), expected(tool, args)]
        if flags[name]:
            if rng.random() < 0.6:
                core.refuse(b, rng, f"I couldn't {core.agent_says(act, rec)}: our system reports that your {words} is "
                                    f"{bad}.")
            else:
                core.talk.close(b, rng, core.done(act, rec))
            return TaskOutcome(truth, {name})
        b.call(fix, fix_args, core.shapes.ok(t.person, task.person.pid, fix_act.done))
        core.write(b, tool, rec, act, **core.act_args(act, d["arg"]))
        core.talk.close(b, rng, f"Your {words} was {bad}, so I {fix_act.done} it first. {core.done(act, rec)}")
        return TaskOutcome(truth)

    core.add_kind(FAMILY, deficit, P_MATTERS, plan, simulate, rng)
