"""Detector of error_recovery: how the miner finds it in real runs (see task.py for the env)."""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any

from trace_envs.checks.attribution import FREE_TEXT_ARGS
from trace_envs.checks.clauses import CallMade, CallRef, Check
from trace_envs.language.refusals import refuses_with_reason
from trace_envs.families.error_recovery.task import plain_error
from trace_envs.mining.detector import Detector, Label, Proposal, ProposalContext, register_detector
from trace_envs.trajectories.models import Run, ToolCall
from trace_envs.trajectories.results import ResultIndex
from trace_envs.trajectories.tool_errors import error_message

MIN_RECOVERIES = 2  # passed runs that recovered from one kind of error: one could be luck
MAX_SHAPES = 5
_VALUE = re.compile(r"\S*\d\S*")


# ---- what the runs show -----------------------------------------------------------------------------------------
def error_text(c: ToolCall) -> str:
    """The error a call returned as the target words it: a plain text as it is (`Error: payment method not found`,
    `ValueError: ...`: an env replays it so), the message of a JSON envelope (`{"error": ...}`, `{"message": ...}`,
    `{"detail": ...}`: see `trace_envs.trajectories.tool_errors.error_message`)."""
    text = c.result or ""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return text
    return (error_message(text) or text) if isinstance(data, dict) else text


def error_shape(text: str) -> str:
    """An error's kind: its text with each token holding a digit as `<v>` ("Error: flight <v> not available on date
    <v>"), so the same error on another record is the same kind."""
    return _VALUE.sub("<v>", " ".join(text.split()))[:200]


def _substantive(c: ToolCall) -> bool:
    """A call that can fix something: not a prose-only tool (`think`, `calculate`)."""
    return bool(c.arguments) and not all(k in FREE_TEXT_ARGS for k in c.arguments)


def recoveries(run: Run, tool: str) -> list[tuple[int, str, ToolCall | None, ToolCall | None]]:
    """(position, error shape, fix, retry) for each failed call of `tool` in `run`: the retry is the next successful
    call of `tool`, the fix the last successful substantive call of another tool between the two (None when the
    agent retried without one, or never succeeded)."""
    calls = run.agent_calls
    out = []
    for i, c in enumerate(calls):
        if c.name != tool or not c.error:
            continue
        j = next((j for j in range(i + 1, len(calls)) if calls[j].name == tool and not calls[j].error), None)
        between = calls[i + 1: j] if j is not None else []
        fix = next((b for b in reversed(between) if b.name != tool and not b.error and _substantive(b)), None)
        out.append((i, error_shape(error_text(c)), fix, calls[j] if j is not None else None))
    return out


def learned(ctx: ProposalContext) -> dict[tuple[str, str], list[str]]:
    """(write, fix) -> the error shapes that passed runs recovered from with that fix, in at least MIN_RECOVERIES
    runs, most recovered first."""
    seen: Counter = Counter()
    for run in ctx.runs:
        if not run.success:
            continue
        for tool in ctx.writes:
            hits = {(shape, fix.name) for _, shape, fix, retry in recoveries(run, tool) if fix and retry}
            seen.update((tool, f, s) for s, f in hits)
    out: dict[tuple[str, str], list[str]] = {}
    for (tool, fix, shape), n in sorted(seen.items(), key=lambda x: (-x[1], x[0])):
        if n >= MIN_RECOVERIES:
            out.setdefault((tool, fix), []).append(shape)
    return {k: v[:MAX_SHAPES] for k, v in out.items()}


def _failed_write(write: str) -> Check:
    return Check(applies_if=[CallRef(tool=write)], clauses=[CallMade(id="write_made", call=CallRef(tool=write))])


def _leaves(value: Any, prefix: str = "", depth: int = 0) -> dict[str, set[str]]:
    """Dotted paths of a record's scalar leaves (`*` for the items of a list) to the values there, as JSON."""
    out: dict[str, set[str]] = {}
    if depth > 6:
        return out
    items = value.items() if isinstance(value, dict) else (("*", x) for x in value) if isinstance(value, list) else ()
    for k, x in items:
        for path, values in _leaves(x, f"{prefix}{k}.", depth + 1).items():
            out.setdefault(path, set()).update(values)
    if prefix and not isinstance(value, (dict, list)):
        out[prefix[:-1]] = {json.dumps(value)}
    return out


def _changed(before: dict[str, set[str]], after: dict[str, set[str]]) -> list[tuple[str, str, str]]:
    """(path, old, new) for each single value of a result that differs from the record read before the call."""
    out = []
    for path, values in after.items():
        old, new = _one(before.get(path)), _one(values)
        if old is not None and new is not None and old != new:
            out.append((path, old, new))
    return out


