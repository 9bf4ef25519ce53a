"""Property tests of the checks: random traces and random checks built from every clause type and matcher.

- a check's score, and every clause's effective score, is in [0, 1]; `passed` agrees with the score; labels are one of
  PRESENT / LACKING / NA; the only exception `evaluate` may raise is the documented ValueError when no active clause
  carries weight;
- a NoCall clause scores 0 as soon as a call it forbids (and none of its `unless` exempts) is in the trace, and as a
  penalty it zeroes the check;
- adding a call that matches a NoCall clause (and no call reference of any other clause, and whose failed result can
  ground nothing) never raises a check's score; for checks made only of NoCall, FinalState and Communicated clauses
  without `after`, any call matching a NoCall clause never raises it;
- every committed env's oracle scores 1.0 on random seeds.
"""

from __future__ import annotations

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from trace_envs.checks import ActionTrace, CallRef, Check, NoCall, TraceStep, matches
from trace_envs.checks.matching import resolve
from trace_envs.generate.policies import run_scripted

from _reliability import committed_envs, env_class, examples

KINDS = {"get_order": "read", "get_user": "read", "cancel_order": "write", "refund": "write", "transfer": "other"}
TOOLS = [*KINDS, "mystery_tool"]
ARG_KEYS = ["order_id", "amount", "note", "items"]
POOL = ["A1", "B2", "C3", "a1", "", "yes", 1, 2.5, 100, -3, 0, True, False, None, [1, 2], ["A1"], {"k": "A1"}, {}]
BINDINGS = {"target": "A1", "other": "B2", "amount": 2.5, "flag": True, "off": False, "items": ["A1", "B2"], "n": 100}
REGEXES = {"A.*": "A1", "[A-C][0-9]": "B2", ".*": "", "(?i)a1": "a1", "[0-9]+": "100", "x{0,3}": "xx"}
TEXTS = ["Shall I proceed with cancel?", "yes, go ahead", "no", "The total is $2.50.", "Your order A1 is cancelled.",
         "order B2", "100", "1,000.00", "Do you want me to refund?", "ok", "", "A1 B2 C3", "thanks"]

values = st.sampled_from(POOL)
var_names = st.sampled_from(sorted(BINDINGS))
matcher = st.recursive(
    values
    | var_names.map(lambda v: {"$var": v})
    | st.sampled_from(sorted(REGEXES)).map(lambda p: {"$regex": p})
    | st.tuples(st.sampled_from([1, 2.5, 100, {"$var": "amount"}]), st.sampled_from([0.01, 0.5, 10]))
    .map(lambda t: {"$approx": t[0], "$tol": t[1]})
    | st.just({"$any": True}),
    lambda inner: inner.map(lambda m: {"$not": m}) | st.lists(inner, min_size=1, max_size=3).map(lambda xs: {"$in": xs}),
    max_leaves=4,
)


@st.composite
def call_refs(draw) -> CallRef:
    tool = draw(st.none() | st.sampled_from(TOOLS))
    kind = draw(st.sampled_from(["read", "write", "other"]) if tool is None else st.none() | st.sampled_from(["read", "write", "other"]))
    args = draw(st.dictionaries(st.sampled_from(ARG_KEYS), matcher, max_size=2))
    return CallRef(tool=tool, kind=kind, args=args, match=draw(st.sampled_from(["subset", "exact"])))


def _clause(draw, kind: str, cid: str, earlier: list[str]) -> dict:
    base = {
        "id": cid,
        "type": kind,
        "weight": draw(st.sampled_from([0.0, 0.5, 1.0, 2.0, 100.0])),
        "requires": draw(st.lists(st.sampled_from(earlier), unique=True, max_size=2)) if earlier else [],
        "when": draw(st.sampled_from([None, None, "flag", "!flag", "off", "!off", "unbound"])),
    }
    ref = lambda: draw(call_refs()).model_dump()  # noqa: E731
    if kind in ("call_made", "no_call", "confirmation", "asked"):
        base["call"] = ref()
    if kind == "call_made":
        base["min_count"] = draw(st.integers(min_value=1, max_value=3))
    elif kind == "no_call":
        base.update(unless=[ref() for _ in range(draw(st.integers(min_value=0, max_value=1)))],
                    penalty=draw(st.booleans()))
    elif kind == "asked":
        base.update(after=ref() if draw(st.booleans()) else None,
                    action_words=draw(st.none() | st.just(["cancel", "refund"])),
                    details=draw(st.none() | st.just([{"$var": "target"}])))
    elif kind == "order":
        base.update(first=ref(), then=ref(), join=draw(st.lists(st.sampled_from(ARG_KEYS), max_size=2)))
    elif kind == "confirmation" and draw(st.booleans()):
        base.update(ask_pattern=r"(?i)\b(shall i|want me)\b", yes_pattern=r"(?i)\b(yes|ok)\b")
    elif kind == "all_completed":
        base["calls"] = [ref() for _ in range(draw(st.integers(min_value=1, max_value=3)))]
    elif kind == "grounded":
        base.update(call=ref(), args=draw(st.lists(st.sampled_from(ARG_KEYS), min_size=1, max_size=2, unique=True)))
    elif kind == "communicated":
        base.update(
            values=draw(st.lists(values | var_names.map(lambda v: {"$var": v}), min_size=1, max_size=3)),
            mode=draw(st.sampled_from(["all", "any"])),
            after=ref() if draw(st.booleans()) else None,
        )
    elif kind == "final_state":
        base.update(
            path=draw(st.sampled_from(["records.A1.status", "records.$target.status", "writes.0.tool", "writes",
                                       "records.$other", "x.y", "records.$items"])),
            op=draw(st.sampled_from(["eq", "ne", "in", "not_in", "exists", "absent"])),
            value=draw(values | st.just({"$var": "target"}) | st.just(["open", "cancelled"])),
        )
    return base


