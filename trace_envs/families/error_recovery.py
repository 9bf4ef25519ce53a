"""Error recovery: a write fails with an error naming a cause that another tool removes; remove it and retry, or,
when the cause cannot be removed, tell the user why.

What the runs teach (`recoveries`): in passed runs, a call of the write returned an error, the agent made another
successful call (the fix), and then the same write succeeded. tau-bench airline's gpt-4o runs do it with
`update_reservation_flights`: "Error: payment method not found", then `get_user_details`, then the retry with a
payment id from the user's profile; a help desk's agent gets "Error: autopay must be enabled before roaming can be
turned on", calls `enable_autopay` and retries. The proposal rule learns (error shape -> fixing call) from the runs, for
any tool names; an error's shape is its text with every token holding a digit read as a placeholder, so "flight
HAT030 not available on date 2024-05-13" and "flight HAT223 ..." are one kind of error.

The env (roles `read`, `write`, `fix`, `key`) is stateful, from params the runs give (`infer_recovery`): the write
fails with `error` while the record's `field` is not `ready`; a successful `fix` on the record sets it, and the retry
then changes the record as the runs' retries did (`sets`); see `trace_envs.runtime.world.unmet_prerequisite`. Two
balanced classes: `fixable` (pay the successful retry, with the fix before it and the record read first) and
`unfixable` (the fix itself fails with `fix_error`, and the record shows why at `cause`, e.g. its cards expired; pay
telling the user `reason` after reading the record). Giving up, retrying the same call unchanged, claiming success
or any other write earns nothing; repeating a failed call while nothing changed costs a share even when the fix
follows. Bindings: `target`, `fixable`, `reason`, `reason_core` (and `address_<arg>`). The env needs a fix that is a
write whose change to the record the runs show, or a device setting: a fix that takes no key and changes no record
the runs read (ToolSandbox's `set_cellular_service_status(on=True)` after `ConnectionError: Cellular service is not
enabled`) keeps its arguments as `setting`, held as device state the write's prerequisite reads, and a write that
takes no key (`send_message_with_phone_number`) is addressed by the record fields it takes (`address`). A fix that is
a read (the retry changes an argument, as in tau-bench) is proposed and labelled, but has no scenario builder yet.

Example episode (`trace/helpdesk_enable_autopay_then_retry`, seed 0, fixable):

    user:  Hi! My customer id is cu_23000. I'd like to set the roaming of account AC-006351. Use these details:
           {"roaming": "on"}.
    agent: get_account(account_no=AC-006351)
    agent: set_roaming(account_no=AC-006351, roaming=on)  -> Error: autopay must be enabled before roaming can be ...
    agent: enable_autopay(account_no=AC-006351)
    agent: set_roaming(account_no=AC-006351, roaming=on)
    agent: Done: I have completed the set roaming request for AC-006351. Is there anything else? ...

Labelling a real run: it applies when a call of the write got an error of a learned shape. PRESENT when a successful
call of the fix and then a successful retry followed, or when the agent then declined saying why (`checks.refusing`)
without retrying the failed call unchanged; LACKING otherwise (it gave up, or retried unchanged), and always when the
source's expected actions show the write missing because the call failed (`missing_write`, instead `call_failed`).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from trace_envs.checks.attribution import FREE_TEXT_ARGS
from trace_envs.checks.clauses import CallMade, CallRef, Check, Communicated, FinalState, NoCall, Order
from trace_envs.language.refusals import refuses_with_reason
from trace_envs.families.base import Family, Label, Proposal, ProposalContext
from trace_envs.families.kit import GOODBYE, Kit
from trace_envs.families.registry import register_family
from trace_envs.runtime import Scenario
from trace_envs.runtime.records import get_path, like_value, set_path
from trace_envs.runtime.phrases import key_noun
from trace_envs.runtime.scenario import ToolError
from trace_envs.runtime.world import (
    RecordEnv,
    ScenarioError,
    apply_write,
    call,
    fill_arguments,
    new_state,
    note_failure,
    words,
)
from trace_envs.trajectories.models import Run, ToolCall
from trace_envs.trajectories.results import ResultIndex

MIN_RECOVERIES = 2  # passed runs that recovered from one kind of error: one could be luck
MAX_SHAPES = 5
_VALUE = re.compile(r"\S*\d\S*")
# "Error:", or an exception's name as ToolSandbox replies with one ("PermissionError:", "polars.exceptions.NoDataError:")
_ERROR_PREFIX = re.compile(r"^\s*(?:[a-z_]\w*\.)*\w*(?:error|exception)\s*:\s*", re.I)
_ARTICLE = re.compile(r"^(?:the|a|an|your|this|its)\s+", re.I)


class RecoveryParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    field: str | None = Field(default=None, description="Record path the fix sets (the prerequisite).")
    ready: Any = Field(default=None, description="The value the write needs at `field` (what the fix sets).")
    unready: Any = Field(default=None, description="The value at `field` before the fix.")
    error: str = Field(default="", description="The write's error text while the prerequisite does not hold.")
    fix_error: str = Field(default="", description="The fix's error text when the cause cannot be removed.")
    reason: str = Field(default="", description="What the user must be told then (a phrase of `fix_error`).")
    errors: list[str] = Field(default_factory=list, description="The error shapes the runs recovered from.")
    sets: dict[str, Any] = Field(default_factory=dict, description="What the write, once it succeeds, changes on the "
                                 "record (path -> value), as its results in the runs show.")
    cause: str | None = Field(default=None, description="Record path (`*` for list items) whose value decides "
                              "whether the fix can succeed, as the records read before it show.")
    cause_ok: Any = Field(default=None, description="The value at `cause` when the fix succeeds.")
    cause_blocked: Any = Field(default=None, description="The value at `cause` when the fix fails.")
    setting: dict[str, Any] = Field(default_factory=dict, description="A fix that changes no record the runs read: "
                                    "its arguments in the recoveries, a device setting it turns on (ToolSandbox: "
                                    "set_cellular_service_status(on=True)); the env holds it as device state.")
    unsetting: dict[str, Any] = Field(default_factory=dict, description="That setting before the fix (its boolean "
                                      "arguments negated).")
    address: list[str] = Field(default_factory=list, description="A write that takes no `key`: its arguments that "
                               "are fields of the record, which address it (a contact's phone_number).")


class RecoveryEnv(RecordEnv):
    def works(self, tool) -> bool:
        return tool.name in (self.SPEC.roles.get("fix"), self.SPEC.roles.get("write")) or super().works(tool)

    def run_tool(self, name: str, args: dict[str, Any], state: dict[str, Any]) -> Any:
        roles, key = self.SPEC.roles, self.SPEC.roles["key"]
        tool = self.SPEC.tool(name) if name in self._tools else None
        if tool is None or key in tool.properties or name not in (roles.get("fix"), roles.get("write")):
            return super().run_tool(name, args, state)
        refused = state.get("unavailable", {}).get(name)
        if refused:
            note_failure(state, name, args)
            raise ToolError(str(refused))
        if name == roles.get("fix"):  # a device setting: the fix sets it, as the target's setter does
            if state.setdefault("settings", {}).get(name) == args:
                raise ToolError(f"{words(name)}: already {json.dumps(args, sort_keys=True)}")
            state["settings"][name] = dict(args)
            state.pop("failures", None)
            state["writes"].append({"tool": name, "args": dict(args)})
            return None
        address = {a: args.get(a) for a in RecoveryParams.model_validate(self.SPEC.params).address}
        rid = next((rid for rid, r in state["records"].items() if address and all(
            get_path(r, a) == (True, v) for a, v in address.items())), None)
        if rid is None:
            raise ToolError(f"no {key_noun(key)} has {json.dumps(address, sort_keys=True)}")
        return apply_write(self.SPEC, state, name, key, {key: rid, **args})

    def build_scenario(self, rng) -> Scenario:
        spec = self.SPEC
        p = RecoveryParams.model_validate(spec.params)
        fix = spec.roles["fix"]
        device = not p.field and bool(p.setting) and bool(p.unsetting)
        if spec.tool(fix).kind != "write" or not (device or (p.field and p.ready is not None)):
            raise ScenarioError(f"{fix} fixes the error by what it shows (a read), not by a change the runs show on "
                                "the record: no scenario builder for that kind of recovery yet")
        kit = Kit(spec, rng)
        write, key = kit.write, kit.key
        assert write is not None
        fixable = self.class_draw < 0.5
        addresses: list[str] = []

        def distinct(r: dict[str, Any]) -> bool:  # records a write addressed by their fields can tell apart
            for _ in range(20):
                value = json.dumps([get_path(r, a)[1] for a in p.address])
                if value not in addresses:
                    addresses.append(value)
                    return True
                for a in p.address:  # a real record drawn again: another value shaped like its own
                    set_path(r, a, like_value(get_path(r, a)[1], rng))
            return False

        records = kit.source.records(1 + max(spec.knobs.distractors, 1), accept=lambda r: (
            device or get_path(r, p.field or "")[0]) and (not p.address or distinct(r)))
        for i, r in enumerate(records):
            if not device:
                set_path(r, p.field, p.unready)
            if p.cause:  # the record shows why the fix fails (a card on file that is expired), or why it will not
                set_every(r, p.cause, p.cause_ok if fixable or i else p.cause_blocked)
        record, other = records[0], records[1]
        target, other_id = record[key], other[key]
        kit.knows(target)
        args, stated = kit.write_args(write, record)
        fix_args = dict(p.setting) if device else fill_arguments(spec.tool(fix), {key: target})
        opening = f"{kit.greeting()} I'd like to {kit.phrase(write, target)}."
        if stated:
            opening += f" Use these details: {json.dumps(stated, sort_keys=True)}."
        opening += kit.from_record(write, args, stated)
        # Runs that never show the fix failing give no words for it: then it fails as plainly as a target's write does.
        fix_error = p.fix_error or f"Error: {words(fix)} is not possible for this {kit.noun}"
        reason = p.reason or plain_error(fix_error)
        state = new_state({r[key]: r for r in records})
        if device:
            state["settings"] = {fix: dict(p.unsetting)}
            state["prerequisites"] = {write: [{"setting": fix, "value": dict(p.setting), "error": p.error}]}
            state["effects"] = {write: dict(p.sets)}
        else:
            state["prerequisites"] = {write: [{"path": p.field, "value": p.ready, "error": p.error}]}
            state["effects"] = {fix: {p.field: p.ready}, write: dict(p.sets)}
        if not fixable:
            state["unavailable"] = {fix: fix_error}
        read, attempt = kit.read_call(target), call(write, **args)
        if device:  # the setting left as it was; the write addressed to another record
            wrong_fix, other_write = call(fix, **p.unsetting), call(write, **kit.write_args(write, other)[0])
        else:
            wrong_fix = call(fix, **dict(fix_args, **{key: other_id}))
            other_write = call(write, **dict(args, **{key: other_id}))
        fixing = call(fix, **fix_args)
        sorry = f"I'm sorry, I was not able to {kit.phrase(write, target)}. {GOODBYE}"
        loop = [read, attempt, attempt, attempt, sorry]
        if fixable:
            done = kit.done(write, [target])
            oracle = [read, *kit.write_steps(write, target, args), fixing, attempt, done]
            mutants = {
                "drop_required_call": [read, attempt, attempt, done],
                "swap_calls": [read, attempt, attempt, fixing, done],
                "wrong_argument": [read, attempt, wrong_fix, attempt, done],
                "forbidden_extra_call": [read, attempt, fixing, attempt, other_write, done],
                "text_only": [done],
                "gives_up": [read, attempt, sorry],
                "retry_unchanged": loop,
                "retry_loop": [read, attempt, attempt, fixing, attempt, done],
                "claims_success": [read, attempt, done],
            }
        else:
            why = (f"I'm sorry, but I can't {kit.phrase(write, target)}: it failed ({plain_error(p.error)}), and "
                   f"{words(fix)} is not possible because {reason}. {GOODBYE}")
            claim = kit.done(write, [target])
            oracle = [read, *kit.write_steps(write, target, args), fixing, why]
            mutants = {
                "drop_required_call": [attempt, fixing, why],
                "swap_calls": [attempt, fixing, why, read],
                "wrong_argument": [kit.read_call(other_id), attempt, fixing, why],
                "forbidden_extra_call": [read, attempt, fixing, other_write, why],
                "text_only": [why],
                "gives_up": [read, attempt, sorry],
                "retry_unchanged": loop,
                "retry_loop": [read, attempt, fixing, attempt, why],
                "claims_success": [read, attempt, fixing, claim],
            }
        return Scenario(
            state=state,
            bindings={"target": target, "fixable": fixable, "reason": reason, "reason_core": core_phrase(reason),
                      **{f"address_{a}": args.get(a) for a in p.address}},
            opening=opening,
            facts=kit.facts,
            requests=[kit.request(write, target)],
            oracle=oracle,
            mutants=mutants,
            klass="fixable" if fixable else "unfixable",
        )


# ---- what the runs show -----------------------------------------------------------------------------------------
def error_text(c: ToolCall) -> str:
    """The error a call returned: a plain text, or the `error` of a JSON reply."""
    text = c.result or ""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return text
    return str(data.get("error", text)) if isinstance(data, dict) else text


def error_shape(text: str) -> str:
    """An error's kind: its text with each token holding a digit as `<v>` ("Error: flight <v> not available on date
    <v>"), so the same error on another record is the same kind."""
    return _VALUE.sub("<v>", " ".join(text.split()))[:200]