def _one(values: set[str] | None) -> str | None:
    return next(iter(values)) if values and len(values) == 1 else None


def infer_recovery(runs: list[Run], write: str, fix: str, read: str | None, key: str | None, shapes: list[str]
                   ) -> dict[str, Any]:
    """The env's params from the runs: the write's most common error text of the learned shapes; the record field the
    fix changes (a value of its result that differs from the same record, by `key`, read before it) and its values
    before and after, and what the successful write changes likewise;
    a fix that takes no key: a device setting (boolean arguments), or the record fields its arguments came from
    (`fix_by`: `turnOnAutopay(holderId)` with the holderId the permit read shows); the fix's own most common error
    text and the reason it gives; and the cause: a record field whose one value
    before every successful fix and one other value before every failed one tell the two apart."""
    errors: Counter = Counter()
    changes: Counter = Counter()
    sets: Counter = Counter()
    fix_errors: Counter = Counter()
    settings: Counter = Counter()  # the fix's arguments in the recoveries (a fix that takes no key: a device setting)
    address: Counter = Counter()  # write arguments (the write takes no key) equal to the field of that name read
    by: Counter = Counter()  # (fix argument, record path) where a fix without the key took a value the record shows
    outcomes: dict[bool, dict[str, Counter]] = {True: {}, False: {}}  # fix succeeded -> path -> values read before
    named: Counter = Counter()  # (path, value) of a flag of the record the error names, read before a successful fix
    fixed_for: dict[str, dict[str, Any]] = {}  # error text -> the arguments of the fix that removed it
    for run in runs:
        for i, shape, found_fix, retry in recoveries(run, write):
            if shape in shapes:
                errors[error_text(run.agent_calls[i])] += 1
                if found_fix is not None and retry is not None and found_fix.name == fix and key not in \
                        found_fix.arguments:
                    settings[json.dumps(found_fix.arguments, sort_keys=True)] += 1
                    fixed_for.setdefault(error_text(run.agent_calls[i]), found_fix.arguments)
        seen: dict[str, Any] = {}
        for c in run.agent_calls:
            record = _parsed(c.result) if c.name == read and not c.error else None
            if isinstance(record, list) and len(record) == 1:  # a search that found one record
                record = record[0]
            if isinstance(record, dict):
                seen = record
            elif c.name == write and not c.error and key not in c.arguments:
                address.update(a for a, v in c.arguments.items() if a in seen and seen[a] == v)
            elif c.name == fix and not c.error and key not in c.arguments and c.arguments and seen:
                leaves = _leaves(seen)
                by.update((a, path) for a, v in c.arguments.items() for path, values in leaves.items()
                          if "*" not in path and values == {json.dumps(v)})
        known: dict[str, dict[str, set[str]]] = {}  # key value -> the record as the latest reply about it shows it
        for c in run.agent_calls:
            rid = str(c.arguments.get(key or ""))
            before = known.get(rid, {})
            after = _leaves(_parsed(c.result)) if not c.error else {}
            if c.name == write and after:
                sets.update(_changed(before, after))
            if c.name == fix and c.name != read:
                if c.error:
                    fix_errors[error_text(c)] += 1
                for path, values in before.items():
                    outcomes[not c.error].setdefault(path, Counter())[_one(values)] += 1
                changes.update(_changed(before, after))
                if not c.error:
                    named.update(_named_flags(before, errors))
            if c.name == read and after:
                known[rid] = after
            elif after.get(key or "") == {json.dumps(c.arguments.get(key or ""))}:  # a write's reply with the record
                known[rid] = {**before, **after}
    params: dict[str, Any] = {"errors": shapes, "error": errors.most_common(1)[0][0] if errors else shapes[0]}
    if changes:
        (path, old, new), _ = changes.most_common(1)[0]
        params.update(field=path, unready=json.loads(old), ready=json.loads(new))
    elif named:  # no read after the fix shows its change: the flag the error names ("autopay is disabled"), turned
        (path, old), _ = named.most_common(1)[0]
        params.update(field=path, unready=json.loads(old), ready=not json.loads(old))
    elif settings:
        setting = json.loads(settings.most_common(1)[0][0])
        if setting and all(isinstance(v, bool) for v in setting.values()):
            params.update(setting=setting, unsetting={k: not v for k, v in setting.items()})
        elif setting:  # the fix acts on what the record names (its owner's id): the same path in most recoveries
            fixes = sum(settings.values())
            found: dict[str, str] = {}
            for (a, path), n in by.most_common():
                if 2 * n > fixes:
                    found.setdefault(a, path)
            if found and set(found) == set(setting):
                params["fix_by"] = dict(sorted(found.items()))
                said = fixed_for.get(params["error"], {})  # the owner's id the error names, put in per scenario
                params["error_says"] = {a: v for a, v in said.items() if isinstance(v, str) and v in params["error"]}
    if address:
        params["address"] = sorted(address)
    common = {}
    for (path, _, new), _ in sets.most_common():
        common.setdefault(path, json.loads(new))
    params["sets"] = {p: v for p, v in common.items() if p != params.get("field") and "*" not in p}
    if fix_errors:
        text = fix_errors.most_common(1)[0][0]
        params.update(fix_error=text, reason=plain_error(text))
    cause = _cause(outcomes, exclude={params.get("field")})
    if cause is not None:
        params.update(cause=cause[0], cause_ok=json.loads(cause[1]), cause_blocked=json.loads(cause[2]))
    return params


