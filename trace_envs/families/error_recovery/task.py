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
takes no key (`send_message_with_phone_number`) is addressed by the record fields it takes (`address`); a fix that
takes what the record names instead of its key (`turnOnAutopay(holderId)` for a permit whose holder has autopay off)
is held the same way, as a setting made for those values (`fix_by`, bindings `fix_<arg>`). A fix that is
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
call of the fix and then a successful retry followed, or when the agent then declined saying why (`language.refusals`)
without retrying the failed call unchanged; LACKING otherwise (it gave up, or retried unchanged), and always when the
source's expected actions show the write missing because the call failed (`missing_write`, instead `call_failed`).
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from trace_envs.checks.clauses import CallMade, CallRef, Check, Communicated, FailedRef, FinalState, NoCall, Order
from trace_envs.families.kit import GOODBYE, Kit
from trace_envs.families.task import Task, register_task
from trace_envs.language import hints
from trace_envs.runtime import Scenario
from trace_envs.runtime.phrases import key_noun
from trace_envs.runtime.records import get_path, like_value, set_path
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
    fix_by: dict[str, str] = Field(default_factory=dict, description="A fix that takes no `key` but what the record "
                                   "names (its holder's id): fix argument -> the record path its value comes from; the "
                                   "env holds the fix as a setting made for those values.")
    error_says: dict[str, str] = Field(default_factory=dict, description="Fix argument -> its value in the runs' "
                                       "`error` text, replaced there by the scenario's own (the holder the error "
                                       "names).")


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
        owned = not p.field and bool(p.fix_by)
        device = owned or (not p.field and bool(p.setting) and bool(p.unsetting))
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

        lists = kit.source.lists

        def holder(r: dict[str, Any], path: str) -> tuple[bool, Any]:
            """The value a fix addressed to the record's holder takes: the record's own field, or, for records a
            read lists by their owner's id (a client's accounts), that id, which the listing holds and the item
            does not."""
            found, value = get_path(r, path)
            if not found and lists is not None and path == lists.by and kit.user_id:
                return True, kit.user_id
            return found, value

        records = kit.source.records(1 + max(spec.knobs.distractors, 1), accept=lambda r: (
            device or get_path(r, p.field or "")[0]) and all(holder(r, path)[0] for path in p.fix_by.values())
            and (not p.address or distinct(r)))
        for i, r in enumerate(records):
            if not device:
                set_path(r, p.field, p.unready)
            if p.cause:  # the record shows why the fix fails (a card on file that is expired), or why it will not
                set_every(r, p.cause, p.cause_ok if fixable or i else p.cause_blocked)
        record, other = records[0], records[1]
        target, other_id = record[key], other[key]
        kit.knows(target)
        args, stated = kit.write_args(write, record)
        if owned:
            fix_args = {a: holder(record, path)[1] for a, path in p.fix_by.items()}
        else:
            fix_args = dict(p.setting) if device else fill_arguments(spec.tool(fix), {key: target})
        opening = f"{kit.greeting()} I'd like to {kit.phrase(write, target)}."
        if stated:
            opening += f" Use these details: {json.dumps(stated, sort_keys=True)}."
        opening += kit.from_record(write, args, stated)
        # Runs that never show the fix failing give no words for it: then it fails for a short reason of its own,
        # which an agent can tell in a sentence (repeating "<fix> is not possible for this <record>" back was 60
        # characters of the tool's result, a paste the explanation does not pay).
        fix_error = p.fix_error or f"Error: cannot {words(fix)}; the {kit.noun} is on hold"
        reason = p.reason or plain_error(fix_error)
        error = p.error  # naming the scenario's own holder where the runs' error named theirs
        for a, said in p.error_says.items():
            error = error.replace(said, str(fix_args.get(a, said)))
        error = shaped_like(target).sub(target, error)  # "cannot change appointment APT383992": the run's own record
        state = new_state({r[key]: r for r in records})
        if device:
            state["settings"] = {fix: dict(p.unsetting)}
            state["prerequisites"] = {write: [{"setting": fix, "value": fix_args, "error": error}]}
            state["effects"] = {write: dict(p.sets)}
        else:
            state["prerequisites"] = {write: [{"path": p.field, "value": p.ready, "error": error}]}
            state["effects"] = {fix: {p.field: p.ready}, write: dict(p.sets)}
        if not fixable:
            state["unavailable"] = {fix: fix_error}
        read, attempt = kit.read_call(target), call(write, **args)
        if owned:  # the fix made for someone else; the write on another record
            wrong_fix = call(fix, **{a: like_value(v, rng) for a, v in fix_args.items()})
            other_write = call(write, **dict(args, **{key: other_id}))
        elif device:  # the setting left as it was; the write addressed to another record
            wrong_fix, other_write = call(fix, **p.unsetting), call(write, **kit.write_args(write, other)[0])
        else:
            wrong_fix = call(fix, **dict(fix_args, **{key: other_id}))
            other_write = call(write, **dict(args, **{key: other_id}))
        fixing = call(fix, **fix_args)
        # the fix is a write too: a policy that wants a yes before every write wants one before it, and the user says
        # yes to a question that names what was asked for
        ask_fix = [kit.fix_question(fix, fix_args, write, target)] if spec.rules.confirm_writes else []
        sorry = f"I'm sorry, I was not able to {kit.phrase(write, target)}. {GOODBYE}"
        loop = [read, attempt, attempt, attempt, sorry]
        if fixable:
            done = kit.done(write, [target])
            oracle = [read, *kit.write_steps(write, target, args), *ask_fix, fixing, attempt, done]
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
            # the write's error in the agent's words, unless quoting it would be a paste of the tool result
            failed = f"it failed ({plain_error(error)})" if len(plain_error(error)) < MAX_QUOTE else \
                f"it needs {words(fix)} first"
            why = (f"I'm sorry, but I can't {kit.phrase(write, target)}: {failed}, and "
                   f"{words(fix)} is not possible because {reason}. {GOODBYE}")
            claim = kit.done(write, [target])
            oracle = [read, *kit.write_steps(write, target, args), *ask_fix, fixing, why]
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
                      "error": plain_error(error), "fix_error": plain_error(fix_error),
                      **{f"address_{a}": args.get(a) for a in p.address},
                      **{f"fix_{a}": v for a, v in fix_args.items() if p.fix_by}},
            opening=opening,
            facts=kit.facts,
            requests=[kit.request(write, target)],
            oracle=oracle,
            mutants=mutants,
            klass="fixable" if fixable else "unfixable",
        )


