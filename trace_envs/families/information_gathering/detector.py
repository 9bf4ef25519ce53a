"""Detector of information_gathering: how the miner finds it in real runs (see task.py for the env)."""

from __future__ import annotations

from typing import Any

from trace_envs.checks.attribution import FREE_TEXT_ARGS
from trace_envs.checks.clauses import CallRef, Check, Grounded
from trace_envs.mining import labeling
from trace_envs.mining.detector import Detector, Label, Proposal, ProposalContext, register_detector
from trace_envs.trajectories.results import ResultIndex


def _asked(read: str, key: str) -> Check:
    return Check(applies_if=[CallRef(tool=read)], clauses=[Grounded(id="asked_for_key", call=CallRef(tool=read), args=[key])])


class InformationGatheringDetector(Detector):
    task = "information_gathering"

    def label(self, view, check: Check, args: dict[str, Any]) -> Label:
        return labeling.exercised(view, check, args.get("tool"))

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
