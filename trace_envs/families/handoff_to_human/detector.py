"""Detector of handoff_to_human: how the miner finds it in real runs (see task.py for the env)."""

from __future__ import annotations

from typing import Any

from trace_envs.checks.clauses import CallMade, CallRef, Check
from trace_envs.language.words import tool_words
from trace_envs.mining import departures, labeling
from trace_envs.mining.detector import Detector, Label, Proposal, ProposalContext, register_detector
from trace_envs.mining.gates import policy_mentions
from trace_envs.trajectories.results import ResultIndex, distinctive_requests, gate_params


def _handed_off(handoff: str) -> Check:
    return Check(applies_if=[CallRef(tool=handoff)], clauses=[CallMade(id="handed_off", call=CallRef(tool=handoff))])


def _taken_over(ctx: ProposalContext, handoff: str) -> str | None:
    """The write a human sometimes has to take over from: the most requested one; but where its record's key gives no
    request that ends in `handoff`, the one whose key does (held-out randomizer seed 50: "I want to appeal my final
    grade in enrollment EN-1" is about the enrollment, and the most requested write took the student id, which every
    user hands over too)."""
    if not ctx.writes:
        return None
    ranked = sorted(ctx.writes, key=lambda w: (ctx.gt_counts[w], w), reverse=True)
    topics: dict[str, list[str]] = {}

    def requests(write: str) -> list[str]:
        key = ctx.read_key(write)[1] or ""
        if key not in topics:
            topics[key] = distinctive_requests(ctx.index, handoff, key)
        return topics[key]

    if requests(ranked[0]):
        return ranked[0]
    return max(ranked, key=lambda w: sum("{target}" in t for t in requests(w)))


class HandoffToHumanDetector(Detector):
    task = "handoff_to_human"
    teaches = ("missing_handoff", "unwarranted_handoff")

    def label(self, view, check: Check, args: dict[str, Any]) -> Label:
        """From the run's departures: LACKING on a transfer made or withheld against the expected actions; else the
        portable check."""
        tool = args.get("handoff")
        return (departures.handoff(view, tool) if tool else None) or labeling.checked(view, check)

    def portable_check(self, roles: dict[str, str]) -> tuple[Check, dict[str, Any]] | None:
        h = roles.get("handoff")
        return (_handed_off(h), {"handoff": h}) if h else None

    def propose(self, ctx: ProposalContext) -> list[Proposal]:
        out = []
        ruled = [w for w in ctx.writes if ctx.rules is not None and ctx.rules.rule(w) and ctx.rules.rule(w).handoff]
        for h in ctx.handoffs:
            top_write = ruled[0] if ruled else _taken_over(ctx, h)
            roles = ctx.roles_for(top_write) if top_write else {}
            roles["handoff"] = h
            if "read" not in roles and ctx.reads:
                roles["read"] = ctx.reads[0]
                rargs = ctx.args(ctx.reads[0])
                if rargs:
                    roles["key"] = rargs[0]
            out.append(Proposal(
                name=f"hand_off_with_{h}",
                description="When the policy requires a human, transfer the user with "
                f"{h} instead of refusing or ending the conversation; otherwise handle the request.",
                roles=roles,
                label_check=_handed_off(h),
                label_args={"handoff": h},
            ))
        return out

    def infer_params(self, roles: dict[str, str], index: ResultIndex, policy: str = "", rules: Any = None
                     ) -> tuple[dict[str, Any], str]:
        # Requests users made that ended with a transfer in passed runs, when they name no action the agent has a
        # tool for: a billing dispute is the policy's "cannot be handled with your tools".
        verbs = set(tool_words(roles.get("write", ""))[:1])  # the verb, whatever the naming style
        # what users said before a transfer and seldom before anything else: not the id every user hands over
        topics = [t for t in distinctive_requests(index, roles.get("handoff", ""), roles.get("key", ""))
                  if not any(v in t.lower() for v in verbs)]
        if topics:
            return {"topics": topics}, " A human is required for requests like: " + "; ".join(topics[:3]) + "."
        rule = rules.rule(roles.get("write", "")) if rules is not None else None
        if rule is not None:  # the rules say when a human is needed (or that a record never needs one)
            return {}, ""
        gate = gate_params(index, roles.get("read", ""), roles.get("handoff", ""), "*")
        if gate is not None:  # values seen right before a transfer in passed runs are the ones that need a human
            params = {"field": gate["field"], "blocked": gate["allowed"], "allowed": gate["blocked"]}
            if policy_mentions(policy, params):
                return params, f" A human is required when {params['field']} is {' or '.join(map(str, params['blocked']))}."
        return {}, ""

    def target_tools(self, roles: dict[str, str]) -> list[str]:
        return [roles["handoff"]] if roles.get("handoff") else []


register_detector(HandoffToHumanDetector())
