"""Record-backed worlds for the capability families: scenario records drawn from the target's real records, tools
that act on them honestly, and the pieces every family's scenario is made of (the user's opening and facts, the
policy's decision on a record, confirmation questions, refusals).

Records start as real results of the read tool (fresh key ids, one owner per scenario, every other value as it was)
and must still satisfy the invariants learned from the real ones after a family sets the field its scenario turns on.
Writes change the state the next read shows: a cancelled reservation stays cancelled, and cancelling it again is an
error; a write whose prerequisite does not hold yet fails with the target's error until another write puts it in place
(`unmet_prerequisite`); a tool the env cannot run is not offered to the agent.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import lru_cache
from typing import Any, Literal

import numpy as np

from trace_envs.jsontext import dumps
from trace_envs.runtime.backend import is_id_name
from trace_envs.runtime.base import TraceEnv
from trace_envs.runtime.phrases import key_noun
from trace_envs.runtime.records import example_for, fixed_positions, get_path, like_id, set_path, unique_ids
from trace_envs.runtime.scenario import ToolError
from trace_envs.spec.model import CapabilitySpec, ListedRecords, ToolSpec
from trace_envs.spec.rules import Decision
from trace_envs.trajectories.invariants import NOW, date_key, is_date, leaf_paths, owner_violations, values_at, violations

DEFAULT_HANDOFF_RESULT = "Transfer successful"


class ScenarioError(RuntimeError):
    """The spec's records cannot make the scenario its family needs (validation reports it; nothing is published)."""


def key_example(spec: CapabilitySpec, key: str) -> str:
    """An example value of the key argument, from any tool's schema examples or result, else a generic id."""
    for tool in spec.tools:
        schema = tool.properties.get(key)
        if isinstance(schema, dict) and schema.get("examples"):
            return str(schema["examples"][0])
    for tool in spec.tools:
        if isinstance(tool.result_example, dict) and isinstance(tool.result_example.get(key), str):
            return tool.result_example[key]
    return "ID1234"


def owner_field(spec: CapabilitySpec) -> str | None:
    """The record field naming the records' owner: the policy's, else an owner invariant learned from the runs."""
    if spec.rules.identify_user:
        return spec.rules.identify_user
    return next((i.path for i in spec.invariants if i.kind == "owner" and i.path), None)


def _one_record(result: Any) -> dict[str, Any] | None:
    """A result that is one record: a dict, or a search's list that found exactly one (ToolSandbox's contacts)."""
    if isinstance(result, list) and len(result) == 1:
        result = result[0]
    return result if isinstance(result, dict) else None


def copy_record(record: Any) -> Any:
    """A copy of a record (parsed JSON) whose dicts and lists are new and whose strings and numbers are the record's
    own: they cannot change. Twice as fast as a JSON round trip (a reset copies the spec's records it draws)."""
    if isinstance(record, dict):
        return {k: copy_record(v) if isinstance(v, (dict, list)) else v for k, v in record.items()}
    if isinstance(record, list):
        return [copy_record(v) if isinstance(v, (dict, list)) else v for v in record]
    return record


