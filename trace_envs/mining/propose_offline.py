"""Offline proposer: no LLM, deterministic. Every registered detector proposes its family's candidates over the
DomainProfile's tools and the ground truth the runs carry (expected actions and arguments).

Each candidate is a `CapabilitySpec` (slug name, plain-English description, the profile's tools with their schemas,
kinds and result examples, family, roles, params inferred from the runs when the family needs them), with a portable
`label_check` and the family's env-side `check`.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any, Iterable

from trace_envs.checks.attribution import attribute
from trace_envs.checks.trace import read_result
from trace_envs.families import get_task
from trace_envs.mining.detector import Proposal, ProposalContext, all_detectors, detector_for, get_detector
from trace_envs.language.confirmations import policy_requires_confirmation
from trace_envs.mining.gates import as_the_policy_says, policy_support
from trace_envs.mining.label import Candidate
from trace_envs.spec.from_profile import tool_spec
from trace_envs.spec.model import CapabilitySpec
from trace_envs.spec.policy_text import excerpt, with_current_time
from trace_envs.spec.rules import Condition, PolicyRules, WriteRule
from trace_envs.trajectories.handoff import is_handoff
from trace_envs.trajectories.models import Run
from trace_envs.families.kit import listing_check
from trace_envs.spec.model import ListedRecords
from trace_envs.trajectories.results import ResultIndex, gate_candidates, items_at


def slug(text: str, limit: int = 63) -> str:
    s = re.sub(r"[^a-z0-9_]+", "_", text.lower()).strip("_")
    s = re.sub(r"_+", "_", s)
    if not s or not s[0].isalpha():
        s = "c_" + s
    return s[:limit].rstrip("_") or "cap"


def _domain_slug(domain: str) -> str:
    d = re.sub(r"[^a-z0-9_-]+", "_", (domain or "custom").lower()).strip("_-")
    return d[:41] if d and d[0].isalpha() else "custom"


def _pairs(runs: list[Run], kinds: dict[str, str], listed: dict[str, tuple[str, str]] | None = None) -> Counter:
    """(read, write, key) -> how often a write call was preceded by the read with the same value of `key`, or by a
    listing read (`listed`: read -> (list path, id field), see `ResultIndex.listed`) that listed the record whose id
    the write passed as `key`."""
    counts: Counter = Counter()
    listed = listed or {}
    for run in runs:
        seen: dict[tuple[str, str], set[str]] = {}
        for c in run.agent_calls:
            kind = kinds.get(c.name)
            if kind == "read":
                for k, v in c.arguments.items():
                    if isinstance(v, (str, int, float)):
                        seen.setdefault((k, str(v)), set()).add(c.name)
                if c.name in listed and c.result and not c.error:
                    path, field = listed[c.name]
                    for item in items_at(read_result(c.result), path):
                        if isinstance(item.get(field), str):
                            seen.setdefault((field, item[field]), set()).add(c.name)
            elif kind == "write":
                for k, v in c.arguments.items():
                    if isinstance(v, (str, int, float)):
                        for read in seen.get((k, str(v)), ()):
                            counts[(read, c.name, k)] += 1
    return counts


class _Builder:
    """Turns proposals into candidates: params inferred when missing, unique names, the profile's tools, the policy
    sections that govern them, the rules and record invariants of the domain."""

    def __init__(self, profile: Any, index: ResultIndex, rules: PolicyRules | None = None) -> None:
        self.profile = profile
        self.index = index
        self.names: set[str] = set()
        self.out: list[Candidate] = []
        self.skipped: list[str] = []
        self.policy = getattr(profile, "policy", "") or ""
        self.domain = _domain_slug(getattr(profile, "domain", "custom"))
        self.rules = rules if rules is not None else domain_rules(profile)

    def add(self, detector: str, p: Proposal, labeler: str = "family", origin: str = "offline") -> None:
        found = get_detector(detector)
        family = found.task
        params = dict(p.params or {})
        description, note, inferred = p.description, "", {}
        if p.params is None:
            inferred, note = found.infer_params(p.roles, self.index, self.policy, self.rules)
            params = {**inferred, **params}
            description += note
        base = slug(p.name)
        n, i = base, 2
        while n in self.names:
            suffix = f"_{i}"
            n, i = base[: 63 - len(suffix)] + suffix, i + 1
        self.names.add(n)
        tools = [t for k, t in p.roles.items() if k not in ("key", "arg")]
        tools = list(dict.fromkeys(t for t in tools + list(p.extra_tools) if t))[:30]
        try:
            check = get_task(family).check(p.roles, params)
        except Exception:  # roles the family cannot use: the portable check stands in
            check = p.label_check
        specs = [tool_spec(self.profile, t) for t in tools]
        for s in specs:
            if p.results.get(s.name) and not s.result_examples:
                s.result_examples = list(p.results[s.name])[:50]
        read = p.roles.get("read")
        label_check = p.label_check
        listing = self.listing(read, p.roles.get("key"))
        if listing is not None:
            # The read takes the owner's id and lists the records; the key is a listed record's own id: the spec
            # says so (the env lists the scenario's records), and no check asks the read for the record's key.
            for s in specs:
                if s.name == read:
                    s.lists = listing
            check = listing_check(check, read, listing.id, listing.by)
            label_check = listing_check(label_check, read, listing.id, listing.by)
        writes = [t.name for t in specs if t.kind == "write"]
        handoffs = [t for k, t in p.roles.items() if k == "handoff"]
        terms = [str(params.get("field", "")).split(".")[-1], *map(str, params.get("blocked", []))]
        shown = with_current_time(excerpt(self.policy, writes, handoffs, terms), self.rules.now)[:20_000]
        rules = self.rules.model_copy(update={"writes": [r for r in self.rules.writes if r.tool in tools]})
        # invariants learned on a listing read's whole results address the list, not the records a scenario draws
        invariants = list(getattr(self.profile, "invariants", {}).get(read, [])) if read and listing is None else []
        try:
            spec = CapabilitySpec(
                name=n, description=description, family=family, domain=self.domain, tools=specs, roles=p.roles,
                params=params, policy=shown, rules=rules, invariants=invariants, check=check,
                label_check=label_check,
            )
        except ValueError as exc:  # e.g. a family whose env needs a role the data cannot supply
            why = str(exc).split("Value error, ", 1)[-1].split(" [type=", 1)[0].strip()
            if note and not inferred:  # why nothing was learned: the evidence that would settle it
                why += f" ({note.strip()})"
            self.skipped.append(f"{n}: {why}")
            return
        self.out.append(Candidate(spec=spec, labeler=labeler, args=dict(p.label_args), origin=origin,
                                  detector=found.name))


    def listing(self, read: str | None, key: str | None) -> ListedRecords | None:
        """How `read` lists the records whose own id is `key`, when it is a listing read (see `ResultIndex.listed`)
        taking one argument other than `key`."""
        where = self.index.listed.get(read or "")
        if where is None or where[1] != key:
            return None
        tool = self.profile.tools.get(read)
        args = [a for a in ((tool.parameters or {}).get("properties", {}) if tool is not None else {}) if a != key]
        if len(args) != 1:
            return None
        return ListedRecords(by=args[0], path=where[0], id=key)


def domain_rules(profile: Any, rules: PolicyRules | None = None, runs: list[Run] | None = None) -> PolicyRules:
    """The rules mined specs carry: a rules file's (see `trace_envs.spec.rules`), completed from the profile: the
    current time the policy states, confirmation before writes when the policy asks for it, and the owner field when
    the records have one owner per request and the policy asks for the user's id or the users of `runs` give it
    (most openings state the owner id of the records their run read: "Hi, I'm ana_silva_1234")."""
    policy = getattr(profile, "policy", "") or ""
    base = rules or PolicyRules()
    owner = _domain_owner(getattr(profile, "invariants", {}))
    example, examples = base.user_example, list(base.user_examples)
    if owner and re.search(r"user\s*id|authenticat", policy, re.I):
        identify = base.identify_user or owner
    else:
        stated = _stated_owner(runs or [], owner, dict(getattr(profile, "kinds", {})))
        identify = base.identify_user or (stated[0] if stated else None)
        if stated and not owner and not example:
            example, examples = stated[1][0], stated[1][1:]
    return base.model_copy(update={
        "now": base.now or getattr(profile, "now", None),
        "confirm_writes": base.confirm_writes or policy_requires_confirmation(policy),
        "identify_user": identify,
        "user_example": example if identify else None,
        "user_examples": examples if identify else [],
    })


def _domain_owner(invariants: dict[str, list[Any]]) -> str | None:
    """The owner field of the domain's records: the one the most read tools' records share one value of per request.
    Any field that one request reads once is an owner of its tool's records (an app status read once names one
    `device`), so the first found was a coin toss over the tools' order: the user's id is the owner of most."""
    shared = Counter(p for invs in invariants.values() for p in {i.path for i in invs if i.kind == "owner" and i.path})
    return max(shared, key=lambda p: shared[p]) if shared else None  # ties: the first found, as before


USER_EXAMPLES = 20  # distinct ids of users' own a mined spec keeps to draw its scenarios' users after


def _stated_owner(runs: list[Run], owner: str | None, kinds: dict[str, str]) -> tuple[str, list[str]] | None:
    """The field of the records the runs read that names who the user is, as most users' openings state it ("Hi,
    I'm ana_silva_1234", a loan's `member_id`; "Hi, account AC482913"), and the first `USER_EXAMPLES` distinct values
    of it: the owner field when the runs show one, else the top-level field whose value most openings state, across
    requests for at least two different writes (a bill id is stated only by those who ask about that bill: the record
    of one request)."""
    stated: Counter = Counter()
    present: Counter = Counter()
    examples: dict[str, list[str]] = {}
    writes: dict[str, set[str]] = {}
    for run in runs:
        fields: dict[str, str] = {}
        for c in run.agent_calls:
            if c.result and not c.error:
                fields.update(_top_fields(c.result))
        fields = {f: v for f, v in fields.items() if owner is None or f == owner}
        opening = run.request_text()
        present.update(list(fields))
        made = {c.name for c in run.agent_calls if not c.error and kinds.get(c.name) == "write"}
        for f, v in fields.items():
            if v in opening:
                stated[f] += 1
                seen = examples.setdefault(f, [])
                if v not in seen and len(seen) < USER_EXAMPLES:
                    seen.append(v)
                writes.setdefault(f, set()).update(made)
    ranked = [(n, f) for f, n in stated.items() if n >= 2 and n >= 0.5 * present[f] and len(writes[f]) >= 2]
    if not ranked:
        return None
    field = max(ranked)[1]
    return field, examples[field]


def _top_fields(result: str) -> dict[str, str]:
    """The top-level string fields of a record result that look like an identifier (a digit in them)."""
    try:
        data = json.loads(result)
    except (ValueError, RecursionError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: v for k, v in data.items() if isinstance(v, str) and len(v) >= 4 and any(ch.isdigit() for ch in v)}


def learned_rules(ctx: ProposalContext, rules: PolicyRules) -> PolicyRules:
    """`rules` plus, for each write they leave unruled, the gate the runs show when a policy sentence names its value
    with the write's verb ("Basic economy flights cannot be modified": cabin in business, economy), so that every
    env over that write (an option choice, a completion) draws records the shown policy allows, not only the env
    that checks the rule. Gates the policy only mentions somewhere are left to the families that check them."""
    added = []
    policy = ctx.profile.policy or ""
    for write in ctx.writes:
        if rules.rule(write) is not None:
            continue
        read, key = ctx.read_key(write)
        if not read or not key:
            continue
        gate = next((g for g in gate_candidates(ctx.index, read, write, key)
                     if policy_support(policy, g, write) == 2), None)
        if gate is not None:
            # the values the policy names move the line: "Basic economy flights cannot be modified" blocks basic
            # economy alone, though the runs' few economy reservations were left alone too
            gate = as_the_policy_says(gate, policy, write)
            added.append(WriteRule(tool=write, requires=[Condition(
                path=gate["field"], op="in", value=list(gate["allowed"]),
                words=f"the {gate['field']} is {' or '.join(map(str, gate['allowed']))} (as the runs show it)")]))
    return rules.model_copy(update={"writes": [*rules.writes, *added]}) if added else rules


def proposal_context(profile: Any, runs: list[Run], min_calls: int = 2, rules: PolicyRules | None = None,
                     attributions: dict[str, Any] | None = None) -> ProposalContext:
    """What every family's `propose` reads: tool pairs, ground-truth counts, and the tools worth proposing over."""
    kinds = profile.kinds
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
    reads = [n for n, t in profile.tools.items() if t.kind == "read" and t.calls >= min_calls]
    writes = [n for n, t in profile.tools.items() if t.kind == "write" and (t.calls >= min_calls or gt_counts[n])]
    if not writes:
        writes = [n for n, t in profile.tools.items() if t.kind == "write"]
    handoffs = [n for n, t in profile.tools.items() if t.kind != "read" and is_handoff(n, profile)]
    index = ResultIndex(runs, kinds, verdicts=_verdicts(kinds, attributions))
    return ProposalContext(
        profile=profile, index=index, pairs=_pairs(runs, kinds, index.listed), gt_counts=gt_counts,
        gt_numeric=gt_numeric, has_gt=has_gt, reads=reads, writes=[w for w in writes if w not in handoffs],
        handoffs=handoffs, rules=rules, runs=runs,
    )


