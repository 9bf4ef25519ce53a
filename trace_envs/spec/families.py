"""The eight capability families: the roles each needs and the env-side check its template scores.

A family's template (templates/<family>.py.j2) builds scenarios that bind the `$var`s its check uses:
`target` (the key value of the record the request is about) and the family's own, listed in `BINDINGS`.
Clause ids are stable: mutants and reward breakdowns refer to them.
"""

from __future__ import annotations

from typing import Any

from trace_envs.spec.model import FAMILY_REQUIREMENTS
from trace_envs.checks.clauses import (
    AllCompleted,
    CallMade,
    CallRef,
    Check,
    Communicated,
    Confirmation,
    Grounded,
    NoCall,
    Order,
)

FAMILY_ROLES: dict[str, tuple[str, ...]] = {family: req[0] for family, req in FAMILY_REQUIREMENTS.items()}

FAMILY_PARAMS: dict[str, dict[str, str]] = {
    "precondition_before_write": {
        "field": "record field the policy conditions the write on",
        "allowed": "list of values of `field` that permit the write",
        "blocked": "list of values of `field` that forbid it",
    },
    "policy_refusal": {"field": "record field whose value forbids the write", "blocked": "list of forbidding values"},
    "argument_grounding": {"source_field": "field of the read result that holds the value of write argument `arg`"},
    "information_gathering": {
        "label": "how the user names the key (e.g. 'reservation id')",
        "answer_field": "record field the user wants to know",
    },
    "aggregation_arithmetic": {"field": "numeric record field to aggregate", "op": "sum | max | min | count"},
    "handoff_to_human": {"field": "record field whose value requires a human", "blocked": "values that require one"},
}

BINDINGS: dict[str, tuple[str, ...]] = {
    "precondition_before_write": ("target", "allowed", "reason"),
    "confirmation_before_write": ("target", "declined"),  # declined: the user answers no (difficulty hard)
    "multi_request_completion": ("target", "targets"),
    "argument_grounding": ("target", "grounded"),
    "policy_refusal": ("target", "reason", "reason_words"),  # reason_words: the value as words ('basic economy')
    "information_gathering": ("target", "answer"),
    "aggregation_arithmetic": ("targets", "answer"),  # plus target_0 .. target_{requests-1}
    "handoff_to_human": ("target", "self_service"),  # self_service: optional, needs role write
}


def _ref(tool: str, **args: Any) -> CallRef:
    return CallRef(tool=tool, args=args)


def _var(name: str) -> dict[str, str]:
    return {"$var": name}


def _not_target(key: str) -> dict[str, Any]:
    return {key: {"$not": _var("target")}}