class RecordSource:
    """Scenario records drawn from the read tool's real records: a fresh id under `key`, the scenario's owner under
    the owner field, everything else as the real record had it."""

    def __init__(self, spec: CapabilitySpec, read: str | None, key: str, rng: np.random.Generator):
        self.spec, self.key, self.rng = spec, key, rng
        self.lists, self.pool, self.owner_field, owners, self.example, self.mask = _pool_of(spec, read, key)
        # the scenario's user is any of the real owners (a fresh id in its shape), not always the first one's twin
        self.owner = like_id(owners[int(rng.integers(len(owners)))], rng) if owners else None
        self.issued: set[str] = set()

    def fresh_id(self) -> str:
        """An id no record of this scenario has, shaped like the real ones (drawn when needed: resets stay cheap)."""
        for _ in range(1000):
            rid = unique_ids(self.example, 1, self.rng, self.mask)[0]
            if rid not in self.issued:
                self.issued.add(rid)
                return rid
        raise ScenarioError(f"ids shaped like {self.example!r} run out: the real ones leave too few free positions")

    def draw(self, accept: Callable[[dict[str, Any]], bool] | None = None,
             prepare: Callable[[dict[str, Any]], list[dict[str, Any]]] | None = None) -> dict[str, Any] | None:
        """A record that `accept`s (tried over the pool in a random order), or None when no real record does.

        `prepare(record)` may return variants of a record (e.g. with the checked field set to each value) to try,
        copies that leave `record` as it was."""
        for i in self.rng.permutation(len(self.pool)):
            # `prepare` returns copies (it must: the pool is the spec's own records); a plain draw copies here
            base = self.pool[int(i)] if prepare else copy_record(self.pool[int(i)])
            for record in (prepare(base) if prepare else [base]):
                # A real record keeps the invariants learned from it; a prepared variant must be checked.
                if prepare is not None and breaks_invariants(self.spec, record):
                    continue
                if accept is None or accept(record):
                    record[self.key] = self.fresh_id()
                    # a record that is the user's own (an account keyed by the user's id) is no record the user owns
                    if self.owner_field and self.owner is not None and self.owner_field in record and \
                            self.owner_field != self.key:
                        set_path(record, self.owner_field, self.owner)
                    return record
        return None

    def records(self, n: int, accept: Callable[[dict[str, Any]], bool] | None = None) -> list[dict[str, Any]]:
        """`n` records (real ones may repeat under fresh ids when the pool is small)."""
        out = []
        for _ in range(n):
            record = self.draw(accept)
            if record is None:
                raise ScenarioError(f"no record of {self.spec.name}'s read tool satisfies the scenario's conditions")
            out.append(record)
        # Records keyed by their owner's id (a client's login status under `clientId`) are each another user's own
        # record under a fresh id, as `draw` leaves them: only an owner field apart from the key must agree.
        owned = [i for i in self.spec.invariants if not (i.kind == "owner" and i.path == self.key)]
        if owner_violations(out, owned):
            raise ScenarioError("the scenario's records have several owners")
        return out


def listing_of(spec: CapabilitySpec, read: str | None, key: str | None) -> ListedRecords | None:
    """How `read` lists the records keyed by `key`, when the spec says it lists them (`ToolSpec.lists`)."""
    if not read or not key:
        return None
    lists = spec.tool(read).lists
    return lists if lists is not None and lists.id == key else None


def _pool_of(spec: CapabilitySpec, read: str | None, key: str) -> tuple:
    """What a `RecordSource` draws from, a function of the spec alone, read once per spec rather than on every reset:
    the listing, the real records (never changed: a draw copies one), the owner field, the real owners, an example
    key and the positions every real key shares."""
    return _memo(spec, ("pool", read, key), lambda: _read_pool(spec, read, key))


def _read_pool(spec: CapabilitySpec, read: str | None, key: str) -> tuple:
    # Without a read (a booking addressed by the member id the user states), the record is the key alone.
    tool = spec.tool(read) if read else None
    lists = listing_of(spec, read, key)
    if lists is not None and tool is not None:
        # a read that lists the owner's records: the records are the list's items, the owner the read's argument
        pool = _listed_pool(tool, lists)
    else:
        pool = [r for r in map(_one_record, tool.result_examples) if r is not None] if tool else []
    if tool and not pool and _one_record(tool.result_example) is not None:
        pool = [_one_record(tool.result_example)]
    pool = pool or [{}]
    field = owner_field(spec) if lists is None else None
    owners = [v for r in pool for v in values_at(r, field or "") if isinstance(v, str)]
    if lists is not None and tool is not None:
        owners = _listing_owners(tool, lists)
    keys = [r[key] for r in pool if isinstance(r.get(key), str)]
    return lists, pool, field, owners, key_example(spec, key), fixed_positions(keys)