def _verdicts(kinds: dict[str, str], cache: dict[str, Any] | None = None):
    """Which writes of a run its expected actions make and which they do not (see `trace_envs.checks.attribution`);
    each run's attribution is kept in `cache` by run id, when given, for the labelling that follows."""
    def verdicts(run: Run) -> dict[int, bool]:
        a = attribute(run, kinds)
        if cache is not None:
            cache[run.run_id] = a
        if a is None:
            return {}
        if run.meta.get("declined"):  # the passed runs left the write out because the user said no
            return {i: v for i, v in a.verdicts().items() if v}
        return a.verdicts()
    return verdicts


def propose_offline(profile: Any, runs: Iterable[Run], *, min_calls: int = 2, max_candidates: int | None = None,
                    rules: PolicyRules | None = None, skipped: list[str] | None = None,
                    attributions: dict[str, Any] | None = None) -> list[Candidate]:
    """Every registered detector's proposals over the profile's tools and the runs' ground truth. Deterministic.
    `rules`: the domain policy's conditions (a rules file), which the specs carry. Proposals that cannot make a sound
    env (no field the policy decides by, ...) are left out; `skipped`, when given, receives one line on each."""
    runs = list(runs)
    full = domain_rules(profile, rules, runs)
    ctx = proposal_context(profile, runs, min_calls, full, attributions)
    full = learned_rules(ctx, full)
    ctx.rules = full
    b = _Builder(profile, ctx.index, full)
    for name, detector in all_detectors().items():
        for proposal in detector.propose(ctx):
            b.add(name, proposal)
    if skipped is not None:
        skipped.extend(b.skipped)
    out = b.out
    return out[:max_candidates] if max_candidates else out


