"""Option selection under the user's constraints: search, pick the one option that meets everything the user said,
then write with it.

The user asks for a write on one of their records (role `key` of `write`, looked up with `read`) that needs an option
found with the `search` tool (a flight, a product variant): the search returns several options, and the user states
their constraints in words: the lowest `params.cost_field` (a dotted path of each option; a `{arg}` segment is the
write argument's value, so `prices.{cabin}` is the price in the reservation's cabin), a bound on
`params.window_field` (a clock time or a number: "departing before 14:30:00"), or both. Exactly one option meets
them. The write's argument `arg` must carry that option's `params.option_id`. Scenario classes, balanced by the seed:
`cheapest` (the lowest cost wins), `window` (the only option inside the bound, never the cheapest) and
`window_cheapest` (the cheapest inside the bound, while the cheapest overall lies outside), with five or more options
listed in a random order but never the right one first, so always taking the cheapest succeeds on a minority of
episodes and always taking the first listed on none. A write
with any other option, or several writes, zeroes the score. Bindings: `target`, `chosen`, `choice` (the argument's
expected value), `options` (every listed option id).

Options are real search results (real prices, times, seats) under fresh ids, with the fields named like a search
argument (origin, destination) set to the scenario's search; the search answers with them only when called with the
arguments the user stated, and with an empty list otherwise.

Options a result keys by their ids inside a record (tau2 retail's `get_product_details`: `{"name", "product_id",
"variants": {item_id: {"item_id", "options": {...}, "available", "price"}}}`) are named by their attributes instead
(`params.match_group`, the nested record whose values users name): the record the user writes on holds an item that is
one variant of one real product (the order's water bottle), the user asks to change it "to one with capacity 1000ml
and color red", and the search (called with the product id the order shows) lists that product's real variants, keyed
by fresh ids, in the target's shape. Classes `match` (the values named fit one variant) and, with a requirement
(`require_field`, e.g. `available`), `match_require` (they fit several, only one of which is available). The write's
`params.replaces` argument must name the item the order holds; the first listed, an unavailable or another variant
scores nothing.

Example episode (airline, change a one-way reservation to the cheapest flight leaving after noon):

    user:  Hi! My user id is omar_davis_3817. I'd like to update the flights of reservation QZ7Y2K. I'm looking for a
           flight with origin ATL, destination JFK and date 2024-05-20. It must have a departure time after
           12:30:00, and among those I want the lowest price. For the cabin and payment id, use the one on my ...
    agent: get_reservation_details(reservation_id=QZ7Y2K)  -> {..., "cabin": "economy", ...}
    agent: search_direct_flight(origin=ATL, destination=JFK, date=2024-05-20)
           -> [{"flight_number": "HAT412", "scheduled_departure_time_est": "06:00:00", "prices": {"economy": 101}},
               {"flight_number": "HAT268", ..."15:00:00", ...{"economy": 164}},
               {"flight_number": "HAT090", ..."13:00:00", ...{"economy": 122}}, ...]
    agent: Here is what I will do: update reservation flights for reservation id QZ7Y2K with {"flights":
           [{"date": "2024-05-20", "flight_number": "HAT090"}], ...}. Do you confirm that I should proceed (yes/no)?
    user:  Yes, please go ahead.
    agent: update_reservation_flights(reservation_id=QZ7Y2K, flights=[{flight_number: HAT090, date: 2024-05-20}], ...)
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from trace_envs.checks.clauses import CallMade, CallRef, Check, NoCall, Order
from trace_envs.families.kit import GOODBYE, Kit
from trace_envs.families.task import Task, register_task
from trace_envs.language import hints
from trace_envs.runtime import Scenario
from trace_envs.runtime.scenario import ToolError
from trace_envs.runtime.phrases import key_noun, path_words
from trace_envs.runtime.records import example_for, fixed_positions, get_path, set_path, unique_ids
from trace_envs.runtime.world import RecordEnv, ScenarioError, call, decide, listing, new_state, words
from trace_envs.spec.model import ToolSpec

CLASSES = ("cheapest", "window", "window_cheapest")
MIN_OPTIONS, MAX_OPTIONS = 5, 8  # listed in a scenario; fewer real options than MIN_OPTIONS list them all
MIN_REAL_OPTIONS = 2
CLOCK = re.compile(r"^(\d{1,2}):(\d{2})(?::(\d{2}))?$")
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


class OptionParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    option_id: str = Field(description="Field of each option that identifies it; the write argument carries it.")
    cost_field: str | None = Field(default=None, description="Numeric option field 'the cheapest' minimises (a dotted "
                                   "path; a `{arg}` segment is the write argument's value, e.g. prices.{cabin}).")
    window_field: str | None = Field(default=None, description="Ordered option field (a clock time or a number) the "
                                     "user bounds.")
    match_field: str | None = Field(default=None, description="Option field the user names a value of (a branch, a "
                                    "colour): only options with that value meet the constraint.")
    window_side: Literal["above", "below"] | None = Field(default=None, description="Which side of the bound the user "
                                                          "wants (at least N seats: above); either when unset.")
    cost_label: str | None = Field(default=None, description="How the user names the cost (e.g. 'price').")
    window_label: str | None = Field(default=None, description="How the user names the bounded field.")
    match_label: str | None = Field(default=None, description="How the user names the matched field.")
    match_group: str | None = Field(default=None, description="A nested record of each option whose fields the user "
                                    "names values of (a product variant's `options`: colour, capacity): the values "
                                    "named single out the options that meet the constraint.")
    require_field: str | None = Field(default=None, description="A field every option chosen must hold at "
                                      "`require_value` (a variant's `available`): another is no choice, whatever the "
                                      "user named.")
    require_value: bool | str | int | None = Field(default=None, description="The value of `require_field` a chosen "
                                                   "option holds.")
    replaces: str | None = Field(default=None, description="The write's argument naming the item of the record the "
                                 "chosen option replaces (the variant the order holds now), when it has one.")

    @model_validator(mode="after")
    def _some_constraint(self) -> "OptionParams":
        if not (self.cost_field or self.window_field or self.match_field or self.match_group):
            raise ValueError("give at least one of cost_field, window_field, match_field, match_group: a constraint "
                             "to choose by")
        if (self.require_field is None) != (self.require_value is None):
            raise ValueError("give require_field and require_value together")
        return self


# ---- values the user compares ---------------------------------------------------------------------------------------
def _order_key(value: Any) -> float | None:
    """A value as a number to compare: numbers as they are, clock times (`06:30:00`) in minutes; None otherwise."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    m = CLOCK.match(value) if isinstance(value, str) else None
    return int(m.group(1)) * 60 + int(m.group(2)) + int(m.group(3) or 0) / 60 if m else None