def _items(result: Any, path: str) -> list[dict[str, Any]]:
    found, node = get_path(result, path) if path else (True, result)
    return [x for x in node if isinstance(x, dict)] if found and isinstance(node, list) else []


def _listed_pool(tool: ToolSpec, lists: ListedRecords) -> list[dict[str, Any]]:
    """The distinct records a listing read's real results listed (first seen first)."""
    seen: dict[str, dict[str, Any]] = {}
    for result in [*tool.result_examples, tool.result_example]:
        for item in _items(result, lists.path):
            if isinstance(item.get(lists.id), str):
                seen.setdefault(json.dumps(item, sort_keys=True), item)
    return list(seen.values())


def _listing_owners(tool: ToolSpec, lists: ListedRecords) -> list[str]:
    """Real values of the listing read's argument: its examples, else the owner field its results echo."""
    schema = tool.properties.get(lists.by)
    owners = [e for e in (schema.get("examples") or [] if isinstance(schema, dict) else []) if isinstance(e, str)]
    for result in [*tool.result_examples, tool.result_example]:
        if isinstance(result, dict) and isinstance(result.get(lists.by), str):
            owners.append(result[lists.by])
    return owners


def owner_label(lists: ListedRecords) -> str:
    """The fact under which the user states whose records a listing read lists ("member id")."""
    return lists.by.replace("_", " ")


def list_records(tool: ToolSpec, lists: ListedRecords, state: dict[str, Any], args: dict[str, Any],
                 owner: str | None) -> Any:
    """A listing read's reply: every record of the scenario in the list (the scenario's records are its owner's,
    the user who states `owner`), inside the real result's wrapper with the owner's id where it echoes it; another
    owner's id is not found."""
    value = args.get(lists.by)
    if owner is None or value != owner:
        raise ToolError(f"{lists.by} {value!r} not found")
    records = [copy_record(r) for r in state["records"].values()]
    state["reads"].extend(rid for rid in state["records"])
    example = next((r for r in [*tool.result_examples, tool.result_example] if _items(r, lists.path)), None)
    if not lists.path or not isinstance(example, dict):
        return records
    reply = copy_record(example)
    if lists.by in reply:
        reply[lists.by] = owner
    set_path(reply, lists.path, records)
    return reply


# A record no stated rule decides: the scenario must not use it (see `time_neutral`).
Verdict = Decision | Literal["undecided"]
_WINDOW = re.compile(r"\bwithin (\d{1,4}) (hours?|days?)\b", re.I)


@lru_cache(maxsize=256)  # asked of every record a scenario tries, always of the same policy
def policy_window(policy: str) -> timedelta:
    """The longest time window the policy text states ("within 24 hours of booking"), zero when it states none."""
    spans = [timedelta(hours=int(n)) if unit.lower().startswith("hour") else timedelta(days=int(n))
             for n, unit in _WINDOW.findall(policy)]
    return max(spans, default=timedelta(0))


def _rule_has_dates(spec: CapabilitySpec, tool: str) -> bool:
    rule = spec.rules.rule(tool)
    if rule is None:
        return False

    def dated(conditions) -> bool:
        return any(c.op in ("before", "after") or dated(c.also) for c in conditions)

    return dated(rule.requires) or dated(rule.allows) or dated(rule.handoff)


def _before_now(spec: CapabilitySpec) -> set[str]:
    """The date paths the learned order invariants put before the current time, directly or through another
    (`passengers.*.dob <= created_at <= $now`)."""
    orders = [(i.before, i.after) for i in spec.invariants if i.kind == "order"]
    past, grown = {NOW}, True
    while grown:
        grown = False
        for before, after in orders:
            if after in past and before not in past:
                past.add(before)
                grown = True
    return past - {NOW}


