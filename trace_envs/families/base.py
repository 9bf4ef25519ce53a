"""The contract every capability family fulfils, and the data its offline proposal rule reads.

A family is one kind of capability an agent can lack (check a precondition before a write, finish every request, ...).
Its module holds everything trace-envs knows about it: the roles it binds to the target's tools and arguments, its
params (a pydantic model), the check a generated env scores episodes with, how a real run is labelled, when the offline
proposer instantiates it, how its params are read off real runs, and the env class that builds its scenarios.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from trace_envs.checks.attribution import FREE_TEXT_ARGS  # noqa: F401  (re-exported: families import it from here)
from trace_envs.checks.clauses import Check
from trace_envs.language.patterns import word_pattern
from trace_envs.language.words import verb_synonyms
from trace_envs.checks.run_view import RunView
from trace_envs.trajectories.results import ResultIndex, gate_candidates, judged_gate

Label = Literal["PRESENT", "LACKING", "NA"]

MAX_TOOL_ARGS = 6


class NoParams(BaseModel):
    """A family without params."""

    model_config = ConfigDict(extra="forbid")


@dataclass
class Proposal:
    """One candidate capability a family proposes over a domain: what the miner turns into a CapabilitySpec.

    `label_check` is the portable check (no `$var`) that labels real runs; `label_args` tells the family's labeler what
    the candidate is about (e.g. `{"tool": "cancel_order"}`); `params` left out are inferred from the runs;
    `results[tool]` are real results of a tool to build scenarios from where the profile keeps none (it keeps record
    results, not the option lists a search returns)."""

    name: str
    description: str
    roles: dict[str, str]
    label_check: Check
    label_args: dict[str, Any] = field(default_factory=dict)
    params: dict[str, Any] | None = None
    extra_tools: list[str] = field(default_factory=list)
    results: dict[str, list[Any]] = field(default_factory=dict)


@dataclass
class ProposalContext:
    """What the offline proposer knows about a domain, computed once and read by every family's `propose`.

    `pairs[(read, write, key)]` counts writes preceded by that read with the same value of `key`; `gt_counts[tool]` and
    `gt_numeric[tool][arg]` count the agent's ground-truth actions and their numeric arguments (empty without ground
    truth). `reads`, `writes` and `handoffs` are the tools worth proposing over (called at least `min_calls` times);
    `runs` are the runs themselves (the profile's sample), for families that read what the index does not keep."""

    profile: Any
    index: ResultIndex
    pairs: Counter
    gt_counts: Counter
    gt_numeric: dict[str, Counter]
    has_gt: bool
    reads: list[str]
    writes: list[str]
    handoffs: list[str]
    rules: Any = None
    runs: list[Any] = field(default_factory=list)

    def args(self, tool: str) -> list[str]:
        """Argument names of `tool` as the profile saw them."""
        t = self.profile.tools.get(tool)
        return list((t.parameters or {}).get("properties", {})) if t is not None else []

    def read_key(self, write: str) -> tuple[str | None, str | None]:
        """The read tool and key argument that go with `write`: the pair seen most often in the runs, else the read
        whose results held the values passed to the write (a phone number found with `search_contacts`, sent with
        `send_message_with_phone_number`: they share no argument) and its first argument, else a read sharing an
        argument with it, else the first read and its first argument."""
        best = [(cnt, r, k) for (r, w, k), cnt in self.pairs.items() if w == write]
        if best:
            _, r, k = max(best)
            return r, k
        supplied = Counter({r: sum(paths.values()) for (r, w, _), paths in self.index.arg_sources.items()
                            if w == write and r in self.reads})
        if supplied:
            r = max(supplied, key=lambda name: (supplied[name], name))
            rargs = self.args(r)
            if rargs:
                return r, rargs[0]
        wargs = self.args(write)
        for r in self.reads:
            shared = [a for a in self.args(r) if a in wargs]
            if shared:
                return r, shared[0]
        default_read = self.reads[0] if self.reads else None
        if default_read is None:
            return None, (wargs[0] if wargs else None)
        rargs = self.args(default_read)
        return default_read, (rargs[0] if rargs else (wargs[0] if wargs else None))

    def roles_for(self, write: str, **extra: str) -> dict[str, str]:
        """`{"write": write, "read": ..., "key": ...}` (read and key as `read_key` finds them) plus `extra`."""
        r, k = self.read_key(write)
        roles = {"write": write}
        if r:
            roles["read"] = r
        if k:
            roles["key"] = k
        roles.update(extra)
        return roles

    def free_text(self, tool: str, arg: str) -> bool:
        """Whether `arg` of `tool` holds prose (by name, or examples of more than three words)."""
        t = self.profile.tools.get(tool)
        examples = t.examples.get(arg, []) if t is not None else []
        return arg in FREE_TEXT_ARGS or any(isinstance(e, str) and len(e.split()) > 3 for e in examples)


class Family:
    """Subclass and `register_family(YourFamily())` to add a capability family (see `examples/custom_family.py`).

    Class attributes:
        name: the family's slug, as specs name it (`family: <name>`).
        summary: one sentence on the capability.
        roles: the roles every spec of the family must bind (`read`, `write`, `key`, `arg`, `handoff`, ...); a role
            names a tool, except `key` and `arg`, which name arguments.
        params: the pydantic model of the family's params (validated when a spec is loaded).
        env_class: the `TraceEnv` subclass whose `build_scenario` makes the family's episodes; a generated env
            subclasses it and sets `SPEC`.
        generic: True for a family whose check restates the task's outcome (ranked after specific families on ties).
        template: the jinja2 template a spec of the family renders through.
        teaches: the departures from a source's expected actions (`trace_envs.checks.attribution.KINDS`) that an
            agent trained on the family's env learns to avoid; the mining report says which kept capability covers
            each kind of failure the runs show.
        refines: families whose capability this one narrows (a claim to verify is a read before a write, and a
            refusal of a write the record forbids, on the user's word): where both are eligible over the same
            tools, mining keeps this one only.
    """

    name: ClassVar[str]
    summary: ClassVar[str]
    roles: ClassVar[tuple[str, ...]]
    params: ClassVar[type[BaseModel]] = NoParams
    env_class: ClassVar[type]
    generic: ClassVar[bool] = False
    template: ClassVar[str] = "env.py.j2"
    teaches: ClassVar[tuple[str, ...]] = ()
    refines: ClassVar[tuple[str, ...]] = ()

    def check(self, roles: dict[str, str], params: dict[str, Any], requests: int = 2) -> Check:
        """The check a generated env scores episodes with; `$var`s refer to the scenario's bindings."""
        raise NotImplementedError

    def label(self, view: RunView, check: Check, args: dict[str, Any]) -> Label:
        """PRESENT / LACKING / NA of a real run for a candidate of this family (`check` is its portable check)."""
        raise NotImplementedError

    def portable_check(self, roles: dict[str, str]) -> tuple[Check, dict[str, Any]] | None:
        """The portable check and labeler args for a candidate over `roles` (an LLM's proposal), or None when the
        roles do not give the family's labeler what it needs."""
        return None

    def propose(self, ctx: ProposalContext) -> list[Proposal]:
        """The candidates of this family the offline proposer instantiates over a domain."""
        return []

    def infer_params(self, roles: dict[str, str], index: ResultIndex, policy: str = "", rules: Any = None
                     ) -> tuple[dict[str, Any], str]:
        """Params for `roles`, from the domain's `rules` (a `PolicyRules`) where they say, else read off the runs and
        checked against the `policy` text; and a sentence for the description saying what they mean. Empty when
        nothing the policy supports gives them."""
        return {}, ""

    def target_tools(self, roles: dict[str, str]) -> list[str]:
        """The tools a capability of this family is about (used to map it to a known deficit); default the write."""
        return [roles["write"]] if roles.get("write") else []

    # ---- shared by every family -------------------------------------------------------------------------------------
    def problems(self, spec: Any) -> list[str]:
        """What is wrong with a spec's roles and params for this family (empty when it is fine)."""
        roles, tools = spec.roles, {t.name for t in spec.tools}
        out = [f"roles.{r} is missing" for r in self.roles if r not in roles]
        out += [
            f"roles.{role} names {tool!r}, which is not in tools"
            for role, tool in roles.items()
            if role not in ("key", "arg") and tool not in tools
        ]
        try:
            self.params.model_validate(spec.params)
        except ValidationError as exc:
            for err in exc.errors():
                where = ".".join(str(p) for p in err["loc"])
                out.append(f"params.{where}: {err['msg']}" if where else f"params: {err['msg']}")
        return out

    def params_of(self, params: dict[str, Any]) -> BaseModel:
        """The spec's params as this family's params model."""
        return self.params.model_validate(params)


SLUG = re.compile(r"^[a-z][a-z0-9_]{1,62}$")


def infer_gate(roles: dict[str, str], index: ResultIndex, policy: str, rules: Any = None) -> tuple[dict[str, Any], str]:
    """The record field (and its allowed / blocked values) a write turns on: from the domain's rules when they name
    one for the write, else as the passed runs show it when the policy names that field or its values; no params
    otherwise (a rule the agent is never shown cannot be checked)."""
    read, write, key = roles.get("read", ""), roles.get("write", ""), roles.get("key", "")
    gate = rules_gate(rules, write, index.enum_fields(read)) if rules is not None else None
    if gate is None:
        # What the runs show, checked against the policy: a field whose value a policy sentence names together with
        # the write's action ("Basic economy flights cannot be modified") before one the policy only mentions
        # somewhere ("insurance"); the passed runs' shift, then the warranted / unwarranted writes' split, decide ties.
        found = [*gate_candidates(index, read, write, key), *filter(None, [judged_gate(index, read, write, key)])]
        backed = [(policy_support(policy, g, write), -i, g) for i, g in enumerate(found)]
        gate = max(((s, i, g) for s, i, g in backed if s), key=lambda t: t[:2], default=(0, 0, None))[2]
        if gate is None:
            return {}, ""
    return gate, f" The write is allowed only when {gate['field']} is {' or '.join(map(str, gate['allowed']))}."


def rules_gate(rules: Any, write: str, fields: dict[str, Counter]) -> dict[str, Any] | None:
    """The gate a write's rule states on an enum field of the records: a `requires` that lists the allowed (or
    forbidden) values, or an `allows` alternative that does; the other values the runs show fill the other side."""
    rule = rules.rule(write) if rules is not None else None
    if rule is None:
        return None
    for cond in [*rule.requires, *rule.allows]:
        if cond.op not in ("in", "not_in") or cond.path.startswith("fact:") or cond.also:
            continue
        seen = [v for v in fields.get(cond.path, {})]
        listed = list(cond.value)
        others = [v for v in seen if v not in listed]
        allowed, blocked = (listed, others) if cond.op == "in" else (others, listed)
        if allowed and blocked:
            return {"field": cond.path, "allowed": sorted(map(str, allowed)), "blocked": sorted(map(str, blocked))}
    return None


GENERIC_VALUES = frozenset({"yes", "true", "false", "none", "null"})


def policy_support(policy: str, gate: dict[str, Any], write: str) -> int:
    """How the policy backs a gate for `write`: 2 when a sentence names one of its values (`basic economy`; not a
    yes / no, which any sentence may hold) together with a verb for the write's action ("Basic economy flights cannot
    be modified"); 1 when the policy names the field or a value anywhere; 0 otherwise."""
    if not policy_mentions(policy, gate):
        return 0
    action = re.compile(word_pattern(list(verb_synonyms(write))), re.I)
    values = [str(v).lower().replace("_", " ") for v in [*gate.get("blocked", []), *gate.get("allowed", [])]]
    values = [v for v in values if len(v) >= 3 and v not in GENERIC_VALUES]
    for sentence in re.split(r"(?<=[.!?:])\s+|\n+", policy.lower().replace("_", " ")):
        if action.search(sentence) and any(re.search(rf"\b{re.escape(v)}\b", sentence) for v in values):
            return 2
    return 1


def policy_mentions(policy: str, gate: dict[str, Any]) -> bool:
    """Whether the policy names the gate's field (its last path segment) or one of its values, as words."""
    lowered = policy.lower()
    terms = [gate["field"].split(".")[-1], *map(str, gate.get("allowed", [])), *map(str, gate.get("blocked", []))]
    return any(re.search(rf"\b{re.escape(t.lower().replace('_', ' '))}\b", lowered.replace("_", " ")) for t in terms if t)