def _between(low: Any, high: Any) -> Any:
    """A bound strictly between two values, written the way they are (a clock time stays a clock time)."""
    a, b = _order_key(low), _order_key(high)
    assert a is not None and b is not None and a < b
    if isinstance(low, str):
        seconds = round((a + b) * 30)  # the midpoint, in seconds
        hours, rest = divmod(seconds, 3600)
        if low.count(":") == 2 or rest % 60:
            return f"{hours:02d}:{rest // 60:02d}:{rest % 60:02d}"
        return f"{hours:02d}:{rest // 60:02d}"
    if isinstance(low, int) and isinstance(high, int) and high - low >= 2:
        return (low + high) // 2
    return round((a + b) / 2, 4)


def _resolve(path: str, args: dict[str, Any]) -> str:
    """`prices.{cabin}` with the write's `cabin` argument: `prices.economy`."""
    return _PLACEHOLDER.sub(lambda m: str(args.get(m.group(1), m.group(0))), path)


def keyed_records(value: Any) -> list[dict[str, Any]] | None:
    """The records of a dict that keys each record by its own id (tau2 retail's product variants, `{item_id: {"item_id":
    item_id, ...}}`): a listing like a list of records. None for any other value."""
    if not isinstance(value, dict) or not value:
        return None
    for k, v in value.items():
        if not isinstance(v, dict) or not any(str(x) == str(k) for x in v.values()
                                              if isinstance(x, (str, int)) and not isinstance(x, bool)):
            return None
    return list(value.values())


def listing_field(result: Any) -> str | None:
    """The field of a record result that holds its listing keyed by id (a product's `variants`), else None."""
    if not isinstance(result, dict) or keyed_records(result) is not None:
        return None
    return next((k for k, v in result.items() if keyed_records(v) is not None), None)


def options_of(result: Any, option_id: str) -> list[dict[str, Any]]:
    """The options a search result lists: its dict items that carry `option_id` (a dict result counts as one), the
    records of a dict keyed by their ids, or those of such a dict the result holds (a product's variants)."""
    if isinstance(result, list):
        items = result
    else:
        items = keyed_records(result)
        if items is None:
            field = listing_field(result) if not (isinstance(result, dict) and option_id in result) else None
            items = keyed_records(result[field]) or [] if field else [result]
    return [o for o in items if isinstance(o, dict) and isinstance(o.get(option_id), (str, int))]


def _choice_value(tool: ToolSpec, arg: str, option: dict[str, Any], option_id: str, search: dict[str, Any]) -> Any:
    """The write argument that carries the chosen option, shaped like the argument's examples: the id itself, a list
    of it, or objects whose id field is the option's, other fields taken from the search (a date) or the option."""
    schema = tool.properties.get(arg, {})
    example = example_for(schema if isinstance(schema, dict) else {}, arg)

    def item(shape: Any) -> Any:
        if not isinstance(shape, dict):
            return option[option_id]
        if option_id not in shape:
            raise ScenarioError(f"the items of {tool.name}.{arg} have no field {option_id}")
        return {k: option[option_id] if k == option_id else search.get(k, option.get(k, v)) for k, v in shape.items()}

    if isinstance(example, list):
        return [item(example[0] if example else None)]
    return item(example)


