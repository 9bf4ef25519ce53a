"""Multi-request completion: finish every request the user made, not just the first.

In the opening message the user asks for the same write on `knobs.requests` different records (all listed). Each one
needs a lookup, then the write; stopping after the first is the failure. Bindings: `target_0` .. `target_{n-1}`,
`targets` (the list) and `target` (= `target_0`).

Example episode (airline, three cancellations):

    user:  Hi! I'd like to cancel the reservation for each of these reservation ids: A1B2C3, D4E5F6 and G7H8I9.
    agent: get_reservation_details(A1B2C3), cancel_reservation(A1B2C3), ... the same for D4E5F6 and G7H8I9
    agent: Done: I completed the cancel reservation request for A1B2C3, D4E5F6 and G7H8I9.
"""

from __future__ import annotations

from typing import Any

from trace_envs.checks.clauses import AllCompleted, CallMade, CallRef, Check, NoCall, Order
from trace_envs.families import labeling
from trace_envs.families.base import Family, Label, Proposal, ProposalContext
from trace_envs.families.registry import register_family
from trace_envs.runtime import Scenario, UserRequest
from trace_envs.runtime.phrases import done_message, request_phrase
from trace_envs.runtime.world import RecordEnv, call, canonical_json, fill_arguments, make_records, new_state


class MultiRequestEnv(RecordEnv):
    def __init__(self, render_mode: str | None = None, max_turns: int | None = None, hint_rate: float | None = None):
        # A read and a write per request plus a closing message must fit in the episode.
        floor = 2 * self.SPEC.knobs.requests + 4
        super().__init__(
            render_mode=render_mode, max_turns=max_turns or max(self.SPEC.knobs.max_turns, floor), hint_rate=hint_rate
        )

    def build_scenario(self, rng) -> Scenario:
        spec = self.SPEC
        roles, knobs = spec.roles, spec.knobs
        read, write, key = roles["read"], roles["write"], roles["key"]
        n = knobs.requests
        records = make_records(spec, read, key, n + knobs.distractors, rng)
        ids = list(records)
        targets, others = ids[:n], ids[n:]
        label = key.replace("_", " ")
        fixed = fill_arguments(spec.tool(write), {key: targets[0]})
        extras = {k: v for k, v in fixed.items() if k != key}
        listed = _enumerate(targets)
        plural = label + "s" if n > 1 else label
        opening = f"Hi! I'd like to {request_phrase(write)} for {'each of these' if n > 1 else 'this'} {plural}: {listed}."
        if extras:
            opening += " Use these details for " + ("each of them: " if n > 1 else "it: ") + canonical_json(extras)
        if n > 1:
            opening += f" That's {n} in total, please take care of all of them."
        done = done_message(write, listed)
        writes = [call(write, **dict(fixed, **{key: t})) for t in targets]
        reads = [call(read, **{key: t}) for t in targets]
        other = others[0] if others else "X" + targets[-1]
        wrong = call(write, **dict(fixed, **{key: other}))
        oracle = [step for pair in zip(reads, writes) for step in pair] + [done]
        swapped = [writes[0], reads[0]] + [step for pair in zip(reads[1:], writes[1:]) for step in pair] + [done]
        mutants = {
            "drop_required_call": oracle[:-2] + [done],
            "swap_calls": swapped,
            "wrong_argument": oracle[:-2] + [wrong, done],
            "forbidden_extra_call": oracle[:-1] + [wrong, done],
            "text_only": [done],
        }
        bindings: dict[str, Any] = {f"target_{i}": t for i, t in enumerate(targets)}
        bindings.update(target=targets[0], targets=list(targets))
        requests = [UserRequest.write(write, key, t) for t in targets]
        return Scenario(
            state=new_state(records), bindings=bindings, opening=opening, requests=requests, oracle=oracle, mutants=mutants
        )


def _enumerate(items: list[str]) -> str:
    if len(items) == 1:
        return items[0]
    return ", ".join(items[:-1]) + " and " + items[-1]


class MultiRequestCompletion(Family):
    name = "multi_request_completion"
    summary = "Complete every request the user made (each with the expected arguments), not only the first."
    roles = ("read", "write", "key")
    env_class = MultiRequestEnv
    generic = True

    def check(self, roles: dict[str, str], params: dict[str, Any], requests: int = 2) -> Check:
        key, read, write = roles["key"], roles["read"], roles["write"]
        n = max(1, requests)
        writes = [CallRef(tool=write, args={key: {"$var": f"target_{i}"}}) for i in range(n)]
        return Check(clauses=[
            AllCompleted(id="all_requests", weight=3, calls=writes, description="complete every request the user made"),
            *[
                Order(
                    id=f"read_before_write_{i}", weight=1, requires=["all_requests"],
                    first=CallRef(tool=read, args={key: {"$var": f"target_{i}"}}), then=writes[i], join=[key],
                )
                for i in range(n)
            ],
            NoCall(
                id="no_other_write", weight=1, requires=["all_requests"],
                call=CallRef(tool=write, args={key: {"$not": {"$in": {"$var": "targets"}}}}),
            ),
        ])

    def problems(self, spec: Any) -> list[str]:
        out = super().problems(spec)
        size = next((len(c.calls) for c in spec.check.clauses if c.id == "all_requests" and hasattr(c, "calls")), None)
        if size not in (None, spec.knobs.requests):
            out.append(
                f"knobs.requests is {spec.knobs.requests} but the check was built for {size} requests; rebuild it "
                "with env_check(..., requests=knobs.requests)"
            )
        return out

    def label(self, view, check: Check, args: dict[str, Any]) -> Label:
        return labeling.completion(view, args.get("tool"))

    def portable_check(self, roles: dict[str, str]) -> tuple[Check, dict[str, Any]] | None:
        w = roles.get("write")
        return (_write_made(w), {"tool": w}) if w else None

    def propose(self, ctx: ProposalContext) -> list[Proposal]:
        if not ctx.has_gt:
            return []
        out = [
            Proposal(
                name=f"complete_every_{w}",
                description=f"Complete every {w} the user's requests call for, with the expected arguments, not only "
                "the first.",
                roles=ctx.roles_for(w),
                label_check=_write_made(w),
                label_args={"tool": w},
            )
            for w in ctx.writes
            if ctx.gt_counts[w]
        ]
        if len(ctx.writes) >= 2:
            top = max(ctx.writes, key=lambda x: (ctx.gt_counts[x], x))
            out.append(Proposal(
                name="complete_all_required_writes",
                description="Complete every write the user's requests call for (all of them, each with the expected "
                "arguments) before ending the conversation.",
                roles=ctx.roles_for(top),
                label_check=Check(clauses=[CallMade(id="some_write", call=CallRef(kind="write"))]),
                label_args={"tool": None},
                extra_tools=list(ctx.writes),
            ))
        return out


def _write_made(write: str) -> Check:
    return Check(applies_if=[CallRef(tool=write)], clauses=[CallMade(id="write_made", call=CallRef(tool=write))])


register_family(MultiRequestCompletion())
