"""Answer from records: look up the record the customer asks about and tell them the value they asked for. The
deficit reads the record and answers without the value."""

from __future__ import annotations

from trace_envs.datasets.randomized.core import Core, Task
from trace_envs.datasets.sim import PlantedDeficit, TaskOutcome

FAMILY = "answer_from_records"
P_MATTERS = 1.0
_ASKS = ("What is the {label} of my {record} {id}?", "Could you tell me the {label} of my {record} {id}?",
         "I'd like to know the {label} of {record} {id}.", "Can you check what the {label} on my {record} {id} is?")
_EMPTY = ("I've pulled up your {record} {id}, and everything on it looks in order.",
          "I checked your {record} {id}; it's all set up correctly.",
          "I found your {record} {id} in our system and there's nothing unusual about it.")


def install(core: Core, rng, rate: float) -> None:
    t = core.theme
    info = rng.choice(t.info)
    core.used_info = info
    core.dom.add_policy(f"- When a {t.person} asks about one of their {t.records}, look it up with {core.read} and "
                        "tell them what it shows.")
    name = f"never_tells_{info.field}"
    deficit = PlantedDeficit(name, FAMILY, (core.read,), rate, f"reads the {t.record} and answers without its "
                             f"{info.label}")

    def plan(rng, person, k: int) -> Task:
        return core.task(rng, person)

    def simulate(b, rng, task: Task, flags) -> TaskOutcome:
        rec = task.target
        ask = rng.choice(_ASKS).format(label=info.label, record=t.record, id=rec["id"])
        core.talk.open(b, rng, task.person.pid, ask, lambda: core.authenticate(b, rng, task))
        core.read_record(b, task, rec)
        if flags[name]:
            core.talk.close(b, rng, rng.choice(_EMPTY).format(record=t.record, id=rec["id"]))
            return TaskOutcome([], {name})
        core.talk.close(b, rng, f"The {info.label} of your {t.record} {rec['id']} is {rec['about'][info.field]}.")
        return TaskOutcome([])

    core.add_kind(FAMILY, deficit, P_MATTERS, plan, simulate, rng)
