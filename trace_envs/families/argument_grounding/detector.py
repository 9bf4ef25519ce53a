"""Detector of argument_grounding: how the miner finds it in real runs (see task.py for the env)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from trace_envs.checks.clauses import CallRef, Check, Grounded
from trace_envs.mining import departures, labeling
from trace_envs.mining.detector import MAX_TOOL_ARGS, Detector, Label, Proposal, ProposalContext, register_detector
from trace_envs.trajectories.results import ResultIndex


def _grounded(write: str, arg: str) -> Check:
    return Check(applies_if=[CallRef(tool=write)], clauses=[Grounded(id="grounded", call=CallRef(tool=write), args=[arg])])


class ArgumentGroundingDetector(Detector):
    task = "argument_grounding"
    teaches = ("invented_value", "other_value")

    def label(self, view, check: Check, args: dict[str, Any]) -> Label:
        """From the run's departures: LACKING when the write passed a value of the argument that the agent saw
        nowhere (invented); else the portable check, on runs that made the write."""
        tool, arg = args.get("tool"), args.get("arg")
        by_gt = departures.arg_kind(view, tool, arg, ("invented_value",)) if tool and arg else None
        return by_gt or labeling.exercised(view, check, tool)

    def portable_check(self, roles: dict[str, str]) -> tuple[Check, dict[str, Any]] | None:
        w, a = roles.get("write"), roles.get("arg")
        return (_grounded(w, a), {"tool": w, "arg": a}) if w and a else None

    def propose(self, ctx: ProposalContext) -> list[Proposal]:
        out = []
        for w in ctx.writes:
            key = ctx.roles_for(w).get("key")
            for a in ctx.args(w)[:MAX_TOOL_ARGS]:
                # The key itself comes from the user's request: that is information gathering, not grounding.
                if a == key or ctx.free_text(w, a):
                    continue
                roles = ctx.roles_for(w, arg=a)
                params, note = self.infer_params(roles, ctx.index)
                if roles.get("key") not in ctx.args(w):  # left at its default otherwise: the specs stay as they were
                    params["write_key"] = False
                out.append(Proposal(
                    name=f"ground_{a}_of_{w}",
                    description=f"Pass argument {a} of {w} exactly as an earlier lookup returned it or the user said "
                    "it; never invent ids or values." + note,
                    roles=roles,
                    label_check=_grounded(w, a),
                    label_args={"tool": w, "arg": a},
                    params=params,
                ))
        return out

    def infer_params(self, roles: dict[str, str], index: ResultIndex, policy: str = "", rules: Any = None
                     ) -> tuple[dict[str, Any], str]:
        read = roles.get("read", "")
        sources = index.arg_sources.get((read, roles.get("write", ""), roles.get("arg", "")), Counter())
        source = sources.most_common(1)[0][0] if sources else roles.get("arg", "value")
        return {"source_field": source}, f" The value comes from {source} in the {read} result."


register_detector(ArgumentGroundingDetector())
