"""Detector of information_gathering: how the miner finds it in real runs (see task.py for the env)."""

from __future__ import annotations

from typing import Any

from trace_envs.checks.attribution import FREE_TEXT_ARGS
from trace_envs.checks.clauses import CallRef, Check, Grounded
from trace_envs.checks.trace import read_result
from trace_envs.mining.detector import Detector, Label, Proposal, ProposalContext, register_detector
from trace_envs.trajectories.results import ResultIndex


def _id_lists(value: Any, records_only: bool = False, depth: int = 0) -> list[set[str]]:
    """The lists of two or more ids a result holds: a list of strings (a profile's `loan_ids`), unless
    `records_only`, or the id fields of a list of records (every record of a customer's list)."""
    if depth > 4:
        return []
    out: list[set[str]] = []
    if isinstance(value, dict):
        for v in value.values():
            out += _id_lists(v, records_only, depth + 1)
    elif isinstance(value, list):
        ids = set() if records_only else {v for v in value if isinstance(v, str)}
        if len(ids) < 2:
            ids = {_record_id(v) for v in value if isinstance(v, dict)} - {None}
        if len(ids) >= 2:
            out.append(ids)
        for v in value:
            if isinstance(v, (dict, list)):
                out += _id_lists(v, records_only, depth + 1)
    return out


def _record_id(record: dict[str, Any]) -> str | None:
    """A record's own id: the first string field named `id` or ending in it, at the top or one level down."""
    for k, v in record.items():
        if isinstance(v, str) and (k.lower() == "id" or k.lower().endswith("id")):
            return v
    for v in record.values():
        if isinstance(v, dict):
            found = _record_id(v)
            if found:
                return found
    return None


def which_record(view: Any, read: str) -> Label:
    """Whether the agent knew which of the user's records it looked up with `read`, when the user has several: an
    earlier result (or the read itself) lists two or more ids and the read is by one of them or returns them all.
    PRESENT when the user named one of those ids (asked, or said so unprompted), LACKING when the user never named
    any: the agent picked one of several on its own. NA with a single record, no such read, or a write tried, even one
    that failed (a record acted on is another family's question)."""
    if any(view.kinds.get(c.name) == "write" for c in view.run.agent_calls):
        return "NA"
    lists: list[set[str]] = []
    groups: list[set[str]] = []
    for c in view.run.agent_calls:
        if c.error:
            continue
        result = read_result(c.result) if c.result else None
        if c.name == read:
            args = {str(v) for v in c.arguments.values() if isinstance(v, (str, int))}
            groups += [g for g in lists if g & args]
            # a read returning all the user's records picked one when the agent then speaks of one of them only
            groups += [g for g in _id_lists(result, records_only=True) if len(_named_by_agent(view, g)) == 1]
        lists += _id_lists(result)
    if not groups:
        return "NA"
    said = " ".join(m["content"] for m in view.run.messages
                    if m.get("role") == "user" and isinstance(m.get("content"), str))
    return "PRESENT" if any(i in said for g in groups for i in g) else "LACKING"


def _named_by_agent(view: Any, ids: set[str]) -> set[str]:
    said = " ".join(m["content"] for m in view.run.messages
                    if m.get("role") == "assistant" and isinstance(m.get("content"), str))
    return {i for i in ids if i in said}


def _asked(read: str, key: str) -> Check:
    return Check(applies_if=[CallRef(tool=read)], clauses=[Grounded(id="asked_for_key", call=CallRef(tool=read), args=[key])])


class InformationGatheringDetector(Detector):
    task = "information_gathering"

    def label(self, view, check: Check, args: dict[str, Any]) -> Label:
        return which_record(view, args.get("tool")) if args.get("tool") in view.called else "NA"

    def portable_check(self, roles: dict[str, str]) -> tuple[Check, dict[str, Any]] | None:
        r, k = roles.get("read"), roles.get("key")
        return (_asked(r, k), {"tool": r}) if r and k else None

    def propose(self, ctx: ProposalContext) -> list[Proposal]:
        out = []
        for r in ctx.reads:
            rargs = [a for a in ctx.args(r) if a not in FREE_TEXT_ARGS]
            if not rargs:
                continue
            k = rargs[0]
            out.append(Proposal(
                name=f"ask_for_{k}_before_{r}",
                description=f"Ask the user for the {k} (or take it from an earlier result) before calling {r}; never "
                "guess it.",
                roles={"read": r, "key": k},
                label_check=_asked(r, k),
                label_args={"tool": r},
            ))
        return out

    def infer_params(self, roles: dict[str, str], index: ResultIndex, policy: str = "", rules: Any = None
                     ) -> tuple[dict[str, Any], str]:
        key = roles.get("key", "")
        fields = [p for p in index.enum_fields(roles.get("read", "")) if p != key]
        field = fields[0] if fields else "status"
        return {"answer_field": field, "label": key.replace("_", " ")}, ""

    def target_tools(self, roles: dict[str, str]) -> list[str]:
        return [roles["read"]] if roles.get("read") else []


register_detector(InformationGatheringDetector())
