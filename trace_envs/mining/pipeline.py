"""`mine(...)`: contrast, propose, label, select. The API behind `trace-envs mine`.

    result = mine(runs)                          # offline proposer
    result = mine(runs, llm=LLMClient("openai:gpt-4o-mini"))   # plus LLM proposals (and LLM labels where needed)
    write_outputs(result, "out/")                # capabilities.json, candidates.json, report.md, report.png

`runs` may be a list or any iterable (a generator of planted runs, say): only the first `profile_sample` runs are held
in memory (to build the DomainProfile, the contrast groups and the candidates); the rest are labelled one at a time.

`mine` takes the runs of one domain (a mix raises `MixedDomainsError`): a domain's candidates are built from its own
tools and policy. `mine_by_domain(runs)` splits runs of several domains and mines each on its own (a name kept in
several domains gets the domain as a suffix); `mine_pooled(runs)` contrasts them together.
"""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

import numpy as np

from trace_envs.jsontext import shared_loads
from trace_envs.mining.contrast import contrast_pairs, contrast_summary, group_runs
from trace_envs.mining.diagnosis import Diagnosis, DiagnosisCollector, cover, restates_outcome
from trace_envs.mining.gates import WEAK_EVIDENCE
from trace_envs.mining.expected import INFERRED, SIMILAR, ExpectedFromPassed
from trace_envs.mining.label import LACKING, PRESENT, Candidate, LabelMatrix, label_runs
from trace_envs.mining.propose_offline import propose_offline
from trace_envs.trajectories.results import ResultIndex
from trace_envs.mining.options import MineOptions
from trace_envs.mining.select import Selection, select, summary_rows
from trace_envs.spec.model import CapabilitySpec, Evidence
from trace_envs.trajectories.models import Run

MIXED_HINT = "mine each domain on its own (mine_by_domain; `trace-envs mine` writes each into OUT/<domain>/, " \
             "--domain NAME picks one)"


class ContrastError(ValueError):
    """The data cannot be contrasted: it has no failed runs or no passed runs."""


@dataclass
class MineResult:
    candidates: list[Candidate]
    selection: Selection
    matrix: LabelMatrix
    rows: list[dict[str, Any]]
    capabilities: list[CapabilitySpec]
    profile: Any
    contrast: dict[str, int]
    options: MineOptions
    mode: str = "offline"
    usage: dict[str, Any] | None = None
    warnings: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    diagnosis: Diagnosis = field(default_factory=Diagnosis)
    ground_truth: dict[str, int] = field(default_factory=dict)

    @property
    def n_runs(self) -> int:
        return self.matrix.n_runs

    @property
    def n_failed(self) -> int:
        return int(self.matrix.failed.sum())

    @property
    def kept(self) -> list[Candidate]:
        return [self.candidates[j] for j in self.selection.kept]

    def closest(self, top: int = 3) -> list[dict[str, Any]]:
        """The `top` candidates that came nearest to being kept (most resamples passed, then highest Delta, then
        Cov), as their summary rows (`name, cov, delta, passes, resamples, status`); candidates that never apply
        (NA on every run) are left out."""
        rows = [r for r in self.rows if not r["kept"] and not r["status"].startswith("never applies")]
        return sorted(rows, key=lambda r: (-r["passes"], -r["delta"], -r["cov"], r["name"]))[:top]

    def none_kept_reason(self) -> str | None:
        """Why nothing was kept, in the words of the thresholds (`closest()` gives the candidates that came nearest,
        `what_to_add()` the evidence that would change it); None when something was kept."""
        if self.capabilities:
            return None
        o = self.options
        if not self.candidates:
            return "no candidate was proposed"
        if not self.closest():
            return f"none of the {len(self.candidates)} candidates applies to any run (NA on every run)"
        refused = len(self.unpublished())
        if refused:
            return (f"{refused} candidate(s) passed the thresholds but generate refuses their envs (the warnings say "
                    "why); no other reached them")
        return (f"no candidate reached Cov >= {o.rho} and Delta >= {o.delta} with its contrast holding in at least "
                f"{o.k} of {o.n} resamples")

    def unpublished(self) -> list[str]:
        """The warnings of candidates the thresholds kept and `generate` would refuse."""
        return [w for w in self.warnings if "generate refuses its env" in w]

    def what_to_add(self) -> list[str]:
        """When nothing was kept: what evidence would let the miner keep something, one line each, from what the
        proposal rules said they lacked, the ground truth the runs carry and the failed runs there are."""
        if self.capabilities:
            return []
        lines: list[str] = []
        refused = [w for w in self.warnings if "not proposed:" in w]
        gates = [w for w in refused if "params.field" in w or "params.blocked" in w or "nothing decides" in w]
        if gates:
            lines.append(f"{len(gates)} proposal(s) need a policy condition the runs do not settle (which record "
                         "field allows a write, when a human is needed): give the policy as rules with --rules FILE "
                         "(templates: examples/rules/airline.yaml, examples/rules/retail.yaml)")
        if len(refused) > len(gates):
            lines.append(f"{len(refused) - len(gates)} other proposal(s) were refused for missing parameters: the "
                         "`not proposed:` warnings name the field each needs")
        truth = self.ground_truth
        if truth and truth.get("none", 0) == self.n_runs and self.n_runs:
            lines.append("no run carries expected actions and no task has a passed run to infer them from: include "
                         "runs that passed (several trials per task) or the tasks' expected actions")
        elif truth and truth.get("none", 0) > self.n_runs / 2:
            lines.append(f"{truth['none']} of {self.n_runs} runs have neither expected actions nor a passed run of "
                         "their task or a similar one: more trials per task give the labelers ground truth")
        if self.n_failed < 10:
            lines.append(f"only {self.n_failed} failed run(s): a capability must cover a share of them and its "
                         "contrast hold in most resamples; more runs, or lower --rho / --delta at the cost of keeping noise")
        if self.unpublished():
            lines.append("fix what the `generate refuses its env` warnings name, or keep such candidates with "
                         "--no-publish-check to inspect them")
        return lines


