"""Detectors of the gated write's two families: a write made without reading the record first
(`precondition_before_write`), and a write the expected actions do not make (`policy_refusal`)."""

from __future__ import annotations

from typing import Any

from trace_envs.checks.clauses import CallRef, Check, NoCall, Order
from trace_envs.language.words import verb_synonyms
from trace_envs.mining import departures, labeling
from trace_envs.mining.detector import Detector, Label, Proposal, ProposalContext, register_detector
from trace_envs.mining.gates import infer_gate
from trace_envs.trajectories.results import ResultIndex


class PreconditionDetector(Detector):
    task = "precondition_before_write"

    def label(self, view, check: Check, args: dict[str, Any]) -> Label:
        return labeling.exercised(view, check, args.get("tool"))

    def portable_check(self, roles: dict[str, str]) -> tuple[Check, dict[str, Any]] | None:
        r, w, k = roles.get("read"), roles.get("write"), roles.get("key")
        if not (r and w):
            return None
        return _read_before_write(r, w, k), {"tool": w}

    def propose(self, ctx: ProposalContext) -> list[Proposal]:
        out = []
        for w in ctx.writes:
            best = sorted(((cnt, r, k) for (r, ww, k), cnt in ctx.pairs.items() if ww == w), reverse=True)[:2]
            for _, r, k in best:
                out.append(Proposal(
                    name=f"read_{r}_before_{w}",
                    description=f"Before calling {w}, look up the record with {r} for the same {k} and check it "
                    "against the policy.",
                    roles={"read": r, "write": w, "key": k},
                    label_check=_read_before_write(r, w, k),
                    label_args={"tool": w},
                ))
        return out

    def infer_params(self, roles: dict[str, str], index: ResultIndex, policy: str = "", rules: Any = None
                     ) -> tuple[dict[str, Any], str]:
        return infer_gate(roles, index, policy, rules)

    def target_tools(self, roles: dict[str, str]) -> list[str]:
        return [roles[k] for k in ("read", "write") if roles.get(k)]


class RefusalDetector(Detector):
    task = "policy_refusal"
    teaches = ("unwarranted_write",)

    def label(self, view, check: Check, args: dict[str, Any]) -> Label:
        """LACKING when the run made a write of the tool that its expected actions do not make; PRESENT when the
        user asked for that kind of action (or it was expected) and no such write was made."""
        tool = args["tool"]
        asked = any(v in view.user_text() for v in verb_synonyms(tool))
        return departures.unwarranted(view, tool, asked) or labeling.refusal(view, tool)

    def portable_check(self, roles: dict[str, str]) -> tuple[Check, dict[str, Any]] | None:
        w = roles.get("write")
        return (_no_write(w), {"tool": w}) if w else None

    def propose(self, ctx: ProposalContext) -> list[Proposal]:
        if not ctx.has_gt:
            return []
        return [
            Proposal(
                name=f"no_unwarranted_{w}",
                description=f"Do not call {w} when the policy forbids it or the user's request does not call for it; "
                "refuse and explain instead.",
                roles=ctx.roles_for(w),
                label_check=_no_write(w),
                label_args={"tool": w},
            )
            for w in ctx.writes
            if ctx.gt_counts[w]
        ]

    def infer_params(self, roles: dict[str, str], index: ResultIndex, policy: str = "", rules: Any = None
                     ) -> tuple[dict[str, Any], str]:
        return infer_gate(roles, index, policy, rules)


def _read_before_write(read: str, write: str, key: str | None) -> Check:
    return Check(
        applies_if=[CallRef(tool=write)],
        clauses=[Order(id="read_before_write", first=CallRef(tool=read), then=CallRef(tool=write), join=[key] if key else [])],
    )


def _no_write(write: str) -> Check:
    return Check(clauses=[NoCall(id="no_forbidden_write", call=CallRef(tool=write))])


register_detector(PreconditionDetector())
register_detector(RefusalDetector())
