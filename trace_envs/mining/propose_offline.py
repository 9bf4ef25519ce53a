"""Offline proposer: no LLM, deterministic. Instantiates every capability family over the DomainProfile's tools and
over the ground truth the runs carry (expected actions and arguments).

Each candidate is a `CapabilitySpec` (slug name, plain-English description, the profile's tools with their schemas,
kinds and result examples, family, roles, params), with a portable `label_check` and, when the family module is
available, the env-side `check` from `trace_envs.spec.families.env_check`.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any, Iterable

from trace_envs.checks.clauses import (
    CallMade,
    CallRef,
    Check,
    Confirmation,
    Grounded,
    NoCall,
    Order,
)
from trace_envs.mining.label import Candidate
from trace_envs.mining.params import ResultIndex, infer_params
from trace_envs.spec.from_profile import tool_spec
from trace_envs.spec.model import FAMILY_REQUIREMENTS, CapabilitySpec
from trace_envs.trajectories.models import Run

HANDOFF_PATTERN = re.compile(r"(transfer|handoff|hand_off|escalat|human)", re.I)
FREE_TEXT_ARGS = {"summary", "reason", "thought", "expression", "note", "notes", "comment", "message", "text"}
MAX_TOOL_ARGS = 6


def slug(text: str, limit: int = 63) -> str:
    s = re.sub(r"[^a-z0-9_]+", "_", text.lower()).strip("_")
    s = re.sub(r"_+", "_", s)
    if not s or not s[0].isalpha():
        s = "c_" + s
    return s[:limit].rstrip("_") or "cap"


def _domain_slug(domain: str) -> str:
    d = re.sub(r"[^a-z0-9_-]+", "_", (domain or "custom").lower()).strip("_-")
    return d[:41] if d and d[0].isalpha() else "custom"



def _args(profile: Any, tool: str) -> list[str]:
    t = profile.tools.get(tool)
    return list((t.parameters or {}).get("properties", {})) if t is not None else []


def _pairs(runs: list[Run], kinds: dict[str, str]) -> Counter:
    """(read, write, key) -> how often a write call was preceded by the read with the same value of `key`."""
    counts: Counter = Counter()
    for run in runs:
        seen: dict[tuple[str, str], set[str]] = {}
        for c in run.agent_calls:
            kind = kinds.get(c.name)
            if kind == "read":
                for k, v in c.arguments.items():
                    if isinstance(v, (str, int, float)):
                        seen.setdefault((k, str(v)), set()).add(c.name)
            elif kind == "write":
                for k, v in c.arguments.items():
                    if isinstance(v, (str, int, float)):
                        for read in seen.get((k, str(v)), ()):
                            counts[(read, c.name, k)] += 1
    return counts


class _Builder:
    def __init__(self, profile: Any, env_check_fn: Any, index: ResultIndex | None = None) -> None:
        self.profile = profile
        self.env_check = env_check_fn
        self.index = index
        self.names: set[str] = set()
        self.out: list[Candidate] = []
        self.skipped: list[str] = []
        self.policy = (getattr(profile, "policy", "") or "")[:20_000]
        self.domain = _domain_slug(getattr(profile, "domain", "custom"))

    def add(self, name: str, description: str, family: str, roles: dict[str, str], label_check: Check,
            labeler: str, args: dict[str, Any] | None = None, params: dict[str, Any] | None = None,
            extra_tools: list[str] | None = None) -> None:
        needed = FAMILY_REQUIREMENTS[family][1]
        if self.index is not None and any(p not in (params or {}) for p in needed):
            inferred, note = infer_params(family, roles, self.index)
            params = {**inferred, **(params or {})}
            description += note
        base = slug(name)
        n, i = base, 2
        while n in self.names:
            suffix = f"_{i}"
            n, i = base[: 63 - len(suffix)] + suffix, i + 1
        self.names.add(n)
        tools = [t for k, t in roles.items() if k not in ("key", "arg")]
        tools = list(dict.fromkeys(t for t in tools + list(extra_tools or []) if t))[:30]
        check = label_check
        if self.env_check is not None:
            try:
                check = self.env_check(family, roles, params or {})
            except Exception:  # roles the family template cannot use: the portable check stands in
                check = label_check
        try:
            spec = CapabilitySpec(
                name=n, description=description, family=family, domain=self.domain,
                tools=[tool_spec(self.profile, t) for t in tools], roles=roles, params=params or {}, policy=self.policy,
                check=check, label_check=label_check,
            )
        except ValueError as exc:  # e.g. a family whose template needs a role the data cannot supply
            self.skipped.append(f"{n}: {exc}")
            return
        self.out.append(Candidate(spec=spec, labeler=labeler, args=dict(args or {}), origin="offline"))


def _env_check_fn() -> Any:
    try:
        from trace_envs.spec.families import env_check
    except Exception:
        return None
    return env_check


def propose_offline(profile: Any, runs: Iterable[Run], *, min_calls: int = 2, max_candidates: int | None = None,
                    use_env_check: bool = True) -> list[Candidate]:
    """Instantiate each family over the profile's tools and the runs' ground truth. Deterministic."""
    runs = list(runs)
    kinds = {n: t.kind for n, t in profile.tools.items()}
    gt_counts: Counter = Counter()
    gt_numeric: dict[str, Counter] = {}
    has_gt = False
    for run in runs:
        if run.ground_truth is None:
            continue
        has_gt = True
        for g in run.ground_truth:
            if g.requestor != "agent":
                continue
            gt_counts[g.name] += 1
            for k, v in g.arguments.items():
                if isinstance(v, (int, float)) and not isinstance(v, bool):
                    gt_numeric.setdefault(g.name, Counter())[k] += 1
    pairs = _pairs(runs, kinds)
    b = _Builder(profile, _env_check_fn() if use_env_check else None, ResultIndex(runs, kinds))
    reads = [n for n, t in profile.tools.items() if t.kind == "read" and t.calls >= min_calls]
    writes = [n for n, t in profile.tools.items() if t.kind == "write" and (t.calls >= min_calls or gt_counts[n])]
    if not writes:
        writes = [n for n, t in profile.tools.items() if t.kind == "write"]
    handoffs = [n for n, t in profile.tools.items() if t.kind != "read" and HANDOFF_PATTERN.search(n)]
    writes = [w for w in writes if w not in handoffs]
    default_read = reads[0] if reads else None

    def read_key(write: str) -> tuple[str | None, str | None]:
        best = [(cnt, r, k) for (r, w, k), cnt in pairs.items() if w == write]
        if best:
            _, r, k = max(best)
            return r, k
        wargs = _args(profile, write)
        for r in reads:
            shared = [a for a in _args(profile, r) if a in wargs]
            if shared:
                return r, shared[0]
        if default_read is None:
            return None, (wargs[0] if wargs else None)
        rargs = _args(profile, default_read)
        return default_read, (rargs[0] if rargs else (wargs[0] if wargs else None))

    def roles_for(write: str, **extra: str) -> dict[str, str]:
        r, k = read_key(write)
        roles = {"write": write}
        if r:
            roles["read"] = r
        if k:
            roles["key"] = k
        roles.update(extra)
        return roles

    for w in writes:
        ref = CallRef(tool=w)
        # precondition_before_write: read R (same key value) before W
        wp = sorted(((cnt, r, k) for (r, ww, k), cnt in pairs.items() if ww == w), reverse=True)[:2]
        for _, r, k in wp:
            b.add(
                f"read_{r}_before_{w}",
                f"Before calling {w}, look up the record with {r} for the same {k} and check it against the policy.",
                "precondition_before_write", {"read": r, "write": w, "key": k},
                Check(applies_if=[ref], clauses=[Order(id="read_before_write", first=CallRef(tool=r), then=ref,
                                                       join=[k])]),
                "exercised", {"tool": w},
            )
        # confirmation_before_write
        b.add(
            f"confirm_before_{w}",
            f"Before calling {w}, list the action details and get the user's explicit confirmation (yes).",
            "confirmation_before_write", roles_for(w),
            Check(applies_if=[ref], clauses=[Confirmation(id="confirmed", call=ref)]),
            "exercised", {"tool": w},
        )
        if has_gt and gt_counts[w]:
            # multi_request_completion: every expected call of W, with the expected arguments
            b.add(
                f"complete_every_{w}",
                f"Complete every {w} the user's requests call for, with the expected arguments, not only the first.",
                "multi_request_completion", roles_for(w),
                Check(applies_if=[ref], clauses=[CallMade(id="write_made", call=ref)]),
                "completion", {"tool": w},
            )
            # policy_refusal: never call W when the task does not call for it
            b.add(
                f"no_unwarranted_{w}",
                f"Do not call {w} when the policy forbids it or the user's request does not call for it; refuse "
                "and explain instead.",
                "policy_refusal", roles_for(w),
                Check(clauses=[NoCall(id="no_forbidden_write", call=ref)]),
                "refusal", {"tool": w},
            )
            # aggregation_arithmetic: numeric arguments computed right
            for a, cnt in sorted(gt_numeric.get(w, Counter()).items()):
                b.add(
                    f"compute_{a}_for_{w}",
                    f"Compute the numeric argument {a} of {w} correctly from the records (totals, prices, counts).",
                    "aggregation_arithmetic", roles_for(w, arg=a) | {"key": roles_for(w).get("key", a)},
                    Check(applies_if=[ref], clauses=[CallMade(id="write_made", call=ref)]),
                    "arith", {"tool": w, "arg": a},
                )
        # argument_grounding: each (non free-text) argument of W comes from an earlier result or the user
        t = profile.tools[w]
        for a in _args(profile, w)[:MAX_TOOL_ARGS]:
            # The key itself comes from the user's request: that is information gathering, not grounding.
            if a in FREE_TEXT_ARGS or a == roles_for(w).get("key") or _free_text(t.examples.get(a, [])):
                continue
            b.add(
                f"ground_{a}_of_{w}",
                f"Pass argument {a} of {w} exactly as an earlier lookup returned it or the user said it; never "
                "invent ids or values.",
                "argument_grounding", roles_for(w, arg=a),
                Check(applies_if=[ref], clauses=[Grounded(id="grounded", call=ref, args=[a])]),
                "exercised", {"tool": w},
            )
    if has_gt and len(writes) >= 2:
        top = max(writes, key=lambda x: (gt_counts[x], x))
        b.add(
            "complete_all_required_writes",
            "Complete every write the user's requests call for (all of them, each with the expected arguments) "
            "before ending the conversation.",
            "multi_request_completion", roles_for(top),
            Check(clauses=[CallMade(id="some_write", call=CallRef(kind="write"))]),
            "completion", {"tool": None}, extra_tools=writes,
        )
    for h in handoffs:
        ref = CallRef(tool=h)
        r = default_read
        roles = {"handoff": h}
        if r:
            roles["read"] = r
            rargs = _args(profile, r)
            if rargs:
                roles["key"] = rargs[0]
        b.add(
            f"hand_off_with_{h}",
            f"When the request cannot be handled with the available tools or the policy requires it, transfer the "
            f"user to a human with {h} instead of refusing or ending the conversation.",
            "handoff_to_human", roles,
            Check(applies_if=[ref], clauses=[CallMade(id="handed_off", call=ref)]),
            "check",
        )
    # information_gathering: the key of each read comes from the user (or an earlier result), not a guess
    for r in reads:
        rargs = [a for a in _args(profile, r) if a not in FREE_TEXT_ARGS]
        if not rargs:
            continue
        k = rargs[0]
        ref = CallRef(tool=r)
        b.add(
            f"ask_for_{k}_before_{r}",
            f"Ask the user for the {k} (or take it from an earlier result) before calling {r}; never guess it.",
            "information_gathering", {"read": r, "key": k},
            Check(applies_if=[ref], clauses=[Grounded(id="asked_for_key", call=ref, args=[k])]),
            "exercised", {"tool": r},
        )
    out = b.out
    return out[:max_candidates] if max_candidates else out


def build_candidate(profile: Any, family: str, roles: dict[str, str], *, name: str, description: str,
                    origin: str = "llm", params: dict[str, Any] | None = None, use_env_check: bool = True,
                    index: ResultIndex | None = None) -> Candidate:
    """A candidate for `family` over `roles` (e.g. from an LLM proposal), labelled the way the offline proposer labels
    that family; roles the family labeler cannot use fall back to the LLM labeler (`labeler="llm"`)."""
    b = _Builder(profile, _env_check_fn() if use_env_check else None, index or ResultIndex([], {}))
    r, w, k = roles.get("read"), roles.get("write"), roles.get("key")
    h, a = roles.get("handoff"), roles.get("arg")
    label_check: Check | None = None
    labeler, largs = "llm", {}
    if family == "precondition_before_write" and r and w:
        label_check = Check(applies_if=[CallRef(tool=w)], clauses=[
            Order(id="read_before_write", first=CallRef(tool=r), then=CallRef(tool=w), join=[k] if k else [])])
        labeler, largs = "exercised", {"tool": w}
    elif family == "confirmation_before_write" and w:
        label_check = Check(applies_if=[CallRef(tool=w)], clauses=[Confirmation(id="confirmed", call=CallRef(tool=w))])
        labeler, largs = "exercised", {"tool": w}
    elif family == "multi_request_completion" and w:
        label_check = Check(applies_if=[CallRef(tool=w)], clauses=[CallMade(id="write_made", call=CallRef(tool=w))])
        labeler, largs = "completion", {"tool": w}
    elif family == "argument_grounding" and w and a:
        label_check = Check(applies_if=[CallRef(tool=w)], clauses=[Grounded(id="grounded", call=CallRef(tool=w), args=[a])])
        labeler, largs = "exercised", {"tool": w}
    elif family == "policy_refusal" and w:
        label_check = Check(clauses=[NoCall(id="no_forbidden_write", call=CallRef(tool=w))])
        labeler, largs = "refusal", {"tool": w}
    elif family == "information_gathering" and r and k:
        label_check = Check(applies_if=[CallRef(tool=r)], clauses=[Grounded(id="asked_for_key", call=CallRef(tool=r), args=[k])])
        labeler, largs = "exercised", {"tool": r}
    elif family == "aggregation_arithmetic" and w and a:
        label_check = Check(applies_if=[CallRef(tool=w)], clauses=[CallMade(id="write_made", call=CallRef(tool=w))])
        labeler, largs = "arith", {"tool": w, "arg": a}
    elif family == "handoff_to_human" and h:
        label_check = Check(applies_if=[CallRef(tool=h)], clauses=[CallMade(id="handed_off", call=CallRef(tool=h))])
        labeler = "check"
    if label_check is None:
        first = next((t for kk, t in roles.items() if kk not in ("key", "arg")), None)
        if first is None:
            raise ValueError(f"roles {roles} name no tool")
        label_check = Check(applies_if=[CallRef(tool=first)], clauses=[CallMade(id="tool_used", call=CallRef(tool=first))])
    b.add(name, description, family, roles, label_check, labeler, largs, params)
    if not b.out:
        raise ValueError(b.skipped[0] if b.skipped else f"candidate {name} could not be built")
    cand = b.out[0]
    cand.origin = origin
    return cand


def _free_text(examples: list[Any]) -> bool:
    return any(isinstance(e, str) and len(e.split()) > 3 for e in examples)