def time_neutral(spec: CapabilitySpec, record: dict[str, Any], exempt: str | None = None) -> bool:
    """Whether no condition on dates the policy may state can decide `record`: its dates the runs show always
    before the current time (`created_at`, a birth date) lie farther back than the longest window the policy text
    names, and its other dates (a flight's) lie on a later day than today, so no segment is flown. Without a stated
    current time every record is neutral. `exempt` is the path a scenario sets itself."""
    if not spec.rules.now:
        return True
    now = datetime.fromisoformat(spec.rules.now)
    past = _before_now(spec)
    oldest = date_key((now - policy_window(spec.policy)).isoformat(timespec="seconds"))
    today = now.date().isoformat()
    for path, values in leaf_paths(record).items():
        if path == exempt or not values or not all(is_date(v) for v in values):
            continue
        keys = [date_key(v) for v in values]
        if path in past:
            if any(k > oldest if len(k) > 10 else k[:10] >= oldest[:10] for k in keys):
                return False
        elif any(k[:10] <= today for k in keys):
            return False
    return True


@dataclass(frozen=True)
class Gate:
    """The record field a scenario turns on and the values on each side of it."""

    field: str
    allowed: tuple[Any, ...]
    blocked: tuple[Any, ...]


def decide(spec: CapabilitySpec, tool: str, record: dict[str, Any], gate: Gate | None,
           facts: dict[str, str] | None = None) -> Verdict:
    """What the shown policy says about `tool` on `record`: by the spec's rules when they name the tool, else by the
    gate's field alone (allowed values allow; others block). When the rules for `tool` say nothing about dates, a
    record that a date rule of the policy text could still decide (a flown segment, a booking within the cancellation
    window) is `undecided`, and no scenario uses it: the checked condition alone must decide."""
    # Every reset tries the same few real records (before their fresh ids are set) with the same values: the verdict
    # is kept per spec, keyed by the record's text and the facts the tool's rule reads, if it reads any.
    labels = _memo(spec, ("labels", tool), lambda: _fact_labels(spec, tool))
    known = {**spec.rules.user_facts, **(facts or {})} if labels else {}
    read = tuple((label, known.get(label)) for label in labels)
    return _memo(spec, ("decide", tool, gate, read, record), lambda: _decide(spec, tool, record, gate, facts))


def breaks_invariants(spec: CapabilitySpec, record: dict[str, Any]) -> bool:
    """Whether a record a scenario prepared breaks an invariant learned from the real ones (kept per record text)."""
    return _memo(spec, ("invariants", record), lambda: bool(violations(record, spec.invariants, spec.rules.now)))


_MEMOS: dict[int, tuple[CapabilitySpec, dict[tuple, Any]]] = {}


def _memo(spec: CapabilitySpec, key: tuple, compute: Callable[[], Any]) -> Any:
    """`compute()`, kept per spec under `key`, whose dict and list parts are keyed by their JSON text; computed afresh
    when a part holds what neither JSON nor a hash can key. Every per-spec result of this module (a record source's
    pool, a verdict, an invariant check) is kept here."""
    try:
        key = tuple(dumps(k) if isinstance(k, (dict, list)) else k for k in key)
        hash(key)
    except (TypeError, ValueError, RecursionError):
        return compute()
    memo = _MEMOS.get(id(spec))
    if memo is None or memo[0] is not spec:
        if len(_MEMOS) >= 64:  # a process generating spec after spec keeps the recent ones
            _MEMOS.clear()
        memo = _MEMOS[id(spec)] = (spec, {})
    kept = memo[1]
    if key not in kept:
        if len(kept) >= 8192:
            kept.clear()
        kept[key] = compute()
    return kept[key]


