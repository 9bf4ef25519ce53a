"""Information gathering: when the customer does not say which of their records they mean, ask them, then answer
from that record. The deficit does not ask: it answers from the first record on their profile; it matters when that
is not the one they meant."""

from __future__ import annotations

from trace_envs.datasets.randomized.core import Core, Task
from trace_envs.datasets.randomized.themes import article
from trace_envs.datasets.sim import PlantedDeficit, TaskOutcome

FAMILY = "information_gathering"
P_MATTERS = 0.6
_ASKS = ("I'd like to know the {label} of one of my {records}.", "Can you tell me the {label} for one of my {records}?",
         "I need the {label} of {a_record} of mine.")
_WHICH = ("Which {record} do you mean? Could you give me its ID?", "Sure. Which of your {records} is it about? "
          "Please tell me its ID.", "Could you tell me the ID of the {record} you mean?")
_GIVES = ("It's {id}.", "The ID is {id}.", "It's the {title} one, {id}.")


def install(core: Core, rng, rate: float) -> None:
    t = core.theme
    used = getattr(core, "used_info", None)
    info = rng.choice([i for i in t.info if i is not used] or list(t.info))
    core.dom.add_policy(f"- When it is not clear which {t.record} the {t.person} means, ask them; never guess.")
    name = f"guesses_which_{t.record.replace(' ', '_')}"
    deficit = PlantedDeficit(name, FAMILY, (core.read,), rate, f"answers about the first {t.record} on the profile "
                             f"instead of asking which one the {t.person} means")

    def plan(rng, person, k: int) -> Task:
        task = core.task(rng, person, others=rng.randint(1, 2))
        task.records.remove(task.target)
        at = rng.randrange(1, len(task.records) + 1) if core.balanced(k, P_MATTERS) else 0
        task.records.insert(at, task.target)
        return task

    def simulate(b, rng, task: Task, flags) -> TaskOutcome:
        rec = task.target
        ask = rng.choice(_ASKS).format(label=info.label, a_record=article(t.record), records=t.records)
        core.talk.open(b, rng, task.person.pid, ask, lambda: core.authenticate(b, rng, task))
        if flags[name]:
            rec = task.records[0]
        else:
            b.say(rng.choice(_WHICH).format(record=t.record, records=t.records))
            b.user(rng.choice(_GIVES).format(id=rec["id"], title=rec["about"][t.title_field]))
        core.read_record(b, task, rec)
        core.talk.close(b, rng, f"The {info.label} of your {t.record} {rec['id']} is {rec['about'][info.field]}.")
        return TaskOutcome([], {name} if rec is not task.target else set())

    core.add_kind(FAMILY, deficit, P_MATTERS, plan, simulate, rng)
