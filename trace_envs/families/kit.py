"""What the record-based families' scenarios are made of: the user's side (opening, facts, requests) and a correct
agent's side (reads, questions the policy asks for, confirmations that name the action, writes, refusals that say
why), following the spec's rules so the oracle obeys the policy it shows.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import numpy as np

from trace_envs.checks.clauses import CallMade, CallRef, Check, Communicated, NoCall, Order
from trace_envs.runtime.phrases import key_noun, path_words, user_phrase
from trace_envs.runtime.records import get_path, like_id
from trace_envs.runtime.scenario import UserRequest
from trace_envs.runtime.world import (
    Gate,
    owner_label,
    RecordSource,
    call,
    canonical_json,
    fill_arguments,
    held_ids,
    listing,
    mirrored_request,
    words,
)
from trace_envs.spec.model import CapabilitySpec

GOODBYE = "Is there anything else? If not, have a nice day!"


class Kit:
    """One scenario's shared pieces for a spec with `read` / `key` roles (and usually `write`)."""

    def __init__(self, spec: CapabilitySpec, rng: np.random.Generator):
        self.spec, self.rng = spec, rng
        roles = spec.roles
        self.read, self.write, self.key = roles.get("read"), roles.get("write"), roles["key"]
        self.source = RecordSource(spec, self.read, self.key, rng)
        self.noun = key_noun(self.key)
        self.key_label = self.key.replace("_", " ")
        self.facts: dict[str, str] = dict(spec.rules.user_facts)
        self.aliases: dict[str, list[str]] = {}
        identity = spec.rules.identify_user
        # the user's id is the key of the records themselves (an account): the user names the record, no more
        self.user_id = self.source.owner if self.source.owner_field and identity and identity != self.key else None
        self.mine: set[str] = set()  # the records the user named (`knows`)
        self._shift: timedelta | None = None
        if self.source.lists is not None:
            # a read that lists the user's records takes the user's id: the user states it
            self.user_id = self.source.owner
            self.foreign = like_id(self.user_id, rng) if self.user_id else None
        elif self.user_id is None and identity and identity != self.key and spec.rules.user_example:
            # the records hold no owner (a bill has no account id), yet users of this domain say who they are
            pool = [spec.rules.user_example, *spec.rules.user_examples]
            self.user_id = like_id(pool[int(rng.integers(len(pool)))] if len(pool) > 1 else pool[0], rng)
        if self.user_id:
            self.facts[self.identity_label] = self.user_id

    @property
    def identity_label(self) -> str:
        if self.source.lists is not None:
            return owner_label(self.source.lists)
        return (self.source.owner_field or self.spec.rules.identify_user or "user_id").replace("_", " ")

    # ---- the user ---------------------------------------------------------------------------------------------------
    def greeting(self) -> str:
        who = f" My {self.identity_label} is {self.user_id}." if self.user_id else ""
        return "Hi!" + who

    def knows(self, target: str) -> None:
        """The user knows this record's key (answers "what is your reservation id?")."""
        self.facts.setdefault(self.key_label, target)
        self.mine.add(target)

    def request(self, tool: str, target: str, decline: bool = False) -> UserRequest:
        return UserRequest.write(tool, self.key, target, decline=decline)

    def phrase(self, tool: str, target: str) -> str:
        return user_phrase(tool, self.key, target)

    def write_args(self, tool: str, record: dict[str, Any], fixed: dict[str, Any] | None = None
                   ) -> tuple[dict[str, Any], dict[str, Any]]:
        """The write's arguments on `record`, and the ones the user states in the request. Arguments the runs show
        coming from the record (`arg_sources`: a refund's amount is the order's total) are read off the record and
        never handed over by the user; `fixed` ones, lists restating one the record holds (`mirrored_request`: new flights
        on the reservation's own route), ids the record holds (`held_ids`: the user's own card) and the others'
        example values are what the user asks for."""
        spec = self.spec.tool(tool)
        target = record[self.key]
        sourced = {}
        for arg, path in spec.arg_sources.items():
            found, value = get_path(record, path)
            if found and arg not in (fixed or {}):
                sourced[arg] = value
        # A write addressed otherwise (ToolSandbox's send_message_with_phone_number takes no contact key) gets none.
        keyed = {self.key: target} if self.key in spec.properties or not spec.properties else {}
        if not keyed:  # then the record's own fields address it (a contact's phone_number)
            sourced.update({a: record[a] for a in spec.properties if a in record and a not in (fixed or {})})
        taken = {*keyed, *sourced, *(fixed or {})}
        mirrored = mirrored_request(spec, record, taken, self.date_shift)
        mirrored.update(held_ids(spec, record, taken | set(mirrored)))
        # the user's own id where the write names its user (a hold placed for the member asking), not the id of the
        # real call the example came from
        for name in dict.fromkeys(n for n in (self.spec.rules.identify_user, self.source.owner_field) if n):
            if self.user_id and name in spec.required and name not in taken and name not in mirrored:
                mirrored[name] = self.user_id
        args = fill_arguments(spec, {**keyed, **sourced, **mirrored, **(fixed or {})})
        return args, {k: v for k, v in args.items() if k != self.key and k not in sourced}

    def date_shift(self) -> timedelta:
        """The days a scenario's requested dates move from the record's own (`mirrored_request`): drawn once, so
        every record of the scenario, and every call for the same record, moves the same."""
        if self._shift is None:
            self._shift = timedelta(days=int(self.rng.integers(1, 8)))
        return self._shift

    def extras(self, args: dict[str, Any], *hidden: str) -> dict[str, Any]:
        return {k: v for k, v in args.items() if k != self.key and k not in hidden}

    def from_record(self, tool: str, args: dict[str, Any], stated: dict[str, Any]) -> str:
        """The sentence telling the agent where the arguments the user does not state come from ("For the payment
        id, use the one on my reservation."), empty when the user states them all."""
        hidden = [a for a in args if a != self.key and a not in stated]
        if not hidden:
            return ""
        return f" For the {listing([a.replace('_', ' ') for a in hidden])}, use the one on my {self.noun}."

    # ---- a correct agent --------------------------------------------------------------------------------------------
    def read_call(self, target: str) -> str:
        """The read of `target`; for a read that lists the user's records, the read of the user's list, or of
        another customer's list when the user never named `target` (a read of the wrong record: it fails)."""
        assert self.read, "a scenario without a read role makes no read call"
        lists = self.source.lists
        if lists is not None:
            owner = self.user_id if target in self.mine or not self.mine else self.foreign
            return call(self.read, **{lists.by: owner})
        return call(self.read, **{self.key: target})

    @property
    def owner_binding(self) -> dict[str, Any]:
        """`owner`: the user's id, for a read that lists the user's records (what `listing_check`'s ban on reading
        another owner's list refers to); nothing otherwise."""
        return {"owner": self.user_id} if self.source.lists is not None and self.user_id else {}

    def read_calls(self, target: str) -> list[str]:
        """The read of the target record, or none when the spec has no read role."""
        return [self.read_call(target)] if self.read else []

    def fact_questions(self, tool: str) -> list[str]:
        """The facts the policy says to obtain from the user before `tool` (e.g. the reason for a cancellation)."""
        rule = self.spec.rules.rule(tool)
        return [f"Could you tell me the {label}?" for label in (rule.ask if rule else [])]

    def confirm_question(self, tool: str, target: str, args: dict[str, Any]) -> str:
        extras = self.extras(args)
        detail = f" with {canonical_json(extras)}" if extras else ""
        return (
            f"Here is what I will do: {words(tool)} for {self.key_label} {target}{detail}. "
            "Do you confirm that I should proceed (yes/no)?"
        )

    def fix_question(self, fix: str, fix_args: dict[str, Any], write: str, target: str) -> str:
        """The question before a fix that unblocks the requested write: it names the fix with its values and the
        write it is for."""
        return (
            f"To {self.phrase(write, target)}, I first need to {words(fix)} with {canonical_json(fix_args)}. "
            "Do you confirm that I should proceed (yes/no)?"
        )

    def write_steps(self, tool: str, target: str, args: dict[str, Any], confirm: bool | None = None) -> list[str]:
        """Confirmation (when the policy or `confirm` asks for it) and the write."""
        steps = []
        if self.spec.rules.confirm_writes if confirm is None else confirm:
            steps.append(self.confirm_question(tool, target, args))
        return steps + [call(tool, **args)]

    def done(self, tool: str, targets: list[str]) -> str:
        return f"Done: I have completed the {words(tool)} request for {', '.join(targets)}. {GOODBYE}"

    def refusal(self, tool: str, target: str, gate: Gate, value: Any) -> str:
        return (
            f"I'm sorry, but I can't {self.phrase(tool, target)}: its {path_words(gate.field)} is "
            f"{str(value).replace('_', ' ')}, and our policy does not allow it in that case."
        )

    def value_at(self, record: dict[str, Any], path: str) -> Any:
        return get_path(record, path)[1]