def _fact_labels(spec: CapabilitySpec, tool: str) -> tuple[str, ...]:
    """The facts `tool`'s rule reads (its `fact:` conditions, at any depth)."""
    rule = spec.rules.rule(tool)
    labels: set[str] = set()

    def collect(conditions) -> None:
        for c in conditions:
            if c.path.startswith("fact:"):
                labels.add(c.path[5:])
            collect(c.also)

    for conditions in ((rule.requires, rule.allows, rule.handoff) if rule else ()):
        collect(conditions)
    return tuple(sorted(labels))


def _decide(spec: CapabilitySpec, tool: str, record: dict[str, Any], gate: Gate | None,
            facts: dict[str, str] | None) -> Verdict:
    if not _rule_has_dates(spec, tool) and not time_neutral(spec, record, gate.field if gate else None):
        return "undecided"
    if spec.rules.rule(tool) is not None:
        return spec.rules.decide(tool, record, facts)
    if gate is None:
        return "allowed"
    found, value = get_path(record, gate.field)
    return "allowed" if found and value in gate.allowed else "blocked"


def gated_record(source: RecordSource, tool: str, gate: Gate, want: Decision, flip: Decision,
                 facts: dict[str, str]) -> tuple[dict[str, Any], Any]:
    """A record the policy decides as `want` with the gate's field set to one of its values, and as `flip` were the
    field set to a value of the other side: the checked rule alone decides. Returns the record and its value."""
    mine = gate.allowed if want == "allowed" else gate.blocked
    other = gate.blocked if want == "allowed" else gate.allowed
    spec = source.spec
    chosen: dict[str, Any] = {}

    def variants(record: dict[str, Any]) -> list[dict[str, Any]]:
        out = []
        for i in source.rng.permutation(len(mine)):
            r = copy_record(record)
            set_path(r, gate.field, mine[int(i)])
            out.append(r)
        return out

    def accept(record: dict[str, Any]) -> bool:
        if decide(spec, tool, record, gate, facts) != want:
            return False
        for value in other:
            flipped = copy_record(record)
            set_path(flipped, gate.field, value)
            if decide(spec, tool, flipped, gate, facts) == flip and not breaks_invariants(spec, flipped):
                chosen["value"] = get_path(record, gate.field)[1]
                return True
        return False

    record = source.draw(accept, variants)
    if record is None:
        raise ScenarioError(
            f"no record lets {gate.field} alone decide {tool}: none is {want} with {gate.field} in {list(mine)} and "
            f"{flip} with it in {list(other)} under the spec's rules"
        )
    return record, chosen["value"]


# ---- actions an oracle emits ------------------------------------------------------------------------------------------
def call(name: str, /, **arguments: Any) -> str:
    """An action string for one tool call (what an oracle emits); a tool may itself take an argument `name`."""
    return json.dumps({"name": name, "arguments": arguments}, sort_keys=True)


def fill_arguments(tool: ToolSpec, fixed: dict[str, Any]) -> dict[str, Any]:
    """Arguments for `tool`: the `fixed` ones plus each other required argument's first example value."""
    args = dict(fixed)
    for name in tool.required:
        if name not in args:
            schema = tool.properties.get(name, {})
            args[name] = copy.deepcopy(example_for(schema if isinstance(schema, dict) else {}, name))
    return args


def mirrored_request(tool: ToolSpec, record: dict[str, Any], taken: set[str], shift: Callable[[], timedelta]
                     ) -> dict[str, Any]:
    """Request values for the write's list arguments that restate a list the record holds under the same name (a
    reservation's `flights`, its `passengers`), drawn from that list instead of from another record's example: the new
    flights a user asks for are on the reservation's own route, its passengers as many as it has. Each item keeps the
    fields the example's items have; the dates move by `shift()` days (a change of date), everything else stays.
    Arguments in `taken` are left alone; a list whose items lack a field the example's items have is not mirrored."""
    out: dict[str, Any] = {}
    for name in tool.required:
        held = record.get(name)
        if name in taken or not isinstance(held, list) or not held or not all(isinstance(i, dict) for i in held):
            continue
        schema = tool.properties.get(name, {})
        example = example_for(schema if isinstance(schema, dict) else {}, name)
        if not isinstance(example, list) or not example or not isinstance(example[0], dict):
            continue
        fields = list(example[0])
        if not fields or not all(f in item for item in held for f in fields):
            continue
        moved = shift()
        out[name] = [{f: _moved(item[f], moved) for f in fields} for item in held]
    return out