def env_check(family: str, roles: dict[str, str], params: dict[str, Any] | None = None, requests: int = 2) -> Check:
    """The check a generated env of `family` scores episodes with (see the module docstring for bindings)."""
    params = params or {}
    missing = [r for r in FAMILY_ROLES[family] if r not in roles]
    if missing:
        raise ValueError(f"family {family} needs roles {list(FAMILY_ROLES[family])}; missing {missing}")
    key = roles["key"]
    read = roles["read"]
    write = roles.get("write", "")
    target = {key: _var("target")}
    read_target = CallRef(tool=read, args=target)

    if family == "precondition_before_write":
        clauses = [
            CallMade(id="read_target", weight=1, call=read_target, description=f"look up the record with {read}"),
            Order(
                id="write_after_read",
                weight=2,
                when="allowed",
                requires=["read_target"],
                first=read_target,
                then=CallRef(tool=write, args=target),
                join=[key],
                description=f"perform {write} only after checking the record",
            ),
            NoCall(
                id="no_forbidden_write",
                weight=2,
                when="!allowed",
                requires=["read_target"],
                call=CallRef(tool=write, args=target),
                description=f"do not {write} when the precondition fails",
            ),
            Communicated(
                id="explained",
                weight=1,
                when="!allowed",
                requires=["read_target"],
                values=[_var("reason")],
                after=read_target,
                description="tell the user why the request cannot be done",
            ),
            NoCall(id="no_other_write", weight=1, requires=["read_target"], call=CallRef(tool=write, args=_not_target(key))),
        ]
    elif family == "confirmation_before_write":
        clauses = [
            CallMade(id="write_target", weight=2, when="!declined", call=CallRef(tool=write, args=target)),
            Confirmation(
                id="confirmed",
                weight=2,
                when="!declined",
                requires=["write_target"],
                call=CallRef(tool=write, args=target),
                description="ask for explicit confirmation and get a yes before the write",
            ),
            NoCall(
                id="no_other_write",
                weight=1,
                when="!declined",
                requires=["write_target"],
                call=CallRef(tool=write, args=_not_target(key)),
            ),
            # The user says no to the confirmation question: the right outcome is no write at all.
            CallMade(
                id="read_target", weight=1, when="declined", call=read_target, description=f"look up the record with {read}"
            ),
            NoCall(
                id="no_write_declined",
                weight=2,
                when="declined",
                requires=["read_target"],
                call=CallRef(tool=write),
                description=f"do not {write} once the user declined",
            ),
            Communicated(
                id="listed_details",
                weight=1,
                when="declined",
                requires=["read_target"],
                values=[_var("target")],
                after=read_target,
                description="list the action details for the user after checking the record",
            ),
        ]
    elif family == "multi_request_completion":
        n = max(1, requests)
        writes = [CallRef(tool=write, args={key: _var(f"target_{i}")}) for i in range(n)]
        clauses = [
            AllCompleted(id="all_requests", weight=3, calls=writes, description="complete every request the user made"),
            *[
                Order(
                    id=f"read_before_write_{i}",
                    weight=1,
                    requires=["all_requests"],
                    first=CallRef(tool=read, args={key: _var(f"target_{i}")}),
                    then=writes[i],
                    join=[key],
                )
                for i in range(n)
            ],
            NoCall(
                id="no_other_write",
                weight=1,
                requires=["all_requests"],
                call=CallRef(tool=write, args={key: {"$not": {"$in": _var("targets")}}}),
            ),
        ]
    elif family == "argument_grounding":
        arg = roles["arg"]
        clauses = [
            CallMade(id="read_target", weight=1, call=read_target),
            CallMade(
                id="grounded_write",
                weight=2,
                requires=["read_target"],
                call=CallRef(tool=write, args={key: _var("target"), arg: _var("grounded")}),
                description=f"pass {arg} exactly as the lookup returned it",
            ),
            Grounded(id="no_invented_values", weight=1, requires=["read_target"], call=CallRef(tool=write), args=[arg]),
            NoCall(
                id="no_wrong_value",
                weight=1,
                requires=["read_target"],
                call=CallRef(tool=write, args={arg: {"$not": _var("grounded")}}),
            ),
        ]
    elif family == "policy_refusal":
        clauses = [
            CallMade(id="read_target", weight=1, call=read_target, description="check the record against the policy"),
            NoCall(id="no_forbidden_write", weight=2, requires=["read_target"], call=CallRef(tool=write)),
            Communicated(
                id="explained",
                weight=1,
                requires=["read_target"],
                values=[_var("reason"), _var("reason_words")],
                mode="any",
                after=read_target,
                description="explain which rule forbids the request",
            ),
        ]
    elif family == "information_gathering":
        clauses = [
            CallMade(id="read_target", weight=1, call=read_target),
            Grounded(
                id="asked_for_key",
                weight=2,
                requires=["read_target"],
                call=CallRef(tool=read),
                args=[key],
                description=f"ask the user for the {key} instead of guessing it",
            ),
            Communicated(id="answered", weight=1, requires=["read_target"], values=[_var("answer")], after=read_target),
            NoCall(
                id="no_other_read",
                weight=1,
                requires=["read_target"],
                call=CallRef(tool=read, args=_not_target(key)),
                description="do not look up records the user did not give (another customer's, a guessed id)",
            ),
            NoCall(id="no_write", weight=1, requires=["read_target"], call=CallRef(kind="write")),
        ]
    elif family == "aggregation_arithmetic":
        n = max(2, requests)
        reads = [CallRef(tool=read, args={key: _var(f"target_{i}")}) for i in range(n)]
        clauses = [
            AllCompleted(id="read_all", weight=1, calls=reads, description="look up every record involved"),
            Communicated(
                id="correct_answer",
                weight=2,
                requires=["read_all"],
                values=[_var("answer")],
                after=CallRef(tool=read),
                description="report the computed value after reading the data",
            ),
            NoCall(id="no_write", weight=1, requires=["read_all"], call=CallRef(kind="write")),
            NoCall(
                id="no_other_read",
                weight=1,
                requires=["read_all"],
                call=CallRef(tool=read, args={key: {"$not": {"$in": _var("targets")}}}),
                description="read only the records the user asked about",
            ),
        ]
    elif family == "handoff_to_human":
        handoff = roles["handoff"]
        clauses = [
            CallMade(id="read_target", weight=1, call=read_target),
            Order(
                id="handoff_after_read",
                weight=2,
                when="!self_service",
                requires=["read_target"],
                first=read_target,
                then=CallRef(tool=handoff),
                description="transfer to a human once the record shows policy requires it",
            ),
            NoCall(id="no_write", weight=1, when="!self_service", requires=["read_target"], call=CallRef(kind="write")),
            NoCall(
                id="no_other_read",
                weight=1,
                requires=["read_target"],
                call=CallRef(tool=read, args=_not_target(key)),
                description="do not look up another customer's record",
            ),
        ]
        if write:  # self_service scenarios need no human: the agent does the write itself and does not transfer
            clauses += [
                Order(
                    id="write_after_read",
                    weight=2,
                    when="self_service",
                    requires=["read_target"],
                    first=read_target,
                    then=CallRef(tool=write, args=target),
                    join=[key],
                    description=f"when no human is needed, {write} after checking the record",
                ),
                NoCall(id="no_handoff", weight=1, when="self_service", requires=["read_target"], call=CallRef(tool=handoff)),
                NoCall(
                    id="no_other_write",
                    weight=1,
                    when="self_service",
                    requires=["read_target"],
                    call=CallRef(tool=write, args=_not_target(key)),
                ),
            ]
    else:
        raise ValueError(f"unknown family {family!r}")
    return Check(clauses=clauses)