def gate_of(params: dict[str, Any]) -> Gate | None:
    """The gate a spec's params name (`field`, `allowed`, `blocked`), if they name one."""
    if not params.get("field") or not params.get("blocked"):
        return None
    return Gate(field=str(params["field"]), allowed=tuple(params.get("allowed") or ()), blocked=tuple(params["blocked"]))


def gated_write_check(roles: dict[str, str], write_weight: float, order_weight: float, explain_weight: float) -> Check:
    """The check of `gated_write_scenario`: allowed, the write on the target after reading it; blocked, the reason
    stated in a sentence after reading the record. Any other write zeroes the score."""
    key, read, write = roles["key"], roles["read"], roles["write"]
    target = {key: {"$var": "target"}}
    read_target = CallRef(tool=read, args=target)
    write_target = CallRef(tool=write, args=target)
    return Check(clauses=[
        CallMade(id="write_target", weight=write_weight, when="allowed", call=write_target,
                 description=f"{write} on the record the user asked about, which the policy allows"),
        Order(id="read_first", weight=order_weight, when="allowed", requires=["write_target"], first=read_target,
              then=write_target, join=[key], description=f"look the record up with {read} before the write"),
        Communicated(id="explained", weight=explain_weight, when="!allowed",
                     values=[{"$var": "reason"}, {"$var": "reason_words"}], mode="any", after=read_target,
                     about={"$var": "target"},
                     description="after reading the record, tell the user which of its values forbids the request"),
        NoCall(id="no_other_write", when="allowed", penalty=True, call=CallRef(kind="write"), unless=[write_target],
               description="no write but the one the user asked for"),
        NoCall(id="no_write", when="!allowed", penalty=True, call=CallRef(kind="write"),
               description="no write at all when the policy forbids the request"),
    ])


