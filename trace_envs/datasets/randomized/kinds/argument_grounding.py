"""Argument grounding: pass an id exactly as a lookup returned it. The write takes the id of something the customer
has on file (a card, an account, a plan) that they do not know by heart; the right agent lists what is on file and
uses the default one. The deficit makes the id up (mostly without listing, sometimes after listing)."""

from __future__ import annotations

from trace_envs.datasets.randomized.core import STR, Core, Task, expected
from trace_envs.datasets.randomized.themes import make_id, plural
from trace_envs.datasets.sim import PlantedDeficit, TaskOutcome

FAMILY = "argument_grounding"
P_MATTERS = 1.0
_REFS = ("use the {onfile} I have on file", "put it on my default {onfile}", "use my usual {onfile} for it")


def install(core: Core, rng, rate: float) -> None:
    t, f = core.theme, core.naming.field
    act = core.take_act(rng)
    onfile_key = f(f"{t.onfile} id")
    listing = core.tool("get", f"{t.person} {plural(t.onfile)}", f"List the {plural(t.onfile)} a {t.person} has on "
                        "file, with their ids.", {core.person_key: STR})
    tool = core.write_tool(act, {onfile_key: STR}, f" Billed to a {t.onfile} on file.")
    core.dom.add_policy(f"- To {core.generic(act)}, bill it to one of the {t.person}'s {plural(t.onfile)}: find its "
                        f"id with {listing}, never guess one.")
    name = f"invents_{t.onfile.replace(' ', '_')}_id"
    deficit = PlantedDeficit(name, FAMILY, (tool, listing), rate,
                             f"passes a {t.onfile} id it made up instead of one {listing} returned")

    def plan(rng, person, k: int) -> Task:
        task = core.task(rng, person)
        items = [{"id": make_id(t.onfile_id, rng), "label": f"{t.onfile} ending {rng.randint(1000, 9999)}"}
                 for _ in range(rng.randint(1, 3))]
        task.data.update(items=items, default=rng.randrange(len(items)), arg=core.arg_value(act, rng),
                         invented=make_id(t.onfile_id, rng))
        return task

    def simulate(b, rng, task: Task, flags) -> TaskOutcome:
        rec, arg, items = task.target, task.data["arg"], task.data["items"]
        right = items[task.data["default"]]["id"]
        ask = f"{core.says(act, rec, arg)}, and {rng.choice(_REFS).format(onfile=t.onfile)}"
        core.talk.open(b, rng, task.person.pid, core.talk.request(rng, ask), lambda: core.authenticate(b, rng, task))
        core.read_record(b, task, rec)
        deficit_ = flags[name]
        if not deficit_ or rng.random() < 0.3:
            b.call(listing, {core.person_key: task.person.pid}, {core.person_key: task.person.pid, f(plural(t.onfile)): [
                {onfile_key: it["id"], "label": it["label"], f("is default"): i == task.data["default"]}
                for i, it in enumerate(items)]})
        used = task.data["invented"] if deficit_ and task.data["invented"] != right else right
        core.write(b, tool, rec, act, **core.act_args(act, arg), **{f"{t.onfile} id": used})
        core.talk.close(b, rng, core.done(act, rec))
        args = {core.record_key: rec["id"], **{f(k): v for k, v in core.act_args(act, arg).items()}, onfile_key: right}
        return TaskOutcome([expected(tool, args)], {name} if used != right else set())

    core.add_kind(FAMILY, deficit, P_MATTERS, plan, simulate, rng)