class OptionEnv(RecordEnv):
    def works(self, tool: ToolSpec) -> bool:
        return tool.name == self.SPEC.roles.get("search") or super().works(tool)

    def run_tool(self, name: str, args: dict[str, Any], state: dict[str, Any]) -> Any:
        if name != self.SPEC.roles.get("search"):
            return super().run_tool(name, args, state)
        wanted = state["search_args"]
        same = all(str(args.get(a, "")).strip().lower() == str(v).lower() for a, v in wanted.items())
        listing_shape = state.get("listing")
        if listing_shape:  # a record holding its options keyed by id (a product and its variants), as the target's
            if not same:
                missed = next(a for a, v in wanted.items() if str(args.get(a, "")).strip().lower() != str(v).lower())
                raise ToolError(f"{missed} {args.get(missed)!r} not found")
            option_id = str(self.SPEC.params["option_id"])
            return json.dumps({**listing_shape["record"],
                               listing_shape["field"]: {str(o[option_id]): o for o in state["options"]}})
        # A search for another route or day finds nothing: the options exist only where the user asked.
        return json.dumps(state["options"] if same else [])

    def build_scenario(self, rng) -> Scenario:
        spec, params = self.SPEC, self.SPEC.params
        if params.get("match_group"):
            return _group_scenario(self, rng)
        kit = Kit(spec, rng)
        write, key, arg, search = kit.write, kit.key, spec.roles["arg"], spec.roles["search"]
        assert write is not None
        option_id = str(params["option_id"])
        record = _target_record(kit, write, arg, spec.tool(search)) if kit.read else kit.source.draw()
        assert record is not None
        target = record[key]
        kit.knows(target)
        search_tool = spec.tool(search)
        args, stated = kit.write_args(write, record, {arg: None})
        stated.pop(arg, None)
        search_args = {a: _search_value(search_tool, a, record, args, rng) for a in search_tool.required}
        n = max(MIN_OPTIONS, min(MAX_OPTIONS, spec.knobs.entities))
        if params.get("cost_field") and params.get("window_field"):
            cost_path = _resolve(str(params["cost_field"]), args)
            window_path = str(params["window_field"])
            klass = CLASSES[min(int(self.class_draw * len(CLASSES)), len(CLASSES) - 1)]
            options = _draw_options(search_tool, option_id, cost_path, window_path, search_args, n, rng,
                                    _party(record, arg))
            answer, decoy, constraint = _constrain(klass, options, cost_path, window_path, params, rng)
        else:
            cost_path = _resolve(str(params["cost_field"]), args) if params.get("cost_field") else None
            classes = general_classes(params)
            klass = classes[min(int(self.class_draw * len(classes)), len(classes) - 1)]
            options, values = _draw_general(search_tool, option_id, cost_path, params, search_args, n, rng)
            answer, decoy, constraint = _general_constrain(klass, options, values, cost_path, params, rng)
        options = [options[int(i)] for i in rng.permutation(len(options))]
        if options[0] is answer:  # never the first listed: taking the top result by habit is the failure to unlearn
            j = int(rng.integers(1, len(options)))
            options[0], options[j] = options[j], options[0]
        args[arg] = _choice_value(spec.tool(write), arg, answer, option_id, search_args)
        wrong = dict(args, **{arg: _choice_value(spec.tool(write), arg, decoy, option_id, search_args)})
        noun = key_noun(option_id) if key_noun(option_id) != "record" else "option"
        searched = listing([f"{words(a)} {v}" for a, v in search_args.items()])
        opening = (f"{kit.greeting()} I'd like to {kit.phrase(write, target)}. I'm looking for {_article(noun)} {noun} "
                   f"with {searched}. {constraint}")
        if stated:
            opening += f" Use these details: {json.dumps(stated, sort_keys=True)}."
        opening += kit.from_record(write, {k: v for k, v in args.items() if k != arg}, stated)
        read, look = kit.read_calls(target), call(search, **search_args)
        asks = kit.fact_questions(write)
        steps = kit.write_steps(write, target, args)
        done = (f"Done: I have completed the {words(write)} request for {target} with {noun} {answer[option_id]}. "
                f"{GOODBYE}")
        mutants = {
            "drop_required_call": [*read, *asks, *steps, done],
            "swap_calls": [*read, *asks, *steps, look, done],
            "wrong_argument": [*read, *asks, look, *kit.write_steps(write, target, wrong), done],
            "forbidden_extra_call": [*read, *asks, look, *steps, call(write, **wrong), done],
            "text_only": [done],
        }
        others = kit.source.records(spec.knobs.distractors) if kit.read else []
        state = new_state({target: record, **{r[key]: r for r in others}})
        state.update(options=options, search_args=search_args)
        return Scenario(
            state=state,
            bindings={"target": target, "chosen": answer[option_id], "choice": args[arg], "search_args": search_args,
                      "options": [o[option_id] for o in options]},
            opening=opening,
            facts=kit.facts,
            requests=[kit.request(write, target)],
            oracle=[*read, *asks, look, *steps, done],
            mutants=mutants,
            klass=klass,
        )


def _article(noun: str) -> str:
    return "an" if noun[:1].lower() in "aeiou" else "a"


