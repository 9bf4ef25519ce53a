"""What every task kind of a drawn domain shares: the customer, their records, the customer lookup, the record read,
the decoy read, tool schemas in the domain's naming, and the opening and closing of a conversation.

A record is `{"id", "about": {title and info fields}, "state": {every gate field and the claim field}}`: every record
carries the same fields whatever kind of task it serves, so no field gives a task away.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Callable

from trace_envs.datasets.randomized.naming import Naming
from trace_envs.datasets.randomized.shapes import Shapes
from trace_envs.datasets.randomized.talk import Talk
from trace_envs.datasets.randomized.themes import FIRST, LAST, Act, Gate, Theme, article, make_id
from trace_envs.datasets.sim import Builder, PlantedDeficit, PlantedDomain, TaskKind, TaskOutcome
from trace_envs.trajectories.models import GroundTruthAction

STR = {"type": "string"}
DECOY = "reads_optional_notice"
"""The decoy: the agent reads the domain's optional notice (hours, a timetable) in half the runs, whatever happens."""


@dataclass
class Person:
    pid: str
    first: str
    last: str

    @property
    def name(self) -> str:
        return f"{self.first} {self.last}"


@dataclass
class Task:
    """The fixed part of one task, replayed in each of its trials: the customer, their records in this task (the
    one the request is about, `target`, among them), their profile's extra fields, and the kind's own data."""

    person: Person
    records: list[dict[str, Any]]
    target: dict[str, Any]
    profile: dict[str, Any] = field(default_factory=dict)
    data: dict[str, Any] = field(default_factory=dict)


