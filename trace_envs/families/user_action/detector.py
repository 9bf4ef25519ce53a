"""Detector of user_side_action: how the miner finds it in real runs (see task.py for the env)."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from trace_envs.checks.clauses import (
    CallMade,
    CallRef,
    Check,
)
from trace_envs.language.words import tool_words
from trace_envs.families.user_action.task import user_action_words
from trace_envs.mining.detector import Detector, Label, Proposal, ProposalContext, register_detector
from trace_envs.runtime.phrases import key_noun
from trace_envs.language.instructions import names_action
from trace_envs.trajectories.device_text import parse_device_text
from trace_envs.trajectories.results import ResultIndex


def _proposal(read: str, rargs: list[str], u: str, alt: str, settings: dict[str, dict[str, Any]],
              texts: list[str], healthy: dict[str, Any]) -> Proposal:
    noun = _thing_read(read) or (key_noun(rargs[0]) if rargs else "phone")
    if texts:  # the device: the user checks it with its own tool
        return Proposal(
            name=f"have_user_{u}_or_{alt}",
            description=f"Ask the user to check its phone ({read}), tell it to do the one fix on its side ({u} or "
            f"{alt}) that the check shows is needed, naming it clearly, then have it check again before saying it "
            "works.",
            roles={"read": read, "user_tool": u, "alt_tool": alt},
            label_check=_acted(u),
            label_args={"tools": [u, alt]},
            params={"settings": settings, "device": True, "healthy": healthy,
                    "phrase": f"get my phone's {noun} working again",
                    "symptom": f"My phone's {noun} is not working properly. Can you help me fix it?"},
            results={read: texts},
        )
    return Proposal(
        name=f"have_user_{u}_or_{alt}",
        description=f"Read {read}, tell the user to do the one fix on their side ({u} or {alt}) that the "
        "record shows is needed, naming it clearly, then read again to check before saying it works.",
        roles={"read": read, "key": rargs[0], "user_tool": u, "alt_tool": alt},
        label_check=_acted(u),
        label_args={"tools": [u, alt]},
        params={"settings": settings, "phrase": f"get my {noun} working again",
                "symptom": f"Something on my {noun} stopped working. Can you help me fix it?"},
    )


def _texts(runs: list[Any], check: str, fields: list[str]) -> list[str]:
    """Distinct real texts of the user's `check` that show every one of `fields` (at most 50)."""
    out: dict[str, None] = {}
    for run in runs:
        for c in run.user_calls:
            if c.name == check and not c.error and set(fields) <= parse_device_text(c.result).keys():
                out.setdefault(c.result, None)
    return list(out)[:50]


def settings_from_profile(profile: Any, read: str, tools: list[str]) -> dict[str, dict[str, Any]]:
    """Each user tool's setting as the runs show it: a field of `read`'s record (or check text) that it, and none of
    the other `tools`, changed, from what to what (see `ToolProfile.changes`), one its name names first ("sim_card"
    for reseat_sim_card, not the signal it brought back), with the first line of its real reply as its `result`;
    tools without such a field are left out."""
    user_tools = getattr(profile, "user_tools", {})
    seen = {n: (user_tools[n].changes.get(read, {}) if n in user_tools else {}) for n in tools}
    out: dict[str, dict[str, Any]] = {}
    for name in tools:
        changes = seen[name]
        # a field only this tool changes is its setting; one every fix changes (the signal) is a consequence
        others = {p for n in tools if n != name for p in seen[n]}
        taken = {s["field"] for s in out.values()}
        own = [p for p in changes if p not in others and p not in taken]
        named = set(tool_words(name)[1:])
        path = next((p for p in own if named & set(re.split(r"[._]", p))), own[0] if own else None)
        if path is not None:
            bad, good = changes[path]
            out[name] = {"field": path, "bad": bad, "good": good}
            reply = user_tools[name].result_example if name in user_tools else None
            if isinstance(reply, str) and reply.strip() and path in parse_device_text(reply):
                out[name]["result"] = reply.strip().splitlines()[0][:200]
    return out