def plain_error(text: str) -> str:
    """An error text as a phrase to tell the user: without its "Error:" prefix, its last clause ("...; the card on
    file is expired" -> "the card on file is expired")."""
    body = _ERROR_PREFIX.sub("", text).strip().rstrip(".")
    return body.split(";")[-1].strip() or body


def core_phrase(reason: str) -> str:
    """The reason without its leading article ("the card on file is expired" -> "card on file is expired"), so that
    "your card on file is expired" states it too."""
    return _ARTICLE.sub("", reason, count=1) or reason


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


# ---- the family -------------------------------------------------------------------------------------------------
class ErrorRecovery(Family):
    name = "error_recovery"
    summary = ("When a write fails with an error naming a cause another tool removes, remove it and retry; when the "
               "cause cannot be removed, tell the user why.")
    roles = ("read", "write", "fix", "key")
    params = RecoveryParams
    env_class = RecoveryEnv
    teaches = ("missing_write",)

    def check(self, roles: dict[str, str], params: dict[str, Any], requests: int = 2) -> Check:
        key, read, write, fix = roles["key"], roles["read"], roles["write"], roles["fix"]
        target = {key: {"$var": "target"}}
        p = RecoveryParams.model_validate(params)
        read_t = CallRef(tool=read, args=target)
        # A write that takes no key is addressed by the record's fields; a device fix is matched by its setting.
        write_t = CallRef(tool=write, args={a: {"$var": f"address_{a}"} for a in p.address} if p.address else target)
        fix_t = CallRef(tool=fix, args=dict(p.setting) if p.setting else target)
        join = [] if p.address or p.setting else [key]
        return Check(clauses=[
            CallMade(id="retried", weight=2, when="fixable", call=write_t,
                     description=f"{write} succeeds on the record the user asked about, retried after the fix"),
            Order(id="fixed_first", weight=1, when="fixable", requires=["retried"], first=fix_t, then=write_t,
                  join=join, description=f"remove the cause the error names with {fix} before the retry"),
            Order(id="read_first", weight=1, when="fixable", requires=["retried"], first=read_t, then=write_t,
                  join=join, description=f"look the record up with {read} before the write"),
            Communicated(id="explained", weight=3, when="!fixable", mode="any", after=read_t,
                         values=[{"$var": "reason"}, {"$var": "reason_core"}],
                         description="when the cause cannot be removed, tell the user why in a sentence"),
            FinalState(id="no_retry_loop", weight=1, when="fixable", requires=["retried"], path="repeated_failure",
                       op="absent", description="never repeat a call that failed while nothing changed"),
            FinalState(id="no_retry_loop_unfixable", weight=1, when="!fixable", requires=["explained"],
                       path="repeated_failure", op="absent",
                       description="never repeat a call that failed while nothing changed"),
            NoCall(id="no_other_write", penalty=True, call=CallRef(kind="write"), unless=[write_t, fix_t],
                   description="no write but the request and its fix, on the user's record"),
        ])

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