def contrast_problem(n_runs: int, n_failed: int) -> str | None:
    """Why the data cannot be contrasted, or None."""
    if n_runs == 0:
        return "no runs to mine"
    if n_failed == 0:
        return (f"all {n_runs} runs passed (no failed runs): contrast needs both passed and failed runs to tell which "
                "behaviours go with failure")
    if n_failed == n_runs:
        return (f"all {n_runs} runs failed (no passed runs): contrast needs both passed and failed runs to tell which "
                "behaviours go with failure")
    return None


def mine_by_domain(runs: list[Run], **kwargs: Any) -> dict[str, MineResult]:
    """Mine each domain of `runs` on its own (domain name to its result; `kwargs` as for `mine`, the same for every
    domain). Every domain is checked for both outcomes before any is mined: ContrastError names the first that lacks
    them."""
    from trace_envs.trajectories.profile import split_by_domain

    groups = split_by_domain(runs)
    for name, group in groups.items():
        problem = contrast_problem(len(group), sum(not r.success for r in group))
        if problem:
            raise ContrastError(f"domain {name}: {problem}" if len(groups) > 1 else problem)
    results = {name: mine(group, **kwargs) for name, group in groups.items()}
    _unique_across_domains(results)
    return results


def with_domain(name: str, domain: str) -> str:
    """`name` with the domain as a suffix, still a slug of at most 63 characters."""
    return f"{name[: 62 - len(domain)]}_{domain}"


def _unique_across_domains(results: dict[str, MineResult]) -> None:
    """A capability name kept in several domains (both tau2 domains keep `complete_all_required_writes`) gets each
    domain as a suffix, so that their envs can sit in one folder and one registry."""
    kept = Counter(spec.name for r in results.values() for spec in r.capabilities)
    for r in results.values():
        renamed = {spec.name: with_domain(spec.name, spec.domain) for spec in r.capabilities if kept[spec.name] > 1}
        if not renamed:
            continue
        r.capabilities = [spec.model_copy(update={"name": renamed[spec.name]}).with_hash() if spec.name in renamed
                          else spec for spec in r.capabilities]
        for row in r.rows:
            row["name"] = renamed.get(row["name"], row["name"])
        for c in r.candidates:
            if c.name in renamed:
                c.spec = c.spec.model_copy(update={"name": renamed[c.name]})
        r.diagnosis.coverage = {kind: [renamed.get(n, n) for n in names] for kind, names in r.diagnosis.coverage.items()}