def _target_record(kit: Kit, write: str, arg: str, search: ToolSpec) -> dict[str, Any]:
    """A record the policy allows the write on, preferring one whose current `arg` holds a single item (a one-way,
    one-flight trip when the write replaces its flights with the one chosen), else one whose items make a single
    journey (see `_one_journey`)."""
    spec = kit.spec

    def allowed(record: dict[str, Any]) -> bool:
        return decide(spec, write, record, None, kit.facts) == "allowed"

    record = kit.source.draw(lambda r: allowed(r) and isinstance(r.get(arg), list) and len(r[arg]) == 1)
    record = record or kit.source.draw(lambda r: allowed(r) and _one_journey(r, arg, search.required))
    if record is None:
        raise ScenarioError(f"no real record allows {write} under the spec's rules")
    return record


def _one_journey(record: dict[str, Any], arg: str, fields: list[str]) -> bool:
    """Whether replacing the record's `arg` items with the one option searched on the record's own values (origin,
    destination) keeps the trip what it was: no item has, under one search field, the record's value of another (no
    leg leaves from the destination or returns to the origin: not a round trip, which one direct flight would turn
    into a one-way, against the policy's "without changing the origin, destination, and trip type")."""
    items = [i for i in record.get(arg) or [] if isinstance(i, dict)] if isinstance(record.get(arg), list) else []
    shared = [f for f in fields if f in record and any(f in i for i in items)]
    return not any(i.get(f) == record[g] for i in items for f in shared for g in shared if f != g)


def _search_value(tool: ToolSpec, arg: str, record: dict[str, Any], write_args: dict[str, Any], rng) -> Any:
    """What the user searches by: the write's argument of that name (the product the order holds), else the record's
    field of that name (its origin), else one of the argument's examples."""
    for source in (write_args, record):
        value = source.get(arg)
        if isinstance(value, (str, int, float)) and not isinstance(value, bool):
            return value
    schema = tool.properties.get(arg, {})
    examples = schema.get("examples") if isinstance(schema, dict) else None
    if examples:
        return examples[int(rng.integers(len(examples)))]
    return example_for(schema if isinstance(schema, dict) else {}, arg)


def _party(record: dict[str, Any], arg: str) -> int:
    """How many the write is for: the longest list of items on the record but the argument's own (a reservation's
    passengers, not its flights); one when it has none."""
    sizes = [len(v) for k, v in record.items() if k != arg and isinstance(v, list) and v and isinstance(v[0], dict)]
    return max(sizes, default=1)


def _obtainable(option: dict[str, Any], cost_path: str, need: int) -> bool:
    """Whether the option can be had for `need` at the cost the user compares: every sibling of the cost's table
    keyed like it (`available_seats` beside `prices`, both by cabin) holds at least `need` under the same key. An
    option with no seat left in the cabin is one the policy's agent cannot book, so none is listed: the user's
    constraints alone decide."""
    parent, _, key = cost_path.rpartition(".")
    table = get_path(option, parent)[1] if parent else None
    if not isinstance(table, dict):
        return True
    for value in option.values():
        if value is not table and isinstance(value, dict) and value.keys() == table.keys() and \
                all(as_float(v) is not None for v in value.values()) and value[key] < need:
            return False
    return True


def _draw_options(tool: ToolSpec, option_id: str, cost_path: str, window_path: str, search: dict[str, Any], n: int,
                  rng, need: int = 1) -> list[dict[str, Any]]:
    """`n` real options with distinct costs and distinct bounded values (so exactly one meets the constraints), each
    obtainable for `need` (see `_obtainable`), under fresh ids shaped like the real ones, with the fields named like a
    search argument set to the search's value."""
    pool = _pool(tool, option_id, cost_path, window_path, need)
    chosen: list[dict[str, Any]] = []
    costs: set[float] = set()
    windows: set[float] = set()
    for i in rng.permutation(len(pool)):
        option = pool[int(i)]
        cost, window = float(get_path(option, cost_path)[1]), _order_key(get_path(option, window_path)[1])
        if cost in costs or window in windows:
            continue
        costs.add(cost)
        windows.add(window)
        chosen.append(json.loads(json.dumps(option)))
        if len(chosen) == n:
            break
    if len(chosen) < n:
        raise ScenarioError(f"the real results of {tool.name} hold fewer than {n} options with distinct {cost_path} "
                            f"and {window_path}")
    real = [str(o[option_id]) for o in pool]
    ids = unique_ids(real[0], n, rng, fixed_positions(sorted(set(real))[:50]))
    for option, new_id in zip(chosen, ids):
        numeric = not isinstance(option[option_id], str) and new_id.isdigit()
        option[option_id] = int(new_id) if numeric else new_id
        for a, v in search.items():
            if a in option:
                option[a] = v
    return chosen


_POOLS: dict[tuple[int, str, str, str, int], tuple[ToolSpec, list[dict[str, Any]]]] = {}