def set_every(record: dict[str, Any], path: str, value: Any) -> None:
    """Set `value` at a dotted path whose `*` segments stand for every item of a list (`payment_methods.*.expired`)."""
    head, _, rest = path.partition(".*.")
    if not rest:
        if get_path(record, path)[0]:
            set_path(record, path, value)
        return
    found, items = get_path(record, head)
    for item in items if found and isinstance(items, list) else []:
        if isinstance(item, dict):
            set_every(item, rest, value)


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
    the fix's own most common error text and the reason it gives; and the cause: a record field whose one value
    before every successful fix and one other value before every failed one tell the two apart."""
    errors: Counter = Counter()
    changes: Counter = Counter()
    sets: Counter = Counter()
    fix_errors: Counter = Counter()
    settings: Counter = Counter()  # the fix's arguments in the recoveries (a fix that takes no key: a device setting)
    address: Counter = Counter()  # write arguments (the write takes no key) equal to the field of that name read
    outcomes: dict[bool, dict[str, Counter]] = {True: {}, False: {}}  # fix succeeded -> path -> values read before
    for run in runs:
        for i, shape, found_fix, retry in recoveries(run, write):
            if shape in shapes:
                errors[error_text(run.agent_calls[i])] += 1
                if found_fix is not None and retry is not None and found_fix.name == fix and key not in \
                        found_fix.arguments:
                    settings[json.dumps(found_fix.arguments, sort_keys=True)] += 1
        seen: dict[str, Any] = {}
        for c in run.agent_calls:
            record = _parsed(c.result) if c.name == read and not c.error else None
            if isinstance(record, list) and len(record) == 1:  # a search that found one record
                record = record[0]
            if isinstance(record, dict):
                seen = record
            elif c.name == write and not c.error and key not in c.arguments:
                address.update(a for a, v in c.arguments.items() if a in seen and seen[a] == v)
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
            if c.name == read and after:
                known[rid] = after
            elif after.get(key or "") == {json.dumps(c.arguments.get(key or ""))}:  # a write's reply with the record
                known[rid] = {**before, **after}
    params: dict[str, Any] = {"errors": shapes, "error": errors.most_common(1)[0][0] if errors else shapes[0]}
    if changes:
        (path, old, new), _ = changes.most_common(1)[0]
        params.update(field=path, unready=json.loads(old), ready=json.loads(new))
    elif settings:
        setting = json.loads(settings.most_common(1)[0][0])
        if setting and all(isinstance(v, bool) for v in setting.values()):
            params.update(setting=setting, unsetting={k: not v for k, v in setting.items()})
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


register_family(ErrorRecovery())