def _profile(runs: list[Run], overrides: Any = None) -> Any:
    from trace_envs.trajectories.profile import build_profile

    return build_profile(runs, overrides) if overrides is not None else build_profile(runs)


def mine(
    runs: Iterable[Run],
    *,
    options: MineOptions | None = None,
    llm: Any = None,
    profile: Any = None,
    overrides: Any = None,
    rules: Any = None,
    progress: Callable[[int], None] | None = None,
    on_total: Callable[[int | None], None] | None = None,
) -> MineResult:
    """Mine capabilities from `runs` (see the module docstring). Raises ContrastError without both outcomes.
    `rules` (a `PolicyRules`, e.g. from `load_rules`) are the domain policy's conditions the specs carry."""
    try:
        return _mine(runs, options=options, llm=llm, profile=profile, overrides=overrides, rules=rules,
                     progress=progress, on_total=on_total)
    finally:
        shared_loads.cache_clear()  # the runs' parsed results are read by this mining alone


def _mine(runs: Iterable[Run], *, options: MineOptions | None, llm: Any, profile: Any, overrides: Any, rules: Any,
          progress: Callable[[int], None] | None, on_total: Callable[[int | None], None] | None) -> MineResult:
    o = options or MineOptions()
    warnings: list[str] = []
    failures: list[str] = []
    if isinstance(runs, list):
        head, rest, total = runs, iter(()), len(runs)
        problem = contrast_problem(len(runs), sum(not r.success for r in runs))
        if problem:
            raise ContrastError(problem)
    else:
        it = iter(runs)
        head = list(itertools.islice(it, o.profile_sample))
        rest, total = it, None
    if on_total:
        on_total(total)
    if profile is None:
        from trace_envs.trajectories.profile import MixedDomainsError, split_by_domain

        domains = split_by_domain(head)
        if len(domains) > 1:
            raise MixedDomainsError(domains, hint=MIXED_HINT)
        profile = _profile(head, overrides)
    kinds = profile.kinds if hasattr(profile, "kinds") else {n: t.kind for n, t in profile.tools.items()}
    head, rest, note = _with_expected(head, rest, kinds)
    if note:
        warnings.append(note)
    truth = Counter("source" if r.ground_truth is not None and r.meta.get("expected") is None
                    else (r.meta.get("expected") or "none") for r in head)
    groups = group_runs(head)
    summary = contrast_summary(groups)
    skipped: list[str] = []
    attributions: dict[str, Any] = {}
    candidates = propose_offline(profile, head, min_calls=o.min_calls, rules=rules, skipped=skipped,
                                 attributions=attributions)
    warnings += [f"not proposed: {line}" for line in skipped]
    usage = None
    labeler = None
    mode = "offline"
    if llm is not None:
        from trace_envs.mining.llm import LLMLabeler, propose_llm

        mode = f"llm:{llm.name}"
        index = ResultIndex(head, profile.kinds)
        outcome = propose_llm(llm, profile, contrast_pairs(groups, o.max_pairs), pairs_per_prompt=o.pairs_per_prompt,
                              concurrency=o.concurrency, existing={c.name for c in candidates}, index=index)
        warnings += outcome.warnings
        failures += outcome.failures
        candidates = outcome.candidates + candidates
        labeler = LLMLabeler(llm)
    if o.max_candidates:
        candidates = candidates[: o.max_candidates]
    if not candidates:
        raise ContrastError("no candidate capabilities: the runs show no write, read or handoff tools to build on")
    collector = DiagnosisCollector()
    matrix = label_runs(itertools.chain(head, rest), candidates, kinds, progress=progress, on_view=collector,
                        attributions=attributions)
    if labeler is not None and any(c.labeler == "llm" for c in candidates):
        items = [
            (j, c, i, r)
            for j, c in enumerate(candidates) if c.labeler == "llm"
            for i, r in enumerate(head[: o.llm_label_runs])
        ]
        from trace_envs.mining.label import CODES

        for (i, j), lab in labeler.label_many(items, o.concurrency).items():
            matrix.labels[i, j] = CODES[lab]
        failures += [f"labeling {name}: {err}" for name, err in labeler.failures.items()]
    failures += [f"labeling {name}: {err}" for name, err in matrix.errors.items()]
    if labeler is not None:
        usage = llm.usage.as_dict()
    return _select(candidates, matrix, o, collector.diagnosis, profile=profile, contrast=summary, mode=mode,
                   usage=usage, warnings=warnings, failures=failures, ground_truth=dict(truth))