def _named_flags(record: dict[str, set[str]], errors: Counter) -> list[tuple[str, str]]:
    """(path, value) of each flag (a boolean) of `record` whose name the errors seen so far say in words
    ("autopay is disabled on this account" names `autopay`)."""
    said = " ".join(errors).lower().replace("_", " ")
    out = []
    for path, values in record.items():
        value = _one(values)
        name = path.split(".")[-1].replace("_", " ").lower()
        if value in ("true", "false") and len(name) >= 3 and re.search(rf"\b{re.escape(name)}\b", said):
            out.append((path, value))
    return out


def _cause(outcomes: dict[bool, dict[str, Counter]], exclude: set[Any]) -> tuple[str, str, str] | None:
    """The path with one value before every successful fix and another before every failed one (most calls first)."""
    found = []
    for path, ok in outcomes[True].items():
        bad = outcomes[False].get(path)
        if path in exclude or not bad or len(ok) != 1 or len(bad) != 1:
            continue
        (v_ok, n_ok), (v_bad, n_bad) = next(iter(ok.items())), next(iter(bad.items()))
        if v_ok is not None and v_bad is not None and v_ok != v_bad:
            found.append((-(n_ok + n_bad), path, v_ok, v_bad))
    return min(found)[1:] if found else None


def _parsed(text: str | None) -> Any:
    try:
        return json.loads(text or "")
    except (ValueError, RecursionError):
        return None


class ErrorRecoveryDetector(Detector):
    task = "error_recovery"
    teaches = ("missing_write",)

    def label(self, view, check: Check, args: dict[str, Any]) -> Label:
        tool, fix, shapes = args.get("tool"), args.get("fix"), set(args.get("errors") or [])
        if not tool:
            return "NA"
        failed = [(i, s, f, r) for i, s, f, r in recoveries(view.run, tool) if not shapes or s in shapes]
        if not failed:
            return "NA"
        a = view.attribution
        if a is not None and any(d.instead == "call_failed" for d in a.of("missing_write", tool)):
            return "LACKING"
        calls = view.run.agent_calls
        i, _, found_fix, retry = failed[0]
        if retry is not None and found_fix is not None and (fix is None or found_fix.name == fix):
            return "PRESENT"
        first = calls[i]
        unchanged = any(c.name == tool and c.arguments == first.arguments for c in calls[i + 1:])
        said_why = any(m.get("role") == "assistant" and refuses_with_reason(m.get("content"))
                       for m in view.run.messages[max(first.message_index, 0) + 1:] if isinstance(m.get("content"), str))
        return "PRESENT" if said_why and not unchanged and retry is None else "LACKING"

    def portable_check(self, roles: dict[str, str]) -> tuple[Check, dict[str, Any]] | None:
        w = roles.get("write")
        return (_failed_write(w), {"tool": w, "fix": roles.get("fix"), "errors": []}) if w else None

    def propose(self, ctx: ProposalContext) -> list[Proposal]:
        out = []
        for (write, fix), shapes in learned(ctx).items():
            roles = ctx.roles_for(write, fix=fix)
            if "read" not in roles or "key" not in roles:
                continue
            out.append(Proposal(
                name=f"recover_{write}_error_with_{fix}",
                description=f"When {write} returns an error such as \"{shapes[0]}\", remove the cause with {fix} and "
                f"retry {write}; when the cause cannot be removed, tell the user why instead of giving up or "
                "retrying the same call unchanged.",
                roles=roles,
                label_check=_failed_write(write),
                label_args={"tool": write, "fix": fix, "errors": shapes},
                params=infer_recovery(ctx.runs, write, fix, roles.get("read"), roles.get("key"), shapes),
            ))
        return out

    def infer_params(self, roles: dict[str, str], index: ResultIndex, policy: str = "", rules: Any = None
                     ) -> tuple[dict[str, Any], str]:
        return {}, ""

    def target_tools(self, roles: dict[str, str]) -> list[str]:
        return [t for t in (roles.get("write"), roles.get("fix")) if t]


register_detector(ErrorRecoveryDetector())