MAX_QUOTE = 50  # characters of an error quoted in a reply; 60 verbatim from a tool result is a paste (checks.statements)


def plain_error(text: str) -> str:
    """An error text as a phrase to tell the user: without its "Error:" prefix, its last clause ("...; the card on
    file is expired" -> "the card on file is expired")."""
    body = _ERROR_PREFIX.sub("", text).strip().rstrip(".")
    return body.split(";")[-1].strip() or body


def shaped_like(ident: str) -> re.Pattern[str]:
    """Ids shaped like `ident`, letter for letter and digit for digit ("APT582385" ~ "APT383992"): the record id a
    run's error names, to be read as the scenario's own."""
    parts = ["[A-Z]" if c.isupper() else "[a-z]" if c.islower() else "[0-9]" if c.isdigit() else re.escape(c)
             for c in ident]
    return re.compile(r"(?<![\w-])" + "".join(parts) + r"(?![\w-])")


def core_phrase(reason: str) -> str:
    """The reason without its leading article ("the card on file is expired" -> "card on file is expired"), so that
    "your card on file is expired" states it too."""
    return _ARTICLE.sub("", reason, count=1) or reason


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


class ErrorRecovery(Task):
    name = "error_recovery"
    summary = ("When a write fails with an error naming a cause another tool removes, remove it and retry; when the "
               "cause cannot be removed, tell the user why.")
    roles = ("read", "write", "fix", "key")
    params = RecoveryParams
    env_class = RecoveryEnv

    def hint(self, spec: Any) -> str:
        roles = spec.roles
        return hints.join([hints.read_first(roles["read"], roles.get("key")), hints.recover(roles["write"], roles["fix"]),
                           hints.confirm(roles["write"]) if spec.rules.confirm_writes else ""])

    def check(self, roles: dict[str, str], params: dict[str, Any], requests: int = 2) -> Check:
        key, read, write, fix = roles["key"], roles["read"], roles["write"], roles["fix"]
        target = {key: {"$var": "target"}}
        p = RecoveryParams.model_validate(params)
        read_t = CallRef(tool=read, args=target)
        # A write that takes no key is addressed by the record's fields; a device fix is matched by its setting.
        write_t = CallRef(tool=write, args={a: {"$var": f"address_{a}"} for a in p.address} if p.address else target)
        fix_t = CallRef(tool=fix, args={a: {"$var": f"fix_{a}"} for a in p.fix_by} if p.fix_by else dict(p.setting)
                        if p.setting else target)
        join = [] if p.address or p.setting or p.fix_by else [key]
        return Check(clauses=[
            CallMade(id="retried", weight=2, when="fixable", call=write_t,
                     description=f"{write} succeeds on the record the user asked about, retried after the fix"),
            Order(id="fixed_first", weight=1, when="fixable", requires=["retried"], first=fix_t, then=write_t,
                  join=join, description=f"remove the cause the error names with {fix} before the retry"),
            Order(id="read_first", weight=1, when="fixable", requires=["retried"], first=read_t, then=write_t,
                  join=join, description=f"look the record up with {read} before the write"),
            Communicated(id="explained", weight=3, when="!fixable", mode="any", after=read_t,
                         values=[{"$var": "reason"}, {"$var": "reason_core"}],
                         after_failures=[FailedRef(call=write_t, error={"$var": "error"}, bound="writes"),
                                         FailedRef(call=fix_t, error={"$var": "fix_error"})],
                         description="when the cause cannot be removed, tell the user why in a sentence, once the "
                                     "request's own call failed for the prerequisite and the fix failed for the reason"),
            FinalState(id="no_retry_loop", weight=1, when="fixable", requires=["retried"], path="repeated_failure",
                       op="absent", description="never repeat a call that failed while nothing changed"),
            FinalState(id="no_retry_loop_unfixable", weight=1, when="!fixable", requires=["explained"],
                       path="repeated_failure", op="absent",
                       description="never repeat a call that failed while nothing changed"),
            NoCall(id="no_other_write", penalty=True, call=CallRef(kind="write"), unless=[write_t, fix_t],
                   description="no write but the request and its fix, on the user's record"),
        ])


register_task(ErrorRecovery())