def _with_expected(head: list[Run], rest: Iterable[Run], kinds: dict[str, str]
                   ) -> tuple[list[Run], Iterable[Run], str | None]:
    """`head` and `rest` with expected actions inferred from the passed runs where the source carries none (see
    `trace_envs.mining.expected`), and a line saying how many runs got them."""
    expected = ExpectedFromPassed(head, kinds)
    if not expected.active:
        return head, rest, None
    head = [expected.fill(r) for r in head]
    without = sum(1 for r in head if r.meta.get("expected") is None and r.ground_truth is None)
    inferred = sum(1 for r in head if r.meta.get("expected") == INFERRED)
    similar = sum(1 for r in head if r.meta.get("expected") == SIMILAR)
    note = (f"expected actions inferred from passed runs: {inferred} runs from their own task's passed runs, "
            f"{similar} from a similar task's, {without} without (their task and no similar one passed)")
    return head, expected.fill_all(rest), note


def _select(candidates: list[Candidate], matrix: LabelMatrix, o: MineOptions, diagnosis: Diagnosis, **rest: Any
            ) -> MineResult:
    """Selection over a labelled matrix, each candidate's summary row, the kept specs with their evidence, and the
    diagnosis's coverage; `rest` are the MineResult's other fields."""
    problem = contrast_problem(matrix.n_runs, int(matrix.failed.sum()))
    if problem:
        raise ContrastError(problem)
    warnings = rest.pop("warnings")
    names = [c.name for c in candidates]
    sel = select(matrix.labels, matrix.failed, [(c.detector, tuple(c.target_tools())) for c in candidates], names, o)
    rows = summary_rows(sel, names)
    ids = np.array(matrix.run_ids, dtype=object)
    for j, (c, row) in enumerate(zip(candidates, rows)):
        col = matrix.labels[:, j]
        lf_ids = [str(x) for x in ids[(col == LACKING) & matrix.failed][: o.examples]]
        pp_ids = [str(x) for x in ids[(col == PRESENT) & ~matrix.failed][: o.examples]]
        restated = restates_outcome(col, matrix.failed)
        row.update(family=c.spec.family, tools=c.target_tools(), roles=c.spec.roles, description=c.spec.description,
                   origin=c.origin, labeler=c.labeler, lacking_failed=lf_ids, present_passed=pp_ids,
                   restates_outcome=restated, domain=c.spec.domain)
        if restated:
            warnings.append(f"{c.name}: its labels restate the source's success criterion (LACKING on failed runs, "
                            "PRESENT on passed ones, on 95% of the runs it applies to); it names no capability")
    def spec_of(j: int) -> CapabilitySpec:
        c, row = candidates[j], rows[j]
        ev = Evidence(
            cov=row["cov"], delta=row["delta"], er_minus=row["er_minus"], er_plus=row["er_plus"], passes=row["passes"],
            resamples=o.n, lacking_failed=row["lacking_failed"], present_passed=row["present_passed"],
            source=f"trace-envs mine ({c.origin}; {matrix.n_runs} runs, rho={o.rho}, delta={o.delta}, K={o.k}/N={o.n})",
        )
        return c.spec.model_copy(update={"evidence": ev}).with_hash()

    if o.check_publish:
        warnings += _publishable(sel, rows, names, spec_of)
    caps = [spec_of(j) for j in sel.kept]
    # A kept env punishes whoever breaks its gate: a gate few runs support and no policy sentence states is said.
    warnings += [f"{spec.name}: {spec.description.rsplit('. ', 1)[-1].strip()}" for spec in caps
                 if WEAK_EVIDENCE in spec.description]
    cover(diagnosis, [candidates[j] for j in sel.kept], matrix.labels, matrix.run_ids, list(sel.kept))
    return MineResult(candidates=candidates, selection=sel, matrix=matrix, rows=rows, capabilities=caps, options=o,
                      warnings=warnings, diagnosis=diagnosis, **rest)