def listing_check(check: Check, read: str, key: str, by: str) -> Check:
    """`check` for a read that lists the owner's records (`ToolSpec.lists`) instead of taking the record's `key`:
    a reference to the read asks nothing of `key`, and an order between the read and another call joins on nothing
    (the read's list holds the record; a read of another owner's list fails and counts for nothing); what is told
    after the read counts from its first successful call, since every later read lists the same records; a ban on
    reading another record by its key bans reading another owner's list by `by`, the listing read's argument."""
    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            out = {k: walk(v) for k, v in node.items()}
            if out.get("tool") == read and isinstance(out.get("args"), dict) and key in out["args"]:
                out["args"] = {k: v for k, v in out["args"].items() if k != key}
            if out.get("type") == "communicated" and isinstance(out.get("after"), dict) and \
                    out["after"].get("tool") == read:
                out["since"] = "first"  # the list showed the record the first time it was read
            reads = [out.get(side) for side in ("first", "then")]
            if any(isinstance(r, dict) and r.get("tool") == read for r in reads) and key in (out.get("join") or []):
                out["join"] = [j for j in out["join"] if j != key]
            return out
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    # "no read of another record" becomes "no read of another owner's list" (the scenario binds `owner`, see
    # `Kit.owner_binding`): the listing read takes the owner's id, not the record's
    clauses = []
    for c in check.clauses:
        banned = c.call.args.get(key) if c.type == "no_call" and c.call.tool == read else None
        if isinstance(banned, dict) and set(banned) == {"$not"} and isinstance(banned["$not"], dict) \
                and set(banned["$not"]) == {"$var"}:
            c = c.model_copy(update={"call": c.call.model_copy(update={"args": {by: {"$not": {"$var": "owner"}}}})})
        clauses.append(c)
    return Check.model_validate(walk(check.model_copy(update={"clauses": clauses}).model_dump(mode="json")))