def _pool(tool: ToolSpec, option_id: str, cost_path: str, window_path: str, need: int) -> list[dict[str, Any]]:
    """The real options a scenario may list (read, never changed: a drawn one is copied). The same on every reset, so
    filtered once per tool (an airline search's 131 options cost a millisecond a reset)."""
    key = (id(tool), option_id, cost_path, window_path, need)
    kept = _POOLS.get(key)
    if kept is not None and kept[0] is tool:
        return kept[1]
    results = [*tool.result_examples, tool.result_example]
    pool = [o for r in results for o in options_of(r, option_id)]
    pool = [o for o in pool if as_float(get_path(o, cost_path)[1]) is not None
            and _order_key(get_path(o, window_path)[1]) is not None and _obtainable(o, cost_path, need)]
    if len(_POOLS) > 256:
        _POOLS.clear()
    _POOLS[key] = (tool, pool)
    return pool


def as_float(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _constrain(klass: str, options: list[dict[str, Any]], cost_path: str, window_path: str, params: dict[str, Any],
               rng) -> tuple[dict[str, Any], dict[str, Any], str]:
    """The answer of class `klass`, a tempting wrong option, and the user's constraints in words."""
    cost = lambda o: float(get_path(o, cost_path)[1])  # noqa: E731
    window = lambda o: _order_key(get_path(o, window_path)[1])  # noqa: E731
    cost_label = str(params.get("cost_label") or path_words(_PLACEHOLDER.sub("", cost_path).strip(".")))
    window_label = str(params.get("window_label") or path_words(window_path))
    by_cost, by_window = sorted(options, key=cost), sorted(options, key=window)
    cheapest = by_cost[0]
    if klass == "cheapest":
        return cheapest, by_cost[1], f"Of those, I want the one with the lowest {cost_label}."
    n = len(options)
    if klass == "window":  # a single option inside the bound, never the cheapest
        cuts = [(k, side) for k, side in ((n - 1, "after"), (1, "before"))
                if (by_window[-1] if side == "after" else by_window[0]) is not cheapest]
    else:  # several inside the bound, the cheapest overall outside it
        cuts = [(k, "before") for k in range(2, n) if cheapest not in by_window[:k]]
        cuts += [(n - k, "after") for k in range(2, n) if cheapest not in by_window[n - k:]]
    if not cuts:
        raise ScenarioError(f"no bound on {window_path} makes a {klass} scenario of these options")
    k, side = cuts[int(rng.integers(len(cuts)))]
    inside = by_window[:k] if side == "before" else by_window[k:]
    bound = _between(get_path(by_window[k - 1], window_path)[1], get_path(by_window[k], window_path)[1])
    clock = isinstance(get_path(options[0], window_path)[1], str)
    relation = side if clock else {"before": "below", "after": "above"}[side]
    answer = min(inside, key=cost)
    sentence = f"It must have a {window_label} {relation} {bound}"
    if klass == "window":
        return answer, cheapest, sentence + "."
    return answer, cheapest, sentence + f", and among those I want the lowest {cost_label}."


def general_classes(params: dict[str, Any]) -> tuple[str, ...]:
    """The scenario classes the constraints a spec names allow (without both a cost and a bounded field): a named
    value alone decides (`match`), the bound alone (`window`), the lowest cost alone (`cheapest`), or the named value
    with the bound or the cost among the options that have it (`match_window`, `match_cheapest`)."""
    match, window, cost = (bool(params.get(f)) for f in ("match_field", "window_field", "cost_field"))
    if match:
        return ("match", *(["match_window"] if window else []), *(["match_cheapest"] if cost else []))
    return ("window",) if window else ("cheapest",)


def _draw_general(tool: ToolSpec, option_id: str, cost_path: str | None, params: dict[str, Any],
                  search: dict[str, Any], n: int, rng) -> tuple[list[dict[str, Any]], list[str]]:
    """`n` real options (as many as the results hold, at least two) with distinct values of the ordered fields the
    constraints compare, under fresh ids, search fields set to the search's values; and every value of the matched
    field the real options show (the scenario assigns them)."""
    window_path = params.get("window_field")
    ordered = [p for p in (cost_path, window_path) if p]
    results = [*tool.result_examples, tool.result_example]
    pool = [o for r in results for o in options_of(r, option_id)
            if all(_order_key(get_path(o, p)[1]) is not None for p in ordered)]
    chosen: list[dict[str, Any]] = []
    seen: dict[str, set[float]] = {p: set() for p in ordered}
    for i in rng.permutation(len(pool)):
        option = pool[int(i)]
        values = {p: _order_key(get_path(option, p)[1]) for p in ordered}
        if any(values[p] in seen[p] for p in ordered) or any(o[option_id] == option[option_id] for o in chosen):
            continue
        for p in ordered:
            seen[p].add(values[p])
        chosen.append(json.loads(json.dumps(option)))
        if len(chosen) == n:
            break
    if len(chosen) < 2:
        raise ScenarioError(f"the real results of {tool.name} hold fewer than 2 options with distinct "
                            f"{' and '.join(ordered) or option_id}")
    real = [str(o[option_id]) for o in pool]
    ids = unique_ids(real[0], len(chosen), rng, fixed_positions(sorted(set(real))[:50]))
    for option, new_id in zip(chosen, ids):
        numeric = not isinstance(option[option_id], str) and new_id.isdigit()
        option[option_id] = int(new_id) if numeric else new_id
        for a, v in search.items():
            if a in option:
                option[a] = v
    match = params.get("match_field")
    values = sorted({str(get_path(o, match)[1]) for o in pool if get_path(o, match)[0]}) if match else []
    if match and len(values) < 2:
        raise ScenarioError(f"the real results of {tool.name} show fewer than 2 values of {match}")
    return chosen, values


def _general_constrain(klass: str, options: list[dict[str, Any]], values: list[str], cost_path: str | None,
                       params: dict[str, Any], rng) -> tuple[dict[str, Any], dict[str, Any], str]:
    """The answer of class `klass` (see `general_classes`), a tempting wrong option, and the user's constraints in
    words. A named value is assigned to the options here: the answer's group holds it, every other option another
    real value."""
    match, window = params.get("match_field"), params.get("window_field")
    sentences: list[str] = []
    group = list(options)
    if match and klass.startswith("match"):
        wanted = values[int(rng.integers(len(values)))]
        rest = [v for v in values if v != wanted]
        if klass == "match":
            size = 1
        else:  # several share the value: the bound or the cost picks among them, and a tempting one lies outside
            if len(options) < 3:
                raise ScenarioError(f"a {klass} scenario needs at least 3 options, the results hold {len(options)}")
            size = int(rng.integers(2, len(options)))
        order = [int(i) for i in rng.permutation(len(options))]
        group = [options[i] for i in order[:size]]
        for o in options:
            set_path(o, match, wanted if o in group else rest[int(rng.integers(len(rest)))])
        label = params.get("match_label") or path_words(match)
        sentences.append(f"The {label} must be {str(wanted).replace('_', ' ')}.")
    others = [o for o in options if o not in group]
    if klass in ("match", "cheapest", "match_cheapest") and (klass != "match" or len(group) == 1):
        if klass == "match":
            answer = group[0]
            decoy = others[0] if others else group[0]
        else:
            cost = lambda o: float(get_path(o, str(cost_path))[1])  # noqa: E731
            answer = min(group, key=cost)
            cheaper = [o for o in others if cost(o) < cost(answer)]
            decoy = (cheaper or sorted(group, key=cost)[1:] or others)[0]
            label = params.get("cost_label") or path_words(_PLACEHOLDER.sub("", str(cost_path)).strip("."))
            sentences.append(f"{'Among those, I' if match else 'I'} want the one with the lowest {label}.")
        return answer, decoy, " ".join(sentences)
    # a bound on the ordered field: exactly one option of the group is inside it
    key = lambda o: _order_key(get_path(o, str(window))[1])  # noqa: E731
    side = params.get("window_side") or ("above" if rng.random() < 0.5 else "below")
    ranked = sorted(group, key=key, reverse=side == "above")
    answer = ranked[0]
    value = get_path(answer, str(window))[1]
    label = params.get("window_label") or path_words(str(window))
    if isinstance(value, str):  # a clock time: strictly beyond the next one
        bound = _between(*sorted([value, get_path(ranked[1], str(window))[1]], key=_order_key)) if len(ranked) > 1 \
            else value
        sentences.append(f"It must have a {label} {'after' if side == 'above' else 'before'} {bound}.")
    else:
        sentences.append(f"It must have a {label} of at {'least' if side == 'above' else 'most'} {value}.")
    outside = [o for o in others if (key(o) >= key(answer) if side == "above" else key(o) <= key(answer))]
    decoy = (outside or ranked[1:] or others)[0]
    return answer, decoy, " ".join(sentences)


# ---- options named by their attributes (a product's variants) ---------------------------------------------------------
GROUP_CLASSES = ("match", "match_require")


def _listings(tool: ToolSpec, option_id: str, group: str) -> list[dict[str, Any]]:
    """The search's real results that hold their options keyed by id under one field (a product with its variants),
    each with at least 3 options whose `group` is a record of named values: one listing makes one scenario, so the
    options are variants of one product (never a water bottle beside a camera)."""
    out, seen = [], set()
    for result in [*tool.result_examples, tool.result_example]:
        field = listing_field(result)
        options = options_of(result, option_id) if field else []
        if len(options) < 3 or not all(isinstance(o.get(group), dict) and o[group] for o in options):
            continue
        text = json.dumps(result, sort_keys=True)
        if text not in seen:
            seen.add(text)
            out.append(result)
    return out


def _held_items(record: dict[str, Any], option_id: str) -> str | None:
    """The field of `record` listing the items it holds as records carrying `option_id` (an order's `items`)."""
    return next((k for k, v in record.items() if isinstance(v, list) and v
                 and all(isinstance(i, dict) and option_id in i for i in v)), None)


def _name_of(item: dict[str, Any], wrapper: dict[str, Any], option_id: str) -> str | None:
    """How the user names the item: a text field it shares with the listing's record (a product's `name`) that is no
    id."""
    for k, v in wrapper.items():
        if k in item and k != option_id and isinstance(v, str) and not any(ch.isdigit() for ch in v):
            return v
    return None


def _named(values: dict[str, Any]) -> str:
    """`{"capacity": "1000ml", "color": "red"}` -> `capacity 1000ml and color red`."""
    return listing([f"{words(k)} {v}" for k, v in values.items()])


def _group_scenario(env: "OptionEnv", rng) -> Scenario:
    """The user has a record holding an item (an order's water bottle) that is one option of a listing (the product's
    variants) and wants it changed to another option, named by values of the options' `match_group` fields (capacity
    1000ml and color red). Class `match`: the values named fit one option, which meets the requirement; class
    `match_require`: they fit several, and exactly one meets `require_field` (the only one available). The item held
    now, another option, the first listed or one that lacks the requirement score nothing."""
    spec, params = env.SPEC, env.SPEC.params
    kit = Kit(spec, rng)
    write, key, arg, search = kit.write, kit.key, spec.roles["arg"], spec.roles["search"]
    assert write is not None
    option_id, group = str(params["option_id"]), str(params["match_group"])
    need, value = params.get("require_field"), params.get("require_value")
    replaces = params.get("replaces")
    search_tool, write_tool = spec.tool(search), spec.tool(write)
    classes = GROUP_CLASSES if need and isinstance(value, bool) else GROUP_CLASSES[:1]
    klass = classes[min(int(env.class_draw * len(classes)), len(classes) - 1)]
    listings = _listings(search_tool, option_id, group)
    if not listings:
        raise ScenarioError(f"no real result of {search} lists 3 or more options keyed by {option_id} with {group}")
    built = None
    for i in rng.permutation(len(listings)):
        built = _group_pick(listings[int(i)], option_id, group, need, value, klass, rng)
        if built:
            break
    if built is None:
        raise ScenarioError(f"no real listing of {search} makes a {klass} scenario: named {group} values never single "
                            "out one option")
    wrapper, options, current, answer, decoy, wanted = built
    field = listing_field(wrapper)
    assert field is not None
    real = [str(o[option_id]) for o in options]
    ids = unique_ids(real[0], len(options), rng, fixed_positions(sorted(set(real))))
    for option, new_id in zip(options, ids):
        option[option_id] = int(new_id) if not isinstance(option[option_id], str) and new_id.isdigit() else new_id
    options = [options[int(j)] for j in rng.permutation(len(options))]
    if options[0] is answer:  # never the first listed: taking the top result by habit is the failure to unlearn
        j = int(rng.integers(1, len(options)))
        options[0], options[j] = options[j], options[0]
    record_shape = {k: v for k, v in wrapper.items() if k != field}
    search_args = {a: record_shape[a] for a in search_tool.required if a in record_shape}
    if len(search_args) != len(search_tool.required):
        raise ScenarioError(f"the results of {search} do not hold every argument it is searched by")

    def holds(record: dict[str, Any]) -> bool:
        items = _held_items(record, option_id)
        # the item the user names is the only one of its kind on the record
        return decide(spec, write, record, None, kit.facts) == "allowed" and items is not None and not any(
            i.get(k) == v for i in record[items] for k, v in wrapper.items() if k != field and isinstance(v, str))

    record = kit.source.draw(holds) if kit.read else None
    if record is None:
        raise ScenarioError(f"no real record of {kit.read} holds items to change under the spec's rules")
    items = record[str(_held_items(record, option_id))]
    item = items[int(rng.integers(len(items)))]
    for k in list(item):  # the held item becomes the option the record has now, named as the listing names it
        if k in current:
            item[k] = json.loads(json.dumps(current[k]))
        elif k in wrapper and k != field:
            item[k] = wrapper[k]
    name = _name_of(item, wrapper, option_id)
    target = record[key]
    kit.knows(target)
    fixed = {arg: None, **({replaces: _choice_value(write_tool, replaces, current, option_id, search_args)}
                           if replaces else {})}
    args, stated = kit.write_args(write, record, fixed)
    for a in (arg, replaces):
        stated.pop(a, None)
    args[arg] = _choice_value(write_tool, arg, answer, option_id, search_args)
    wrong = dict(args, **{arg: _choice_value(write_tool, arg, decoy, option_id, search_args)})
    thing = f"the {name.lower()}" if name else f"the item {current[option_id]}"
    # as real users ask it: "I'd like to change the wireless earbuds in my order W5061109 to a blue colored one"
    opening = f"{kit.greeting()} I'd like to change {thing} in my {kit.noun} {target} to one with {_named(wanted)}."
    if stated:
        opening += f" Use these details: {json.dumps(stated, sort_keys=True)}."
    opening += kit.from_record(write, {k: v for k, v in args.items() if k not in (arg, replaces)}, stated)
    for k, v in wanted.items():
        kit.facts.setdefault(words(k), str(v))
    read, look = kit.read_calls(target), call(search, **search_args)
    asks = kit.fact_questions(write)
    steps = kit.write_steps(write, target, args)
    noun = key_noun(option_id) if key_noun(option_id) != "record" else "option"
    done = (f"Done: I have completed the {words(write)} request for {target} with {noun} {answer[option_id]}. "
            f"{GOODBYE}")
    mutants = {
        "drop_required_call": [*read, *asks, *steps, done],
        "swap_calls": [*read, *asks, *steps, look, done],
        "wrong_argument": [*read, *asks, look, *kit.write_steps(write, target, wrong), done],
        "forbidden_extra_call": [*read, *asks, look, *steps, call(write, **wrong), done],
        "text_only": [done],
    }
    others = kit.source.records(spec.knobs.distractors)
    state = new_state({target: record, **{r[key]: r for r in others}})
    state.update(options=options, search_args=search_args, listing={"record": record_shape, "field": field})
    return Scenario(
        state=state,
        bindings={"target": target, "chosen": answer[option_id], "choice": args[arg], "search_args": search_args,
                  "options": [o[option_id] for o in options]},
        opening=opening,
        facts=kit.facts,
        requests=[kit.request(write, target)],
        oracle=[*read, *asks, look, *steps, done],
        mutants=mutants,
        klass=klass,
    )


def _group_pick(wrapper: dict[str, Any], option_id: str, group: str, need: str | None, value: Any, klass: str, rng
                ) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any], dict[str, Any], dict[str, Any],
                           dict[str, Any]] | None:
    """From one real listing: (the listing, its options, the one the record holds now, the answer, a tempting wrong
    option, the values the user names), or None when the class cannot be made of it. `match`: the fewest named
    values that fit the answer alone (it meets the requirement); `match_require`: named values that fit the answer
    and others, which then lack the requirement (the only one available)."""
    wrapper = json.loads(json.dumps(wrapper))
    options = options_of(wrapper, option_id)
    fields = sorted({f for o in options for f in o[group]})

    def fits(o: dict[str, Any], named: dict[str, Any]) -> bool:
        return all(o[group].get(f) == v for f, v in named.items())

    for a in rng.permutation(len(options)):
        answer = options[int(a)]
        order = [fields[int(i)] for i in rng.permutation(len(fields))]
        for size in range(1, len(order) + 1):
            named = {f: answer[group][f] for f in order[:size] if isinstance(answer[group].get(f), (str, int))}
            if len(named) < size:
                break
            matching = [o for o in options if fits(o, named)]
            rest = [o for o in options if o not in matching]
            if not rest:
                continue  # every option fits: the values name nothing
            if klass == "match" and len(matching) == 1:
                decoy = max(rest, key=lambda o: sum(o[group].get(f) == v for f, v in named.items()))
                if need:
                    answer[need] = value
                return wrapper, options, rest[int(rng.integers(len(rest)))], answer, decoy, named
            if klass == "match_require" and len(matching) >= 2 and need:
                for o in matching:
                    o[need] = value if o is answer else not value
                decoy = next(o for o in matching if o is not answer)
                return wrapper, options, rest[int(rng.integers(len(rest)))], answer, decoy, named
    return None