def held_ids(tool: ToolSpec, record: dict[str, Any], taken: set[str]) -> dict[str, Any]:
    """Values for the write's id arguments that the record itself holds under the same name (`payment_id` in a
    reservation's payment history): the user's own card, not the card of the real call the example came from, which
    every scenario's user would otherwise ask for whoever they are. The first value found, depth first."""
    out: dict[str, Any] = {}
    wanted = [a for a in tool.required if a not in taken and is_id_name(a)]
    if not wanted:
        return out
    paths = leaf_paths(record)
    for name in wanted:
        found = next((v for path, values in paths.items() if path.rsplit(".", 1)[-1] == name
                      for v in values if isinstance(v, str) and v), None)
        if found is not None:
            out[name] = found
    return out


def _moved(value: Any, shift: timedelta) -> Any:
    """A date string `shift` later, in its own format; any other value as it is."""
    if isinstance(value, str) and is_date(value) and len(value) == 10:
        return (datetime.strptime(value, "%Y-%m-%d") + shift).strftime("%Y-%m-%d")
    return copy.deepcopy(value)


def canonical_json(value: Any) -> str:
    """Arguments as the user states them in a request: JSON with sorted keys (deterministic text)."""
    return json.dumps(value, sort_keys=True)


def words(name: str) -> str:
    """`cancel_reservation` -> `cancel reservation`, `reassignApprover` -> `reassign approver`: a tool's name as an
    agent says it (a question holding "reassignApprover" names no reassigning to a reader of words)."""
    return re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name).replace("_", " ").lower()