CLAUSE_TYPES = ["call_made", "order", "no_call", "confirmation", "asked", "all_completed", "grounded", "communicated",
                "final_state"]


@st.composite
def checks(draw, types: list[str] = CLAUSE_TYPES, must_have: str | None = None) -> Check:
    kinds = draw(st.lists(st.sampled_from(types), min_size=1, max_size=6))
    if must_have is not None and must_have not in kinds:
        kinds.insert(draw(st.integers(min_value=0, max_value=len(kinds))), must_have)
    clauses, ids = [], []
    for i, kind in enumerate(kinds):
        clauses.append(_clause(draw, kind, f"c{i}", ids))
        ids.append(f"c{i}")
    weighted = [c for c in clauses if not c.get("penalty")]
    if not weighted:  # a check needs a clause that is not a penalty
        clauses[0]["penalty"] = False
        weighted = [clauses[0]]
    if sum(c["weight"] for c in weighted) <= 0:
        weighted[0]["weight"] = 1.0
    return Check.model_validate({"clauses": clauses, "applies_if": [draw(call_refs()).model_dump()] if draw(st.booleans()) else []})


@st.composite
def steps(draw) -> TraceStep:
    kind = draw(st.sampled_from(["call", "call", "say", "user"]))
    if kind == "call":
        return TraceStep(
            kind="call",
            name=draw(st.sampled_from(TOOLS)),
            arguments=draw(st.dictionaries(st.sampled_from(ARG_KEYS), values, max_size=3)),
            result=draw(st.none() | values | st.just({"order_id": "A1", "status": "open", "total": 2.5})),
            error=draw(st.booleans()),
        )
    return TraceStep(kind=kind, text=draw(st.sampled_from(TEXTS) | st.text(max_size=30)))


final_states = st.none() | st.fixed_dictionaries(
    {
        "records": st.dictionaries(st.sampled_from(["A1", "B2", "C3"]),
                                   st.fixed_dictionaries({"status": st.sampled_from(["open", "cancelled", 1, None])}),
                                   max_size=3),
        "writes": st.lists(st.fixed_dictionaries({"tool": st.sampled_from(TOOLS)}), max_size=2),
    }
)


@st.composite
def traces(draw) -> ActionTrace:
    kinds = draw(st.sampled_from([KINDS, {}, {"get_order": "read"}]))
    return ActionTrace(steps=draw(st.lists(steps(), max_size=10)), final_state=draw(final_states), tool_kinds=kinds)


def _evaluate(check: Check, trace: ActionTrace, bindings: dict):
    """`evaluate`, allowing only its documented ValueError (no active non-penalty clause carries weight)."""
    active_weight = sum(c.weight for c in check.clauses if c.active(bindings) and not getattr(c, "penalty", False))
    try:
        result = check.evaluate(trace, bindings)
    except ValueError as exc:
        assert active_weight <= 0, f"unexpected ValueError: {exc}"
        return None
    assert active_weight > 0
    return result


def _in_unit(x: float) -> bool:
    return 0.0 <= x <= 1.0 and x == x


# ---- scores in [0, 1] ------------------------------------------------------------------------------------------------


@examples(300, 3000)
@given(checks(), traces(), st.sampled_from([BINDINGS, {**BINDINGS, "flag": False, "off": True}]))
def test_property_scores_in_unit_interval(check, trace, bindings):
    result = _evaluate(check, trace, bindings)
    if result is None:
        return
    assert _in_unit(result.score)
    assert all(_in_unit(v) for v in result.breakdown.values())
    assert set(result.breakdown) == {c.id for c in check.clauses if c.active(bindings)}
    assert result.passed == (result.score >= 1.0 - 1e-9)
    for clause in check.clauses:  # each clause's raw score too, as the miner's per-clause breakdown uses it
        assert _in_unit(float(clause.score(trace, bindings)))
    assert check.label(trace, bindings=bindings) in ("PRESENT", "LACKING", "NA")
    # A check survives its JSON round trip with the same result.
    again = Check.model_validate_json(check.model_dump_json())
    assert again.evaluate(trace, bindings).score == result.score


# ---- NoCall ---------------------------------------------------------------------------------------------------------

CANDIDATES = [*POOL, "B2", "zz", 3.7, 99, {"other": 1}, [None]] + list(REGEXES.values())