def build_candidate(profile: Any, family: str, roles: dict[str, str], *, name: str, description: str,
                    origin: str = "llm", params: dict[str, Any] | None = None,
                    index: ResultIndex | None = None, rules: PolicyRules | None = None) -> Candidate:
    """A candidate for `family` over `roles` (e.g. from an LLM proposal), labelled the way the family's detector labels
    its own candidates; roles the detector cannot use fall back to the LLM labeler (`labeler="llm"`)."""
    detector = detector_for(family)
    b = _Builder(profile, index or ResultIndex([], {}), domain_rules(profile, rules))
    portable = detector.portable_check(roles)
    if portable is not None:
        label_check, label_args = portable
        labeler = "family"
    else:
        from trace_envs.checks.clauses import CallMade, CallRef, Check

        first = next((t for k, t in roles.items() if k not in ("key", "arg")), None)
        if first is None:
            raise ValueError(f"roles {roles} name no tool")
        label_check = Check(applies_if=[CallRef(tool=first)], clauses=[CallMade(id="tool_used", call=CallRef(tool=first))])
        label_args, labeler = {}, "llm"
    proposal = Proposal(name=name, description=description, roles=roles, label_check=label_check,
                        label_args=label_args, params=params)
    b.add(detector.name, proposal, labeler=labeler, origin=origin)
    if not b.out:
        raise ValueError(b.skipped[0] if b.skipped else f"candidate {name} could not be built")
    return b.out[0]
