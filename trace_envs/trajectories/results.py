"""What the agent saw in real tool results, indexed for the capability families' parameter inference.

A precondition, refusal or handoff needs the record field the policy turns on and its values; grounding needs the
result field an argument's value comes from; aggregation a numeric field; information gathering a field to ask about.
`ResultIndex` keeps, per read tool, the flattened results the agent saw, the records that preceded each write in passed
runs, and where a write argument's value appeared earlier; `gate_params` reads a policy gate off it. The families'
`infer_params` turn these into parameters.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from typing import Any, Callable, Iterable

from trace_envs.language.sentences import sentences as split_sentences
from trace_envs.language.words import verb_synonyms
from trace_envs.trajectories.models import Run

MAX_ENUM_VALUES = 8
MAX_RESULTS_PER_TOOL = 400
MAX_OPENINGS = 200


def flatten(record: Any, prefix: str = "", depth: int = 0) -> dict[str, Any]:
    """Dotted paths to scalar leaves (lists: first item only), as the templates address record fields."""
    out: dict[str, Any] = {}
    if depth > 3:
        return out
    if isinstance(record, dict):
        for k, v in record.items():
            if not isinstance(k, str) or not k.replace("_", "").isalnum():
                continue
            out.update(flatten(v, f"{prefix}{k}.", depth + 1))
    elif isinstance(record, list) and record:
        out.update(flatten(record[0], f"{prefix}0.", depth + 1))
    elif prefix and isinstance(record, (str, int, float)):
        out[prefix[:-1]] = record
    return out


class ResultIndex:
    """For each read tool and key argument, the flattened results the agent saw, in order, per run."""

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
        for run in runs:
            if run.success:
                for name in {c.name for c in run.agent_calls if kinds.get(c.name) != "read"}:
                    if len(self.openings[name]) < MAX_OPENINGS:
                        args = {k: v for c in run.agent_calls for k, v in c.arguments.items() if isinstance(v, str)}
                        self.openings[name].append((run.request_text(), args))
            last: dict[tuple[str, str], dict[str, Any]] = {}  # (read tool, key value) -> flattened result
            last_of: dict[str, dict[str, Any]] = {}  # read tool -> its latest flattened result
            found_by: dict[tuple[str, str], dict[str, Any]] = {}  # as `last`, one-record searches included
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
                    if not flat:
                        continue
                    if seen_per_tool[call.name] < MAX_RESULTS_PER_TOOL:
                        seen_per_tool[call.name] += 1
                        for path, value in flat.items():
                            self.fields[call.name][path][_hashable(value)] += 1
                    last_of[call.name] = flat
                    for value in call.arguments.values():
                        if isinstance(value, str):
                            last[(call.name, value)] = flat
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
                self._outcomes(run, writes, last)

    def _outcomes(self, run: Run, writes: list[str], last: dict[tuple[str, str], dict[str, Any]]) -> None:
        """What a passed run did with each record it read, for every write the user asked for by its verb: wrote it
        (a call of the write took the record's key value) or left it alone."""
        asked_text = run_user_text(run)
        for write in writes:
            values = {str(v) for c in run.agent_calls if c.name == write and not c.error
                      for v in c.arguments.values() if isinstance(v, (str, int))}
            asked = values or any(v in asked_text for v in verb_synonyms(write))
            if not asked:
                continue
            for (read, key_value), flat in last.items():
                side = 0 if key_value in values else 1
                if side and values:  # it wrote another record: this one was only read
                    continue
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
        data = json.loads(raw)
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


def run_user_text(run: Run) -> str:
    """Every user message of the run, lower-cased."""
    return "\n".join(m["content"].lower() for m in run.messages
                     if m.get("role") == "user" and isinstance(m.get("content"), str))


def request_templates(index: ResultIndex, tool: str, key: str, only: bool = True, limit: int = 5) -> list[str]:
    """How users asked for what `tool` did, in passed runs that called it: the sentences of their first message that
    name the record (its `key` value), with the value replaced by `{target}`; `only`: runs whose first message names
    just that record. The most common first, at most `limit`."""
    counts: Counter = Counter()
    for opening, args in index.openings.get(tool, []):
        value = args.get(key)
        if not value or value not in opening:
            continue
        sentences = [s.strip() for s in split_sentences(opening) if value in s]
        if only and len(sentences) != 1:
            continue
        for sentence in sentences:
            template = sentence.replace(value, "{target}")
            if template.count("{target}") == 1 and "{" not in template.replace("{target}", ""):
                counts[template] += 1
    return [t for t, _ in counts.most_common(limit)]