def _satisfying(m, draw):
    """A value that satisfies matcher `m` under BINDINGS, or a sentinel when none is found."""
    if isinstance(m, dict) and m and next(iter(m)) in ("$var", "$regex", "$approx", "$in", "$any", "$not"):
        op = next(iter(m))
        if op == "$var":
            return BINDINGS[m["$var"]]
        if op == "$regex":
            return REGEXES[m["$regex"]]
        if op == "$approx":
            return resolve(m["$approx"], BINDINGS)
        if op == "$any":
            return draw(values)
        if op == "$in":
            return _satisfying(draw(st.sampled_from(m["$in"])), draw)
        if op == "$not":
            ok = [c for c in CANDIDATES if not matches(m["$not"], c, BINDINGS)]
            return draw(st.sampled_from(ok)) if ok else _NONE
    return m


_NONE = object()


def _forbidden_call(ref: CallRef, draw) -> TraceStep:
    if ref.tool is not None:
        name = ref.tool
    else:
        pool = [t for t in TOOLS if KINDS.get(t, "other") == ref.kind]
        name = draw(st.sampled_from(pool))
    args = {k: _satisfying(m, draw) for k, m in ref.args.items()}
    assume(all(v is not _NONE for v in args.values()))
    if ref.match == "subset" and draw(st.booleans()):
        extra = draw(st.sampled_from(ARG_KEYS))
        args.setdefault(extra, draw(values))
    return TraceStep(kind="call", name=name, arguments=args, result={"error": "refused"}, error=True)


def _all_refs(clause) -> list[CallRef]:
    refs = [getattr(clause, a, None) for a in ("call", "first", "then", "after")]
    refs += list(getattr(clause, "calls", []) or [])
    return [r for r in refs if r is not None]


@examples(200, 3000)
@given(st.data())
def test_property_forbidden_call_zeroes_no_call_and_never_raises_the_score(data):
    check = data.draw(checks(must_have="no_call"))
    trace = data.draw(traces())
    trace = trace.model_copy(update={"tool_kinds": KINDS})
    forbidding = [c for c in check.clauses if isinstance(c, NoCall)]
    target = data.draw(st.sampled_from(forbidding))
    step = _forbidden_call(target.call, data.draw)
    assume(target.call.hits(step, trace, BINDINGS) and not any(u.hits(step, trace, BINDINGS) for u in target.unless))
    pos = data.draw(st.integers(min_value=0, max_value=len(trace.steps)))
    after = trace.model_copy(update={"steps": trace.steps[:pos] + [step] + trace.steps[pos:]})

    before_result = _evaluate(check, trace, BINDINGS)
    after_result = _evaluate(check, after, BINDINGS)
    assert target.score(after, BINDINGS) == 0.0
    if after_result is None:
        return
    if target.active(BINDINGS):
        assert after_result.breakdown[target.id] == 0.0
        if target.penalty:
            assert after_result.score == 0.0
    # Only the NoCall clauses (and what requires them) may notice a call that no other clause refers to.
    others = [r for c in check.clauses if not isinstance(c, NoCall) for r in _all_refs(c)]
    if not any(r.hits(step, after, BINDINGS) for r in others):
        assert after_result.score <= before_result.score + 1e-12
        for cid, value in after_result.breakdown.items():
            assert value <= before_result.breakdown[cid] + 1e-12


@examples(150, 3000)
@given(st.data())
def test_property_forbidden_call_never_raises_a_prohibition_check(data):
    """Checks of NoCall, FinalState and Communicated (without `after`): no added forbidden call raises the score."""
    check = data.draw(checks(types=["no_call", "final_state", "communicated"], must_have="no_call"))
    assume(all(getattr(c, "after", None) is None for c in check.clauses))
    trace = data.draw(traces()).model_copy(update={"tool_kinds": KINDS})
    target = data.draw(st.sampled_from([c for c in check.clauses if isinstance(c, NoCall)]))
    step = _forbidden_call(target.call, data.draw)
    step = step.model_copy(update={"result": data.draw(st.none() | values), "error": data.draw(st.booleans())})
    assume(target.call.hits(step, trace, BINDINGS) and not any(u.hits(step, trace, BINDINGS) for u in target.unless))
    pos = data.draw(st.integers(min_value=0, max_value=len(trace.steps)))
    after = trace.model_copy(update={"steps": trace.steps[:pos] + [step] + trace.steps[pos:]})
    before_result, after_result = _evaluate(check, trace, BINDINGS), _evaluate(check, after, BINDINGS)
    if before_result is not None:
        assert after_result is not None and after_result.score <= before_result.score + 1e-12


# ---- the oracle of every committed env -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", committed_envs())
@examples(25, 500)
@given(seed=st.integers(min_value=0, max_value=2**32 - 1))
def test_property_oracle_scores_one_on_random_seeds(name, seed):
    env = env_class(name)()
    score, info = run_scripted(env, "oracle", seed)
    assert score == 1.0, (seed, info.get("reward_breakdown"))
    # The same trace through the check directly (what the miner's labeling uses).
    assert env.SPEC.check.evaluate(env.trace(), env.scenario.bindings).score == 1.0