class Core:
    """A drawn domain's shared pieces; the task kinds install themselves through it."""

    def __init__(self, dom: PlantedDomain, theme: Theme, naming: Naming, shapes: Shapes, talk: Talk,
                 user_tools: bool) -> None:
        self.dom, self.theme, self.naming, self.shapes, self.talk = dom, theme, naming, shapes, talk
        self.user_tools = user_tools
        """Whether the source shows the user's own tool calls (tau2 and OpenAI JSONL do; tau-bench and ToolSandbox
        logs hold the user's words only)."""
        t, f = theme, naming.field
        self.person_key = f(f"{t.person} id")
        self.record_key = f(f"{t.record} id")
        self.lookup = self.tool("get", t.person, f"Look up a {t.person} by their {t.id_label}: name, "
                                f"{t.records} and profile.", {self.person_key: STR})
        if shapes.record_shape == "list":
            self.read = self.tool("get", f"{t.person} {t.records}", f"List every {t.record} of a {t.person}, "
                                  "with all its details.", {self.person_key: STR})
        else:
            self.read = self.tool("get", t.record, f"Get one {t.record} with all its details.",
                                  {self.record_key: STR})
        self.decoy = self.tool("get", t.decoy, f"Show the current {t.decoy}. Informational only.", {})
        self.used_acts: set[Act] = set()
        """The theme's writes some kind of this domain already made its own (each kind has its own tools)."""
        self.used_info: Any = None
        """The field the answer kind asks about (the information-gathering kind asks about another)."""
        self.option_count = 4
        """How many options a search lists (the domain's `option_count`)."""

    # ---- tools and kinds --------------------------------------------------------------------------------------------
    def tool(self, verb: str, obj: str, description: str, params: dict[str, Any], kind: str = "read") -> str:
        """Add a tool named in the domain's style (every parameter required); returns its name."""
        name = self.naming.tool(verb, obj)
        self.dom.add_tools([{"type": "function", "function": {
            "name": name, "description": description,
            "parameters": {"type": "object", "properties": params, "required": list(params)}}}], {name: kind})
        return name

    def write_tool(self, act: Act, extra: dict[str, Any] | None = None, also: str = "") -> str:
        """Add the write `act` makes on a record (by its id, with the act's argument and any `extra` ones); its
        description says what it does, then `also`."""
        params = {self.record_key: STR}
        if act.arg:
            params[self.naming.field(act.arg[0])] = {"type": "string", "enum": list(act.arg[1])}
        params.update(extra or {})
        what = self.generic(act)
        return self.tool(act.verb, act.obj, f"{what[:1].upper()}{what[1:]}.{also}", params, "write")

    def gated_plan(self, gate: Gate, act: Act, p_matters: float) -> Callable[..., Task]:
        """The plan of a task asking for `act` on a record whose `gate` field allows it, or (the `p_matters` share
        of tasks) forbids it."""
        def plan(rng: random.Random, person: Person, k: int) -> Task:
            allowed = not self.balanced(k, p_matters)
            task = self.task(rng, person, {gate.field: rng.choice(gate.allowed if allowed else gate.blocked)})
            task.data.update(allowed=allowed, arg=self.arg_value(act, rng))
            return task

        return plan

    def take_act(self, rng: random.Random) -> Act:
        """A write of the theme no other kind of this domain uses yet."""
        free = [a for a in self.theme.acts if a not in self.used_acts]
        act = rng.choice(free)
        self.used_acts.add(act)
        return act

    @staticmethod
    def balanced(k: int, p: float) -> bool:
        """Whether the `k`-th task of a kind falls in the class of share `p` (a low-discrepancy sequence: any run of
        tasks of the kind holds close to that share, so a deficit matters as often as its kind says)."""
        return (k * 0.6180339887498949 + 0.5) % 1.0 < p

    def add_kind(self, name: str, deficit: PlantedDeficit, p_matters: float, plan: Callable[..., Task],
                 simulate: Callable[..., TaskOutcome], rng: random.Random) -> None:
        """Register the kind and its deficit. Its share of tasks is set so that every kind fails about as many runs
        (the rate a deficit shows at is its rate times how often it matters), give or take a tenth: each planted
        deficit then stands for a fair share of the failed runs, as a capability worth mining does."""
        self.dom.add_deficit(deficit)
        share = rng.uniform(0.9, 1.1) / max(0.05, deficit.rate * p_matters)
        self.dom.add_kind(TaskKind(name=name, share=share, simulate=simulate, exposure=frozenset({deficit.name}),
                                   plan=plan))

    # ---- customers and records --------------------------------------------------------------------------------------
    def draw_person(self, rng: random.Random) -> Person:
        first, last = rng.choice(FIRST), rng.choice(LAST)
        return Person(make_id(self.theme.person_id, rng, first, last), first, last)

    def new_record(self, rng: random.Random, **state: Any) -> dict[str, Any]:
        """A record of the customer's with random values, `state` fields set as given."""
        t = self.theme
        about = {t.title_field: rng.choice(t.titles), **{i.field: rng.choice(i.values) for i in t.info}}
        s = {g.field: rng.choice(g.allowed + g.blocked) for g in t.gates}
        s[t.claim.field] = rng.choice((t.claim.claimed,) + t.claim.other)
        s.update(state)
        return {"id": make_id(t.record_id, rng), "about": about, "state": s}

    def task(self, rng: random.Random, person: Person, target_state: dict[str, Any] | None = None,
             others: int | None = None) -> Task:
        """A task about one target record among the customer's one to three records."""
        target = self.new_record(rng, **(target_state or {}))
        n = rng.randint(0, 2) if others is None else others
        records = [target] + [self.new_record(rng) for _ in range(n)]
        rng.shuffle(records)
        return Task(person, records, target)

    # ---- what the agent does ----------------------------------------------------------------------------------------
    def authenticate(self, b: Builder, rng: random.Random, task: Task) -> None:
        """The agent looks the customer up, and, at the decoy's flag, reads the optional decoy first or after."""
        decoy = b.flags.get(DECOY, False)
        before = rng.random() < 0.5
        if decoy and before:
            self.read_decoy(b)
        f = self.naming.field
        profile = {self.person_key: task.person.pid, "name": task.person.name,
                   f(f"{self.theme.record} ids"): [r["id"] for r in task.records],
                   **{f(k): v for k, v in task.profile.items()}}
        b.call(self.lookup, {self.person_key: task.person.pid}, profile)
        if decoy and not before:
            self.read_decoy(b)

    def read_decoy(self, b: Builder) -> None:
        b.call(self.decoy, {}, {"updated": "2025-05-01", "notice": f"No changes to the {self.theme.decoy} this week."})

    def read_record(self, b: Builder, task: Task, rec: dict[str, Any]) -> None:
        """The agent reads `rec` (by its id, or the customer's list that holds it)."""
        t = self.theme
        if self.shapes.record_shape == "list":
            b.call(self.read, {self.person_key: task.person.pid},
                   self.shapes.list_view(t.record, task.records, f"{t.person} id", task.person.pid))
        else:
            b.call(self.read, {self.record_key: rec["id"]},
                   self.shapes.record_view(t.record, rec, f"{t.person} id", task.person.pid))

    def write(self, b: Builder, tool: str, rec: dict[str, Any], act: Act, **args: Any) -> dict[str, Any]:
        """The agent makes `tool` on `rec`; returns the call's arguments (for the expected actions)."""
        call_args = {self.record_key: rec["id"], **{self.naming.field(k): v for k, v in args.items()}}
        b.call(tool, call_args, self.shapes.ok(self.theme.record, rec["id"], act.done))
        return call_args

    def says(self, act: Act, rec: dict[str, Any], arg: str | None = None) -> str:
        """How the customer asks for `act` on `rec` (with the value they want for its argument)."""
        text = act.says.format(record=self.theme.record, id=rec["id"])
        return f"{text} ({self.field_words(act.arg[0])}: {arg})" if act.arg and arg is not None else text

    def generic(self, act: Act) -> str:
        """The act as the policy names it ("renew a loan")."""
        a = article(self.theme.record)
        text = act.says.replace("my {record} {id}", a).replace("the {record} {id}", a).replace("{record} {id}", a)
        return text.replace(" my ", " a ").replace("{record}", self.theme.record)

    def agent_says(self, act: Act, rec: dict[str, Any], arg: str | None = None) -> str:
        """The same in the agent's words ("renew your loan LN-12345")."""
        text = self.says(act, rec, arg)
        for mine, yours in ((" my ", " your "), (" I'm ", " you're "), (" me ", " you ")):
            text = text.replace(mine, yours)
        return text

    def arg_value(self, act: Act, rng: random.Random) -> str | None:
        return rng.choice(act.arg[1]) if act.arg else None

    def act_args(self, act: Act, arg: str | None) -> dict[str, Any]:
        return {act.arg[0]: arg} if act.arg else {}

    def refuse(self, b: Builder, rng: random.Random, reason: str) -> None:
        """The agent declines, saying why; the customer takes it."""
        b.say(f"{self.talk.apology(rng, reason)} {self.talk.anything_else(rng)}")
        b.user(self.talk.ack(rng) if rng.random() < 0.5 else f"{self.talk.no_more(rng)} {self.talk.thanks(rng)}")

    def done(self, act: Act, rec: dict[str, Any]) -> str:
        """The agent's report of a write it made."""
        form = ("Done! I've processed your request to {what}.", "That's taken care of: {what}.",
                "Your request to {what} has been completed.")[sum(map(ord, rec["id"])) % 3]
        return form.format(what=self.agent_says(act, rec))

    def field_words(self, name: str) -> str:
        return name.replace("_", " ")


def expected(name: str, args: dict[str, Any]) -> GroundTruthAction:
    return GroundTruthAction(name=name, arguments=args)


__all__ = ["DECOY", "STR", "Core", "Person", "Task", "expected"]
