"""Aggregation and arithmetic over records: read every open item the customer owes and pay (or tell) their sum.
The deficit takes the first open item for the whole; it matters when more than one is open. A domain draws whether
its customers ask to pay the total or only to be told it."""

from __future__ import annotations

from trace_envs.datasets.randomized.core import STR, Core, Task, expected
from trace_envs.datasets.randomized.themes import make_id, plural
from trace_envs.datasets.sim import PlantedDeficit, TaskOutcome

FAMILY = "aggregation_arithmetic"
P_MATTERS = 0.75
_TELL = ("How much do I owe in {bills} in total?", "Could you tell me the total of my open {bills}?",
         "What's the sum of all my unpaid {bills}?")


def install(core: Core, rng, rate: float) -> None:
    t, f, bills = core.theme, core.naming.field, core.theme.bills
    pay = rng.random() < 0.6
    nouns = plural(bills.noun)
    listing = core.tool("get", f"{t.person} {nouns}", f"List a {t.person}'s {nouns}: amount and status (open or "
                        "paid).", {core.person_key: STR})
    tools = [listing]
    if pay:
        payment = core.tool(bills.pay.verb, bills.pay.obj, f"Pay an amount towards a {t.person}'s open {nouns}.",
                            {core.person_key: STR, "amount": {"type": "number"}}, "write")
        tools.append(payment)
        core.dom.add_policy(f"- To pay a {t.person}'s open {nouns}, list them with {listing} and pay the sum of every "
                            f"open one in one {payment} call.")
    else:
        core.dom.add_policy(f"- When a {t.person} asks what they owe, list their {nouns} with {listing} and tell them "
                            "the sum of the open ones.")
    name = f"{'pays' if pay else 'tells'}_first_{bills.noun.replace(' ', '_')}_only"
    deficit = PlantedDeficit(name, FAMILY, tuple(tools), rate,
                             f"{'pays' if pay else 'tells'} the first open {bills.noun}'s amount instead of the sum")

    def plan(rng, person, k: int) -> Task:
        task = core.task(rng, person, others=0)
        n = rng.randint(2, 5)
        n_open = 1 if not core.balanced(k, P_MATTERS) else rng.randint(2, min(3, n))
        items = [{"id": make_id(bills.id, rng), "amount": round(rng.uniform(bills.low, bills.high), 2),
                  "status": "open" if i < n_open else "paid"} for i in range(n)]
        rng.shuffle(items)
        task.data.update(items=items, total=round(sum(i["amount"] for i in items if i["status"] == "open"), 2))
        return task

    def simulate(b, rng, task: Task, flags) -> TaskOutcome:
        d = task.data
        ask = core.talk.request(rng, bills.pay.says) if pay else rng.choice(_TELL).format(bills=nouns)
        core.talk.open(b, rng, task.person.pid, ask, lambda: core.authenticate(b, rng, task))
        b.call(listing, {core.person_key: task.person.pid}, {core.person_key: task.person.pid, f(nouns): [
            {f(f"{bills.noun} id"): i["id"], "amount": i["amount"], "status": i["status"]} for i in d["items"]]})
        opened = [i for i in d["items"] if i["status"] == "open"]
        amount = opened[0]["amount"] if flags[name] else d["total"]
        truth = []
        if pay:
            args = {core.person_key: task.person.pid, "amount": amount}
            b.call(payment, args, core.shapes.ok(t.person, task.person.pid, bills.pay.done, amount=amount))
            truth = [expected(payment, {core.person_key: task.person.pid, "amount": d["total"]})]
            core.talk.close(b, rng, f"I've paid ${amount:.2f} towards your open {nouns}.")
        else:
            core.talk.close(b, rng, f"You owe ${amount:.2f} in open {nouns} in total.")
        return TaskOutcome(truth, {name} if amount != d["total"] else set())

    core.add_kind(FAMILY, deficit, P_MATTERS, plan, simulate, rng)
