"""Handoff to a human: some requests need a person (complaints, disputes, harm, fraud); hand those over with the
handoff tool and change nothing, and handle everything else yourself. The deficit never hands over: it tells the
customer it cannot help. It matters on the requests that need a person."""

from __future__ import annotations

from trace_envs.datasets.randomized.core import STR, Core, Task, expected
from trace_envs.datasets.randomized.naming import HANDOFF_OBJECTS
from trace_envs.datasets.sim import PlantedDeficit, TaskOutcome

FAMILY = "handoff_to_human"
P_MATTERS = 0.5
_PERSON = {"case": "case manager"}
_ANNOUNCE = ("I've passed this to a {who}, who will take it from here.",
             "This needs a {who}: I've handed your case over and they will contact you shortly.",
             "I'm handing this conversation to a {who} now; they'll pick it up from here.")


def install(core: Core, rng, rate: float) -> None:
    t = core.theme
    named = rng.choice(HANDOFF_OBJECTS)
    who = _PERSON.get(named, named)  # the tool may be named for the case; a person takes it over
    handoff = core.tool("escalate", named, f"Hand the conversation over to a {who}, who takes over from here. Give "
                        "a short summary.", {"summary": STR}, "other")
    act = core.take_act(rng)
    tool = core.write_tool(act)
    core.dom.add_policy(f"- Complaints, disputes, reports of harm, fraud or misconduct, and appeals need a person: "
                        f"hand the conversation to a {who} with {handoff} and change nothing yourself. Handle "
                        "everything else yourself.")
    name = "never_hands_over"
    deficit = PlantedDeficit(name, FAMILY, (handoff, core.read), rate,
                             f"tells the {t.person} it cannot help instead of handing the case to a {who}")

    def plan(rng, person, k: int) -> Task:
        task = core.task(rng, person)
        needs = core.balanced(k, P_MATTERS)
        topic = rng.choice(t.topics).format(record=t.record, id=task.target["id"])
        task.data.update(needs=needs, topic=topic, arg=core.arg_value(act, rng),
                         summary=f"{t.person.capitalize()} {person.pid}: {topic}")
        return task

    def simulate(b, rng, task: Task, flags) -> TaskOutcome:
        rec, d = task.target, task.data
        ask = d["topic"] if d["needs"] else core.talk.request(rng, core.says(act, rec, d["arg"]))
        core.talk.open(b, rng, task.person.pid, ask, lambda: core.authenticate(b, rng, task))
        if rec["id"] in ask:  # a request about no record of theirs ("my medical records were shared") reads none
            core.read_record(b, task, rec)
        if not d["needs"]:
            args = core.write(b, tool, rec, act, **core.act_args(act, d["arg"]))
            core.talk.close(b, rng, core.done(act, rec))
            return TaskOutcome([expected(tool, args)])
        truth = [expected(handoff, {"summary": d["summary"]})]
        if flags[name]:
            core.refuse(b, rng, "I'm not able to help with that here. You may want to contact us again later.")
            return TaskOutcome(truth, {name})
        b.call(handoff, {"summary": d["summary"]},
               {"status": "queued", "message": f"A {who} will take over this conversation shortly."})
        b.say(rng.choice(_ANNOUNCE).format(who=who))
        return TaskOutcome(truth)

    core.add_kind(FAMILY, deficit, P_MATTERS, plan, simulate, rng)