class OptionSelection(Task):
    name = "option_selection"
    summary = "Among the options a search returns, pick the one that meets every constraint the user stated."
    roles = ("write", "key", "search", "arg")  # and `read`, the write's record, when it has one
    params = OptionParams
    env_class = OptionEnv

    def hint(self, spec: Any) -> str:
        roles, p = spec.roles, spec.params
        criteria = [p.get(k) or (hints.path_words(p.get(f)) if p.get(f) else "")
                    for k, f in (("window_label", "window_field"), ("match_label", "match_field"),
                                 ("cost_label", "cost_field"), ("", "match_group"), ("", "require_field"))]
        return hints.join([hints.read_first(roles["read"], roles.get("key")) if roles.get("read") else "",
                           hints.choose_option(roles["search"], [c for c in criteria if c], roles["arg"], roles["write"]),
                           hints.confirm(roles["write"]) if spec.rules.confirm_writes else ""])

    def check(self, roles: dict[str, str], params: dict[str, Any], requests: int = 2) -> Check:
        key, write, arg, search = roles["key"], roles["write"], roles["arg"], roles["search"]
        chosen = CallRef(tool=write, args={key: {"$var": "target"}, arg: {"$var": "choice"}})
        return Check(clauses=[
            CallMade(id="chosen_option", weight=3, call=chosen,
                     description=f"{write} with the one option that meets every constraint the user stated"),
            Order(id="searched_first", weight=1, requires=["chosen_option"],
                  first=CallRef(tool=search, args_from="search_args"), then=chosen,
                  description=f"find the options with {search} (for what the user asked) before the write"),
            NoCall(id="no_other_write", penalty=True, call=CallRef(kind="write"), unless=[chosen],
                   description="no write with another option (or on another record)"),
        ])

    def problems(self, spec: Any) -> list[str]:
        out = super().problems(spec)
        search, option_id = spec.roles.get("search"), spec.params.get("option_id")
        if out or not search or not option_id:
            return out
        tool = spec.tool(search)
        listed = [o for r in [*tool.result_examples, tool.result_example] for o in options_of(r, str(option_id))]
        if len(listed) < MIN_REAL_OPTIONS:
            out.append(f"tools.{search}.result_examples list {len(listed)} options with a {option_id} field; the "
                       f"scenarios are built from real options and need at least {MIN_REAL_OPTIONS}")
        return out


register_task(OptionSelection())