def _publishable(sel: Selection, rows: list[dict[str, Any]], names: list[str],
                 spec_of: Callable[[int], CapabilitySpec]) -> list[str]:
    """Keep only capabilities whose env publishes: a kept one `generate` would refuse is dropped (its row says why)
    and the candidates merged into it are tried in their order, the first that publishes kept in its place. Returns
    one warning per refusal."""
    from trace_envs.mining.publishable import publish_problem, publish_problems

    warnings: list[str] = []
    kept: list[int] = []
    problems = publish_problems([spec_of(j) for j in sel.kept])
    for j, problem in zip(sel.kept, problems):
        if problem is None:
            kept.append(j)
            continue
        why = problem.splitlines()[0]
        sel.status[j] = rows[j]["status"] = f"kept by Cov and Delta, but its env does not publish: {why}"
        rows[j]["kept"] = False
        warnings.append(f"{names[j]}: kept by Cov and Delta, but generate refuses its env ({why}); not kept")
        merged = [i for i, st in enumerate(sel.status) if st.startswith(f"merged into {names[j]} ")]
        for i in sorted(merged, key=lambda i: (-rows[i]["delta"], -rows[i]["cov"], names[i])):
            if publish_problem(spec_of(i)) is None:
                kept.append(i)
                sel.status[i], rows[i]["status"], rows[i]["kept"] = "kept", "kept", True
                warnings.append(f"{names[i]}: kept in place of {names[j]}, which it was merged into")
                break
    sel.kept = kept
    return warnings


def mine_pooled(runs: list[Run], *, options: MineOptions | None = None, overrides: Any = None,
                progress: Callable[[int], None] | None = None) -> MineResult:
    """One contrast over several domains' runs, as the paper pools tau2-bench's airline and retail tasks: each domain
    proposes its candidates from its own tools and policy and labels its own runs (a candidate is NA on another
    domain's runs), and Cov, Delta and the bootstrap are computed over all the runs together. Candidate names that two
    domains share get the domain as a suffix. Offline proposer only; ContrastError without both outcomes."""
    from trace_envs.trajectories.profile import split_by_domain

    o = options or MineOptions()
    problem = contrast_problem(len(runs), sum(not r.success for r in runs))
    if problem:
        raise ContrastError(problem)
    groups = split_by_domain(runs)
    per_domain: list[tuple[list[Run], list[Candidate], dict[str, str]]] = []
    warnings: list[str] = []
    for name, group in groups.items():
        profile = _profile(group, overrides)
        group, _, note = _with_expected(group, (), profile.kinds)
        if note:
            warnings.append(f"{name}: {note}")
        skipped: list[str] = []
        cands = propose_offline(profile, group, min_calls=o.min_calls, skipped=skipped)
        warnings += [f"{name}: not proposed: {line}" for line in skipped]
        per_domain.append((group, cands, profile.kinds))
    seen = Counter(c.name for _, cands, _ in per_domain for c in cands)
    candidates: list[Candidate] = []
    for _, cands, _ in per_domain:
        for c in cands:
            if seen[c.name] > 1:
                c.spec = c.spec.model_copy(update={"name": with_domain(c.name, c.spec.domain)})
            candidates.append(c)
    if not candidates:
        raise ContrastError("no candidate capabilities: the runs show no write, read or handoff tools to build on")
    collector = DiagnosisCollector()
    blocks, run_ids, task_ids, failed, errors = [], [], [], [], {}
    offset = 0
    for group, cands, kinds in per_domain:
        m = label_runs(group, cands, kinds, progress=progress, on_view=collector)
        block = np.zeros((m.n_runs, len(candidates)), dtype=np.int8)
        block[:, offset: offset + len(cands)] = m.labels
        offset += len(cands)
        blocks.append(block)
        run_ids += m.run_ids
        task_ids += m.task_ids
        failed.append(m.failed)
        errors.update(m.errors)
    matrix = LabelMatrix(labels=np.vstack(blocks), run_ids=run_ids, task_ids=task_ids, failed=np.concatenate(failed),
                         errors=errors)
    return _select(candidates, matrix, o, collector.diagnosis, profile=None, contrast=contrast_summary(
        group_runs(runs)), mode=f"offline, pooled over {len(groups)} domains ({', '.join(groups)})", usage=None,
        warnings=warnings, failures=[f"labeling {n}: {e}" for n, e in errors.items()])
