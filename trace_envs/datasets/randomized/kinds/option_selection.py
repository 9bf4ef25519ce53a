"""Option selection under the customer's constraints: search, then book the one option that meets everything they
said (a place and a size). The deficit books the first option listed; it matters when that one misses a constraint.
The search lists as many options as the domain's option count (2 to 6)."""

from __future__ import annotations

from trace_envs.datasets.randomized.core import STR, Core, Task, expected
from trace_envs.datasets.randomized.themes import DATES, make_id, plural
from trace_envs.datasets.sim import PlantedDeficit, TaskOutcome

FAMILY = "option_selection"
# What a search is for, by the search argument a theme names.
WHEN = {"date": DATES, "day": DATES, "week": ("2025-W14", "2025-W19", "2025-W23"),
        "month": ("2025-05", "2025-06", "2025-07"), "currency": ("USD", "EUR", "GBP"),
        "department": ("Finance", "Sales", "Engineering"), "postcode": ("AB1 2CD", "LS6 4QT", "M14 5RB")}


def install(core: Core, rng, rate: float) -> None:
    t, f, o = core.theme, core.naming.field, core.theme.options
    n = core.option_count
    at_most = "at most" in o.size_says
    option_key = f(f"{o.noun} id")
    search = core.tool("search", plural(o.noun), f"Search the {plural(o.noun)} available for a {o.when}.",
                       {f(o.when): STR})
    book = core.tool(o.book.verb, o.book.obj, f"{o.book.verb.capitalize()} a {o.noun} for a {t.person}.",
                     {option_key: STR, core.person_key: STR}, "write")
    core.dom.add_policy(f"- To {o.book.says}, search with {search} and book the {o.noun} that meets every need the "
                        f"{t.person} states ({o.place_field.replace('_', ' ')} and {o.size_field.replace('_', ' ')}).")
    name = f"ignores_{o.noun.replace(' ', '_')}_needs"
    deficit = PlantedDeficit(name, FAMILY, (search, book), rate,
                             f"books the first {o.noun} listed, not the one meeting the stated needs")

    def fits(opt, place, need) -> bool:
        return opt["place"] == place and (opt["size"] <= need if at_most else opt["size"] >= need)

    def plan(rng, person, k: int) -> Task:
        task = core.task(rng, person, others=0)
        need = rng.choice(o.sizes[1:-1] or o.sizes)
        place = rng.choice(o.places)
        ok = [s for s in o.sizes if (s <= need if at_most else s >= need)]
        right = {"id": make_id(o.id, rng), "place": place, "size": rng.choice(ok)}
        options = []
        while len(options) < n - 1:
            cand = {"id": make_id(o.id, rng), "place": rng.choice(o.places), "size": rng.choice(o.sizes)}
            if not fits(cand, place, need) and cand["id"] != right["id"]:
                options.append(cand)
        options.insert(rng.randrange(1, n) if core.balanced(k, (n - 1) / n) else 0, right)
        when = rng.choice(WHEN.get(o.when) or t.titles)
        task.data.update(options=options, right=right, need=need, place=place, when=when)
        return task

    def simulate(b, rng, task: Task, flags) -> TaskOutcome:
        d = task.data
        place_words = f"{o.place_field.replace('_', ' ')} {d['place']}"
        ask = f"{o.book.says} ({o.when}: {d['when']}), {place_words}, {o.size_says.format(n=d['need'])}"
        core.talk.open(b, rng, task.person.pid, core.talk.request(rng, ask), lambda: core.authenticate(b, rng, task))
        b.call(search, {f(o.when): d["when"]}, [{option_key: x["id"], f(o.place_field): x["place"],
                                                 f(o.size_field): x["size"]} for x in d["options"]])
        pick = d["options"][0] if flags[name] else d["right"]
        b.call(book, {option_key: pick["id"], core.person_key: task.person.pid},
               core.shapes.ok(o.noun, pick["id"], o.book.done))
        core.talk.close(b, rng, f"I've {o.book.done} {o.noun} {pick['id']} for you.")
        truth = [expected(book, {option_key: d["right"]["id"], core.person_key: task.person.pid})]
        return TaskOutcome(truth, {name} if pick is not d["right"] else set())

    core.add_kind(FAMILY, deficit, (n - 1) / n, plan, simulate, rng)
