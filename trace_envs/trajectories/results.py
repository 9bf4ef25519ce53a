"""What the agent saw in real tool results, indexed for the capability families' parameter inference.

A precondition, refusal or handoff needs the record field the policy turns on and its values; grounding needs the
result field an argument's value comes from; aggregation a numeric field; information gathering a field to ask about.
`ResultIndex` keeps, per read tool, the flattened results the agent saw, the records that preceded each write in passed
runs, and where a write argument's value appeared earlier; `gate_params` reads a policy gate off it. The families'
`infer_params` turn these into parameters.

A read may answer with a list of records (`get_holds(member_id) -> {"holds": [{"hold_id": ..., "status": ...}, ...]}`)
while a write takes one record's own id (`cancel_hold(hold_id)`). Such a read is *listing* (`listed_records`): each
listed record is indexed by its own id field, the field whose values the runs' later calls pass as arguments, with
its paths relative to the record; so the record a write targeted is the one its gate, claim, condition and amount
are learned from, not the list's first item.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from collections import Counter, defaultdict
from typing import Any, Callable, Iterable

from trace_envs.language.confirmations import DEFAULT_ASK, asks_to_confirm, declines
from trace_envs.language.sentences import sentences as split_sentences
from trace_envs.language.words import FUNCTION_WORDS, verb_synonyms
from trace_envs.trajectories.models import Run
from trace_envs.jsontext import shared_loads

MAX_ENUM_VALUES = 8
MAX_RESULTS_PER_TOOL = 400
MAX_OPENINGS = 200
MIN_LISTED_HITS = 2
MIN_IDENTIFIER_SHARE = 0.8


def flatten(record: Any, prefix: str = "", depth: int = 0) -> dict[str, Any]:
    """Dotted paths to scalar leaves (lists: first item only), as the templates address record fields."""
    out: dict[str, Any] = {}
    if depth > 3:
        return out
    if isinstance(record, (dict, list)):
        _flatten_into(out, record, prefix, depth)
    elif prefix and isinstance(record, (str, int, float)):
        out[prefix[:-1]] = record
    return out


def _flatten_into(out: dict[str, Any], record: dict[str, Any] | list[Any], prefix: str, depth: int) -> None:
    # `flatten` written into one dict (mining flattens every read result several times)
    if depth >= 3:
        return  # what lies one level down is past the depth
    items = record.items() if isinstance(record, dict) else [("0", record[0])] if record else ()
    for k, v in items:
        if not isinstance(k, str) or not _plain_key(k):
            continue
        if isinstance(v, (dict, list)):
            _flatten_into(out, v, f"{prefix}{k}.", depth + 1)
        elif isinstance(v, (str, int, float)):
            out[f"{prefix}{k}"] = v


@lru_cache(maxsize=4096)
def _plain_key(key: str) -> bool:
    return key.replace("_", "").isalnum()


MAX_LIST_WRAPPER_LEAVES = 3


def record_lists(data: Any) -> list[tuple[str, list[dict[str, Any]]]]:
    """(dotted path, items) of the list of records a result *is*: the result itself when it is a list of objects
    (path ""), or the one field of an object that holds such a list beside at most MAX_LIST_WRAPPER_LEAVES other
    values (an owner id, a count). A record that merely contains a list (a reservation's payment history beside its
    dozen fields) lists nothing: the reservation is the record."""
    if isinstance(data, list):
        return [("", data)] if data and all(isinstance(x, dict) for x in data) else []
    if not isinstance(data, dict):
        return []
    lists = [(k, v) for k, v in data.items() if isinstance(k, str) and isinstance(v, list) and v
             and all(isinstance(x, dict) for x in v)]
    if len(lists) != 1:
        return []
    path, items = lists[0]
    rest = flatten({k: v for k, v in data.items() if k != path})
    return [(path, items)] if len(rest) <= MAX_LIST_WRAPPER_LEAVES else []


def items_at(data: Any, path: str) -> list[dict[str, Any]]:
    """The records of the list at `path` of a parsed result (see `record_lists`); empty when there is none."""
    node = data
    for part in path.split(".") if path else []:
        node = node.get(part) if isinstance(node, dict) else None
    return [x for x in node if isinstance(x, dict)] if isinstance(node, list) else []


def listed_record(data: Any, lists: tuple[str, str] | list[str], arguments: dict[str, Any]) -> dict[str, Any] | None:
    """The flattened record of a listing read's parsed result (`lists`: (list path, id field), see `listed_records`)
    whose own id a later call passes among its `arguments`; None when it lists none of them."""
    path, field = lists
    ids = {v for v in arguments.values() if isinstance(v, str)}
    return next((flatten(item) for item in items_at(data, path) if item.get(field) in ids), None)


def listed_records(runs: Iterable[Run], kinds: dict[str, str]) -> dict[str, tuple[str, str]]:
    """Read tool -> (path of its result's list of records, the records' own id field), for reads whose listed
    records the runs' later calls address one by one: the item field whose values later agent calls (of another tool)
    pass as an argument most often, seen at least MIN_LISTED_HITS times. A list whose items no call picks out (a
    search's options, a payment history) is no list of records to index; nor is one a read answers for words (a
    search's `query: "Ulysses"`): a listing read takes whose records to list, an identifier (a digit, no space) in
    most of its calls."""
    hits: Counter = Counter()
    keyed: dict[str, list[int]] = defaultdict(lambda: [0, 0])  # read -> [calls by identifiers, calls]
    for run in runs:
        shown: dict[str, set[tuple[str, str, str]]] = defaultdict(set)  # value -> (read, list path, field)
        for call in run.tool_calls:
            if call.requestor != "agent":
                continue
            if kinds.get(call.name) == "read" and call.result and not call.error:
                values = [v for v in call.arguments.values() if isinstance(v, str)]
                keyed[call.name][0] += bool(values) and all(_identifier(v) for v in values)
                keyed[call.name][1] += 1
                try:
                    data = shared_loads(call.result)
                except (ValueError, RecursionError):
                    data = None
                for path, items in record_lists(data):
                    for item in items:
                        for field, value in item.items():
                            if isinstance(value, str) and value:
                                shown[value].add((call.name, path, field))
                continue
            for value in call.arguments.values():
                if isinstance(value, str):
                    for read, path, field in shown.get(value, ()):
                        if read != call.name:
                            hits[(read, path, field)] += 1
    best: dict[str, tuple[int, str, str]] = {}
    for (read, path, field), n in hits.items():
        by_id, calls = keyed[read]
        if by_id < MIN_IDENTIFIER_SHARE * calls:
            continue
        if n >= MIN_LISTED_HITS and (read not in best or (n, path, field) > best[read]):
            best[read] = (n, path, field)
    return {read: (path, field) for read, (_, path, field) in best.items()}


def _identifier(value: str) -> bool:
    """A value that names a record or person (`M-1042`, `emp_77`), not words: a digit and no space."""
    return any(c.isdigit() for c in value) and not any(c.isspace() for c in value)


class ResultIndex:
    """For each read tool and key argument, the flattened results the agent saw, in order, per run; a listing read's
    records also by their own ids (`listed`)."""

    def __init__(self, runs: Iterable[Run], kinds: dict[str, str],
                 verdicts: Callable[[Run], dict[int, bool]] | None = None):
        """`verdicts(run)`, when given, says of the run's calls (by position in `run.tool_calls`) which writes the
        source's expected actions make (True) and which they do not (False): `judged` then keeps the records read
        before each, so that a gate is learned from failed runs too (the values present when a write was wrong)."""
        self.kinds = kinds
        self.judged: dict[tuple[str, str, str], dict[str, dict[Any, list[int]]]] = defaultdict(
            lambda: defaultdict(lambda: defaultdict(lambda: [0, 0])))
        self.fields: dict[str, dict[str, Counter]] = defaultdict(lambda: defaultdict(Counter))
        self.before_write: dict[tuple[str, str, str], dict[str, Counter]] = defaultdict(lambda: defaultdict(Counter))
        self.arg_sources: dict[tuple[str, str, str], Counter] = defaultdict(Counter)
        # (earlier read, later read, argument) -> paths of the earlier read's record holding the later read's argument
        # (a zip code read off an account, then passed to an outage lookup), in passed runs
        self.read_sources: dict[tuple[str, str, str], Counter] = defaultdict(Counter)
        self.openings: dict[str, list[tuple[str, dict[str, str]]]] = defaultdict(list)
        # (read, write) -> field -> value -> [records the passed runs then wrote, records they read and left alone
        # though the user asked for the write's action]: which field separates the two, whoever failed
        self.outcomes: dict[tuple[str, str], dict[str, dict[Any, list[int]]]] = defaultdict(
            lambda: defaultdict(lambda: defaultdict(lambda: [0, 0])))
        writes = sorted(t for t, k in kinds.items() if k == "write")
        seen_per_tool: Counter = Counter()
        runs = list(runs)
        # per write, the words its users ask for it with (`request_vocabularies`)
        self.asked_words = request_vocabularies(runs, writes)
        self.listed = listed_records(runs, kinds)
        for run in runs:
            if run.success:
                for name in {c.name for c in run.agent_calls if kinds.get(c.name) != "read"}:
                    if len(self.openings[name]) < MAX_OPENINGS:
                        args = {k: v for c in run.agent_calls for k, v in c.arguments.items() if isinstance(v, str)}
                        self.openings[name].append((run.request_text(), args))
            last: dict[tuple[str, str], dict[str, Any]] = {}  # (read tool, key value) -> flattened result
            last_of: dict[str, dict[str, Any]] = {}  # read tool -> its latest flattened result
            found_by: dict[tuple[str, str], dict[str, Any]] = {}  # as `last`, one-record searches included
            listed_ids: set[str] = set()  # keys of `last` that are listed records' own ids
            addressed = {v for c in run.agent_calls for v in c.arguments.values() if isinstance(v, str)} \
                if self.listed else set()
            user_text = run_user_text(run) if self.listed else ""
            judged = verdicts(run) if verdicts is not None else {}
            for pos, call in enumerate(run.tool_calls):
                if call.requestor != "agent":
                    continue
                kind = kinds.get(call.name)
                if pos in judged:
                    self._judge(call, judged[pos], last)
                if kind == "read" and run.success:
                    for arg, value in call.arguments.items():
                        for read, flat in last_of.items():
                            if read != call.name and isinstance(value, (str, int)):
                                for path, field_value in flat.items():
                                    if field_value == value:
                                        self.read_sources[(read, call.name, arg)][path] += 1
                if kind == "read" and call.result and not call.error:
                    flat = _flat_result(call.result)
                    # A search that found one record (ToolSandbox's search_contacts) supplies that record's values.
                    found = flat or _flat_result(call.result, single=True)
                    for value in call.arguments.values():
                        if isinstance(value, str) and found:
                            found_by[(call.name, value)] = found
                    records = self._listed(call.name, call.result)
                    for rid, record in records:
                        found_by[(call.name, rid)] = record
                    if not flat and not records:
                        continue
                    if seen_per_tool[call.name] < MAX_RESULTS_PER_TOOL:
                        seen_per_tool[call.name] += 1
                        for path, value in flat.items():
                            self.fields[call.name][path][_hashable(value)] += 1
                        # each listed record the run dealt with (a call took its id, or the user named it)
                        # counts once, under its own paths (a gate's field is the record's): the rest of the list
                        # is no record anyone read for a request, as a one-record read's is
                        for rid, record in records:
                            if rid not in addressed and rid.lower() not in user_text:
                                continue
                            for path, value in record.items():
                                self.fields[call.name][path][_hashable(value)] += 1
                    if flat:
                        last_of[call.name] = flat
                        for value in call.arguments.values():
                            if isinstance(value, str):
                                last[(call.name, value)] = flat
                    for rid, record in records:
                        last[(call.name, rid)] = record
                        listed_ids.add(rid)
                elif kind in ("write", "other"):
                    if run.success:
                        for read, flat in last_of.items():
                            for path, field_value in flat.items():
                                self.before_write[(read, call.name, "*")][path][_hashable(field_value)] += 1
                    for arg, value in call.arguments.items():
                        if not isinstance(value, str):
                            continue
                        for (read, key_value), flat in last.items():
                            if key_value == value and run.success:
                                for path, field_value in flat.items():
                                    self.before_write[(read, call.name, arg)][path][_hashable(field_value)] += 1
                        for (read, _), flat in found_by.items():
                            for path, field_value in flat.items():
                                if field_value == value and run.success:
                                    self.arg_sources[(read, call.name, arg)][path] += 1
            if run.success and last:
                self._outcomes(run, writes, last, listed_ids)

    def _listed(self, read: str, raw: str) -> list[tuple[str, dict[str, Any]]]:
        """(own id, flattened record) of each record a listing read's result lists (see `listed_records`)."""
        where = self.listed.get(read)
        if where is None:
            return []
        try:
            data = shared_loads(raw)
        except (ValueError, RecursionError):
            return []
        path, field = where
        return [(item[field], flatten(item)) for item in items_at(data, path)
                if isinstance(item.get(field), str) and item[field]]

    def _outcomes(self, run: Run, writes: list[str], last: dict[tuple[str, str], dict[str, Any]],
                  listed_ids: set[str] = frozenset()) -> None:  # type: ignore[assignment]
        """What a passed run did with each record it read, for every write the user asked for by its verb: wrote it
        (a call of the write took the record's key value) or left it alone. A listed record (`listed_ids`) left alone
        counts only when the user named it: the rest of the customer's list was never asked about."""
        asked_text = run_user_text(run)
        heard = plain_words(asked_text)
        declined: bool | None = None  # computed when a record left alone would count
        for write in writes:
            values = {str(v) for c in run.agent_calls if c.name == write and not c.error
                      for v in c.arguments.values() if isinstance(v, (str, int))}
            if not (values or asks_for(write, asked_text, heard, self.asked_words.get(write, []))):
                continue
            for (read, key_value), flat in last.items():
                side = 0 if key_value in values else 1
                if side and values:  # it wrote another record: this one was only read
                    continue
                if side and key_value in listed_ids and key_value.lower() not in asked_text:
                    continue
                if side:
                    declined = declined_confirmation(run) if declined is None else declined
                    if declined:
                        break  # the user said no when asked: their choice, not the record, left it alone
                for path, field_value in flat.items():
                    self.outcomes[(read, write)][path][_hashable(field_value)][side] += 1

    def _judge(self, call: Any, warranted: bool, last: dict[tuple[str, str], dict[str, Any]]) -> None:
        for arg, value in call.arguments.items():
            if not isinstance(value, str):
                continue
            for (read, key_value), flat in last.items():
                if key_value == value:
                    for path, field_value in flat.items():
                        self.judged[(read, call.name, arg)][path][_hashable(field_value)][0 if warranted else 1] += 1

    def enum_fields(self, read: str) -> dict[str, Counter]:
        """String fields of `read`'s results with a few recurring values (a cabin class, a status, a yes/no)."""
        out = {}
        total = max((sum(c.values()) for c in self.fields.get(read, {}).values()), default=0)
        for path, values in self.fields.get(read, {}).items():
            if (
                2 <= len(values) <= MAX_ENUM_VALUES
                and (all(isinstance(v, str) for v in values) or all(isinstance(v, bool) for v in values))
                and sum(values.values()) >= max(3, total // 3)
            ):
                out[path] = values
        return out

    def numeric_fields(self, read: str) -> list[str]:
        return sorted(
            path
            for path, values in self.fields.get(read, {}).items()
            if values and all(isinstance(v, (int, float)) for v in values) and len(values) > 2
        )


def _flat_result(raw: str, single: bool = False) -> dict[str, Any]:
    """A record result flattened; with `single`, also a list that holds exactly one record."""
    try:
        data = shared_loads(raw)
    except (ValueError, RecursionError):
        return {}
    if single and isinstance(data, list) and len(data) == 1:
        data = data[0]
    return flatten(data) if isinstance(data, dict) else {}


def _hashable(value: Any) -> Any:
    return value if isinstance(value, (str, int, float)) else json.dumps(value, sort_keys=True)


def gate_params(index: ResultIndex, read: str, action: str, key: str, min_support: int = 5) -> dict[str, Any] | None:
    """The enum field of `read`'s records whose values shift most between all results and the records that preceded
    `action` in passed runs: values over-represented before the action are `allowed`, the rest `blocked`."""
    ranked = gate_candidates(index, read, action, key, min_support)
    return ranked[0] if ranked else None


def gate_candidates(index: ResultIndex, read: str, action: str, key: str, min_support: int = 5
                    ) -> list[dict[str, Any]]:
    """Every enum field that splits as `gate_params` says, the strongest shift first."""
    before = index.before_write.get((read, action, key), {})
    scored: list[tuple[float, str, list[str], list[str]]] = []
    for path, values in sorted(index.enum_fields(read).items()):
        seen = before.get(path, Counter())
        support = sum(seen[v] for v in values)
        if support < min_support:
            continue
        base_total = sum(values.values())
        ratios = {v: (seen[v] / support) / (n / base_total) for v, n in values.items()}
        allowed = sorted((v for v, r in ratios.items() if r >= 1.0), key=str)
        blocked = sorted((v for v, r in ratios.items() if r < 1.0), key=str)
        if not allowed or not blocked:
            continue
        scored.append(((max(ratios.values()) - min(ratios.values())) * min(1.0, support / 10), path, allowed, blocked))
    scored.sort(key=lambda t: (-t[0], t[1]))
    return [{"field": path, "allowed": allowed, "blocked": blocked} for _, path, allowed, blocked in scored]


def judged_gate(index: ResultIndex, read: str, action: str, key: str, min_each: int = 2) -> dict[str, Any] | None:
    """The enum field of `read`'s records that best separates the records read before writes the expected actions
    make (`allowed` values) from those read before writes they do not make (`blocked`): each side seen at least
    `min_each` times, the purest split first. None without such verdicts (see `ResultIndex`)."""
    seen = index.judged.get((read, action, key), {})
    best: tuple[float, str, list[str], list[str]] | None = None
    for path in sorted(index.enum_fields(read)):
        counts = seen.get(path, {})
        good = sum(a for a, _ in counts.values())
        bad = sum(b for _, b in counts.values())
        if good < min_each or bad < min_each:
            continue
        allowed = sorted((v for v, (a, b) in counts.items() if a / good >= b / bad), key=str)
        blocked = sorted((v for v, (a, b) in counts.items() if a / good < b / bad), key=str)
        if not allowed or not blocked:
            continue
        right = sum(counts[v][0] for v in allowed) + sum(counts[v][1] for v in blocked)
        score = right / (good + bad)
        if best is None or score > best[0]:
            best = (score, path, allowed, blocked)
    if best is None or best[0] < 0.75:
        return None
    return {"field": best[1], "allowed": best[2], "blocked": best[3]}


def outcome_gate(index: ResultIndex, read: str, write: str, min_each: int = 2) -> dict[str, Any] | None:
    """The enum field of `read`'s records that best separates the records passed runs wrote (`allowed` values) from
    the ones they read and left alone though the user asked for the write (`blocked`): the evidence of runs that got
    it right, whether or not the failing runs ever read the record. Each side seen at least `min_each` times and the
    split at least 90% pure; None otherwise."""
    seen = index.outcomes.get((read, write), {})
    best: tuple[float, int, str, list[Any], list[Any]] | None = None
    for path in sorted(index.enum_fields(read)):
        counts = seen.get(path, {})
        wrote = sum(a for a, _ in counts.values())
        left = sum(b for _, b in counts.values())
        if wrote < min_each or left < min_each:
            continue
        allowed = sorted((v for v, (a, b) in counts.items() if a / wrote >= b / left), key=str)
        blocked = sorted((v for v, (a, b) in counts.items() if a / wrote < b / left), key=str)
        if not allowed or not blocked:
            continue
        right = sum(counts[v][0] for v in allowed) + sum(counts[v][1] for v in blocked)
        score = right / (wrote + left)
        if best is None or (score, wrote + left) > best[:2]:
            best = (score, wrote + left, path, allowed, blocked)
    if best is None or best[0] < 0.9:
        return None
    return {"field": best[2], "allowed": best[3], "blocked": best[4]}


_ASK = re.compile(DEFAULT_ASK)


def declined_confirmation(run: Run) -> bool:
    """Whether the user answered an agent's confirmation question with a no ("No, thank you.", "Actually, I've
    changed my mind.")."""
    messages = run.messages
    for i, m in enumerate(messages[:-1]):
        if m.get("role") == "assistant" and asks_to_confirm(m.get("content"), _ASK, [], []):
            reply = next((n for n in messages[i + 1:] if n.get("role") == "user"), None)
            if reply is not None and declines(reply.get("content")):
                return True
    return False


def run_user_text(run: Run) -> str:
    """Every user message of the run, lower-cased."""
    return "\n".join(m["content"].lower() for m in run.messages
                     if m.get("role") == "user" and isinstance(m.get("content"), str))


_ID_TOKEN = re.compile(r"(?<![\w-])(?=[\w#-]*\d)[\w#-]{3,}(?![\w-])")


def distinctive_requests(index: ResultIndex, tool: str, key: str, limit: int = 5, min_runs: int = 2) -> list[str]:
    """Sentences users said in passed runs that called `tool` and seldom said in those that called the other
    non-read tools: what they asked when `tool` was the answer (a billing dispute before a transfer), not what every
    user says (handing over an id, greeting). The `key` value becomes `{target}`; said in `min_runs` runs at least,
    at least three times as often (per run) as elsewhere; the most distinctive first."""
    def said(opening: str, args: dict[str, str]) -> dict[str, str]:
        out = {}  # shape (ids as <id>) -> template
        value = args.get(key)
        handed = [v for k, v in args.items() if k != key and len(v) >= 3 and v != value]
        for sentence in split_sentences(opening):
            sentence = sentence.strip()
            if any(v in sentence for v in handed):
                continue  # the user hands over an id the agent then passes on ("my client id is C225"): no request
            template = sentence.replace(value, "{target}") if value else sentence
            if template.count("{target}") <= 1 and "{" not in template.replace("{target}", ""):
                out[_ID_TOKEN.sub("<id>", sentence.lower())] = template
        return out

    mine: Counter = Counter()
    templates: dict[str, Counter] = defaultdict(Counter)
    ours = index.openings.get(tool, [])
    for opening, args in ours:
        for shape, template in said(opening, args).items():
            mine[shape] += 1
            templates[shape][template] += 1
    rest: Counter = Counter()
    others = 0
    for other, openings in index.openings.items():
        if other == tool:
            continue
        for opening, args in openings:
            others += 1
            rest.update(said(opening, args).keys())
    lift = {s: (n / len(ours)) / ((rest[s] + 1) / (others + 1)) for s, n in mine.items() if n >= min_runs}
    ranked = sorted((s for s, x in lift.items() if x >= 3), key=lambda s: (lift[s], s), reverse=True)
    return [templates[s].most_common(1)[0][0] for s in ranked[:limit]]


_PLAIN_WORD = re.compile(r"[a-z][a-z'-]+")


def request_vocabularies(runs: Iterable[Run], tools: Iterable[str], limit: int = 4, min_runs: int = 2
                         ) -> dict[str, list[str]]:
    """Per tool, the words users say when they ask for it and seldom otherwise: in the user's turns before its first
    successful call, in half the runs that make one or more (and `min_runs` at least), at least three times as often
    per run as in the runs that make none; the most common first. How a domain's users name an action its tool's
    name does not ("make appointment APT796299 a video visit" for `appointments.convert`, "take enrollment E1
    pass/fail" for `grading_options.change`), which an agent restating the request names it by too."""
    tools = list(tools)
    with_tool = {t: Counter() for t in tools}
    without = {t: Counter() for t in tools}
    made = Counter()
    total = 0
    for run in runs:
        total += 1
        first: dict[str, int] = {}
        for c in run.agent_calls:
            if not c.error and c.name in with_tool:
                first.setdefault(c.name, c.message_index)
        said: list[tuple[int, set[str]]] = [
            (i, {w for w in _PLAIN_WORD.findall(m["content"].lower()) if len(w) >= 3 and w not in FUNCTION_WORDS})
            for i, m in enumerate(run.messages) if m.get("role") == "user" and isinstance(m.get("content"), str)]
        everything = set().union(*(w for _, w in said)) if said else set()
        for t in tools:
            if t in first:
                made[t] += 1
                with_tool[t].update(set().union(*(w for i, w in said if i < first[t])) if said else set())
            else:
                without[t].update(everything)
    out = {}
    for t in tools:
        n, others = made[t], total - made[t]
        lift = {w: (k / n) / ((without[t][w] + 1) / (others + 1)) for w, k in with_tool[t].items()
                if k >= min_runs and k * 2 >= n} if n else {}
        out[t] = sorted((w for w, x in lift.items() if x >= 3), key=lambda w: (-with_tool[t][w], w))[:limit]
    return out


def plain_words(text: str) -> set[str]:
    """The words of lower-cased `text`, as `request_vocabularies` counts them."""
    return set(_PLAIN_WORD.findall(text))


def asks_for(write: str, text: str, said: set[str], vocabulary: list[str]) -> bool:
    """Whether a user's lower-cased `text` (its `plain_words`: `said`) asks for `write`: by a verb for its action, or
    by the words its users ask for it with (`vocabulary`, `ResultIndex.asked_words`; "waive the freeze fee" for
    `removeFreezeFee`)."""
    return any(v in text for v in verb_synonyms(write)) or says_request(said, vocabulary)


def says_request(said: set[str], vocabulary: list[str]) -> bool:
    """Whether the words `said` (`plain_words` of what the user said) hold at least half of a tool's `vocabulary`
    (two words at least)."""
    if len(vocabulary) < 2:
        return False
    return sum(w in said for w in vocabulary) * 2 >= len(vocabulary)