def _thing_read(read: str) -> str:
    """What a read tool shows, in words ("get_app_status" -> "app"), or "" when its name says nothing more."""
    return " ".join(w for w in tool_words(read)[1:] if w not in ("status", "details", "info", "by", "id", "of"))


def _acted(user_tool: str) -> Check:
    return Check(clauses=[CallMade(id="user_acted", call=CallRef(tool=user_tool))])


class UserSideActionDetector(Detector):
    task = "user_side_action"
    teaches = ("user_action_missing",)

    def label(self, view, check: Check, args: dict[str, Any]) -> Label:
        """NA without ground-truth user actions of the candidate's tools; LACKING when one never happened; PRESENT
        when each happened after an agent message telling the user to do it; NA when the user did them unprompted."""
        tools = set(args.get("tools") or [])
        run = view.run
        wanted = [g.name for g in run.ground_truth or [] if g.requestor == "user" and g.name in tools]
        if not wanted:
            return "NA"
        done = {c.name: c.message_index for c in reversed(run.user_calls) if not c.error}
        if any(name not in done for name in wanted):
            return "LACKING"
        for name in wanted:
            verbs, objects = user_action_words(name)
            said = [m.get("content") for m in run.messages[: done[name]] if m.get("role") == "assistant"]
            if not any(isinstance(t, str) and names_action(t, verbs, objects) for t in said):
                return "NA"
        return "PRESENT"

    def portable_check(self, roles: dict[str, str]) -> tuple[Check, dict[str, Any]] | None:
        u, a = roles.get("user_tool"), roles.get("alt_tool")
        return (_acted(u), {"tools": [u, a]}) if u and a else None

    def propose(self, ctx: ProposalContext) -> list[Proposal]:
        """A pair of user-side tools the runs show changing fields of one record, one candidate per pair: an agent
        read's record (the user acted between two reads), or the device as the user's own check tool prints it
        (`params.device`: tau2 telecom, where the agent never reads the device). Where the runs carry expected user
        actions, only tools they expect pair up, the most expected first."""
        user_tools = getattr(ctx.profile, "user_tools", {})
        expected = Counter(g.name for r in ctx.runs for g in r.ground_truth or [] if g.requestor == "user")
        order = [n for n in user_tools if not expected or expected[n]]
        order.sort(key=lambda n: -expected[n])  # stable: the profile's order (most called first) breaks ties
        out, paired = [], set()
        for u in order:
            tool = user_tools[u]
            for read in sorted(tool.changes, key=lambda r: (-len(tool.changes[r]), r)):
                alt = next((v for v in order if v != u and read in user_tools[v].changes
                            and frozenset((u, v)) not in paired
                            and set(user_tools[v].changes[read]) != set(tool.changes[read])), None)
                device = read in user_tools and read not in ctx.profile.tools
                rargs = ctx.args(read)
                if alt is None or not (rargs or device):
                    continue
                settings = settings_from_profile(ctx.profile, read, [u, alt])
                texts = _texts(ctx.runs, read, [s["field"] for s in settings.values()]) if device else []
                if len(settings) < 2 or (device and not texts):
                    continue
                paired.add(frozenset((u, alt)))
                healthy = {} if not device else {
                    s["field"]: s["good"] for v in order if v not in (u, alt) and read in user_tools[v].changes
                    for s in settings_from_profile(ctx.profile, read, [v]).values()
                    if s["field"] not in {x["field"] for x in settings.values()}}
                out.append(_proposal(read, rargs, u, alt, settings, texts, healthy))
                break
        return out

    def infer_params(self, roles: dict[str, str], index: ResultIndex, policy: str = "", rules: Any = None
                     ) -> tuple[dict[str, Any], str]:
        """Nothing: the settings are what the profile saw each user tool change (`settings_from_profile`), which
        `propose` puts in its proposals; the agent-side index holds no user calls."""
        return {}, ""

    def target_tools(self, roles: dict[str, str]) -> list[str]:
        return [t for t in (roles.get("user_tool"), roles.get("alt_tool")) if t]


register_detector(UserSideActionDetector())