def listing(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


# ---- state and honest tools -----------------------------------------------------------------------------------------
def new_state(records: dict[str, dict]) -> dict[str, Any]:
    return {"records": records, "reads": [], "writes": []}


def read_record(state: dict[str, Any], key: str, args: dict[str, Any]) -> str:
    """The record as the tool's JSON reply: serialising is the snapshot (later writes do not change what was read)."""
    rid = args.get(key)
    record = state["records"].get(rid) if isinstance(rid, str) else None
    if record is None:
        raise ToolError(f"{key} {rid!r} not found")
    state["reads"].append(rid)
    return dumps(record)


def write_record(state: dict[str, Any], tool: str, key: str, args: dict[str, Any]) -> dict[str, Any]:
    rid = args.get(key)
    if not isinstance(rid, str) or rid not in state["records"]:
        raise ToolError(f"{key} {rid!r} not found")
    state["writes"].append({"tool": tool, "args": copy.deepcopy(args)})
    return {"success": True, key: rid, "action": tool}


def apply_write(spec: CapabilitySpec, state: dict[str, Any], name: str, key: str, args: dict[str, Any]) -> Any:
    """Do the write on its record: arguments naming a field of the record replace it, the tool's effect (e.g. status
    cancelled) is applied, and the reply is the updated record when the target answers with one. A write whose
    effect is already in place is an error, as the target's would be (cancelling a cancelled reservation)."""
    rid = args.get(key)
    record = state["records"].get(rid) if isinstance(rid, str) else None
    if record is None:
        raise ToolError(f"{key} {rid!r} not found")
    tool = spec.tool(name)
    if tool.effect and all(record.get(f) == v for f, v in tool.effect.items()):
        done = ", ".join(f"{words(f)} {v}" for f, v in tool.effect.items())
        raise ToolError(f"{key_noun(key)} {rid} already has {done}")
    refused = unmet_prerequisite(state, name, record)
    if refused:
        note_failure(state, name, args)
        raise ToolError(refused)
    state.pop("failures", None)  # the records changed: a call that failed before may succeed now
    receipt = write_record(state, name, key, args)
    for arg, value in args.items():
        if arg != key and arg in record:
            record[arg] = copy.deepcopy(value)
    record.update(copy.deepcopy(tool.effect))
    for path, value in state.get("effects", {}).get(name, {}).items():
        set_path(record, path, copy.deepcopy(value))
    example = tool.result_example
    return copy.deepcopy(record) if isinstance(example, dict) and key in example else receipt


def unmet_prerequisite(state: dict[str, Any], name: str, record: dict[str, Any]) -> str | None:
    """The error text a write returns, as the target's does, while a prerequisite the scenario set for it does not
    hold: `state["prerequisites"][name]` lists `{"path", "value", "error"}` (the record must hold `value` at `path`;
    another write's `state["effects"]` can put it there), and `state["unavailable"][name]` is an error it always
    returns (a cause no tool of the env removes)."""
    blocked = state.get("unavailable", {}).get(name)
    if blocked:
        return str(blocked)
    for need in state.get("prerequisites", {}).get(name, []):
        if "setting" in need:  # a device-wide setting another tool sets (ToolSandbox's cellular), not a record field
            if state.get("settings", {}).get(need["setting"]) != need["value"]:
                return str(need["error"])
            continue
        found, value = get_path(record, need["path"])
        if not found or value != need["value"]:
            return str(need["error"])
    return None


def note_failure(state: dict[str, Any], name: str, args: dict[str, Any]) -> None:
    """Keep the failed write; the same call failing again with nothing changed in between (no write succeeded) sets
    `state["repeated_failure"]`, which a check can hold against a retry loop."""
    call_text = canonical_json([name, args])
    failures = state.setdefault("failures", [])
    if call_text in failures:
        state["repeated_failure"] = True
    else:
        failures.append(call_text)


class RecordEnv(TraceEnv):
    """A TraceEnv whose tools act on records keyed by the spec's `key` role: the `read` tool returns the record, a
    write tool that takes the key changes it, the `handoff` tool records the transfer. Only these tools are offered."""

    def __init__(self, **kwargs: Any):
        super().__init__(**kwargs)
        working = [t for t in self.tool_specs if self.works(t)]
        if len(working) != len(self.tool_specs):
            from trace_envs.runtime.base import tool_schema

            self.tool_specs = working
            self._tools = {t.name: t for t in working}
            self._schemas = [tool_schema(t) for t in working]
        roles = self.SPEC.roles
        self._listing = listing_of(self.SPEC, roles.get("read"), roles.get("key"))  # read on every read's step

    def works(self, tool: ToolSpec) -> bool:
        """Whether this env can run `tool` honestly."""
        roles = self.SPEC.roles
        if tool.name in (roles.get("read"), roles.get("handoff")):
            return True
        return tool.kind == "write" and roles.get("key") in tool.properties

    def run_tool(self, name: str, args: dict[str, Any], state: dict[str, Any]) -> Any:
        roles = self.SPEC.roles
        key = roles["key"]
        if name == roles.get("read"):
            lists = self._listing
            if lists is not None:
                owner = self.scenario.facts.get(owner_label(lists)) if self.scenario is not None else None
                return list_records(self.SPEC.tool(name), lists, state, args, owner)
            return read_record(state, key, args)
        if name == roles.get("handoff"):
            state.setdefault("handoffs", []).append(dict(args))
            example = self.SPEC.tool(name).result_example
            return example if isinstance(example, str) and example else DEFAULT_HANDOFF_RESULT
        if name in self._tools and self._kinds.get(name) == "write":
            return apply_write(self.SPEC, state, name, key, args)
        raise ToolError(f"{name} is not available in this environment")
