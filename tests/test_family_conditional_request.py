"""conditional_request: the user asks for one write if a fact of their record holds and another otherwise; the agent
must read the record and make only the write the fact selects. The example env runs over real tau2 retail orders
(cancel if pending, else return); the family is proposed and labelled on the real tau2 retail runs and on the
help-desk planted runs (restore the line if suspended, else turn roaming on), whose mining recovers the deficit."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from _family import committed_example, seed_where
from trace_envs.checks.run_view import RunView
from trace_envs.datasets.helpdesk import DOMAIN
from trace_envs.envs_loader import env_class, import_module_from
from trace_envs.families.conditional_request.detector import states_condition
from trace_envs.generate.policies import run_actions, run_policy, run_scripted
from trace_envs.generate.publish import MODULE_FILE, generate_one
from trace_envs.mining.label import label_view, spec_target_tools
from trace_envs.mining.propose_offline import propose_offline
from trace_envs.runtime.world import call
from trace_envs.trajectories.loaders import load_runs
from trace_envs.trajectories.models import Run
from trace_envs.trajectories.profile import build_profile

NAME = "retail_cancel_if_pending_else_return"
READ, CANCEL, RETURN = "get_order_details", "cancel_pending_order", "return_delivered_order_items"
SEEDS = range(20)
DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
RETAIL = [DATA / "tau2-bench" / "results" / f"{m}_retail.json" for m in ("gpt-4.1", "ft-gpt-4.1")]
TAU = DATA / "tau-bench" / "gpt-4o-airline.json"
needs_data = pytest.mark.skipif(not TAU.exists(), reason="real data not found beside the repo (../shared/data)")
HELPDESK_CAND = "restore_line_if_suspended_else_set_roaming"


@pytest.fixture(scope="module")
def generated():
    return committed_example(NAME)


def _domain(runs):
    profile = build_profile(runs)
    ours = {c.name: c for c in propose_offline(profile, runs) if c.spec.family == "conditional_request"}
    return runs, {n: t.kind for n, t in profile.tools.items()}, ours


@pytest.fixture(scope="module")
def retail():
    return _domain(load_runs(RETAIL).runs)


@pytest.fixture(scope="module")
def helpdesk():
    return _domain(DOMAIN.generate(2000, 0))


# ---------------------------------------------------------------------------------------------- the example env
def _steps(env, tool):
    """The confirmation and the call of `tool` on the scenario's order, as the oracle words them."""
    b = env.scenario.bindings
    args = next(json.loads(a)["arguments"] for m in env.mutant_actions().values() for a in m + env.oracle_actions()
                if a.startswith("{") and json.loads(a)["name"] == tool and json.loads(a)["arguments"]["order_id"]
                == b["target"])
    return [f"I will {tool.replace('_', ' ')} for order {b['target']}. Do you confirm (yes/no)?", call(tool, **args)]


def test_the_opening_never_gives_away_the_fact(generated):
    _, cls = generated
    env = cls()
    shapes = set()
    for seed in SEEDS:
        env.reset(seed=seed)
        b, records = env.scenario.bindings, env.scenario.state["records"]
        record = records[b["target"]]
        assert record["status"] == b["value"] == ("pending" if b["first"] else "delivered")
        assert env.scenario.klass == ("first" if b["first"] else "other")
        assert len({r["user_id"] for r in records.values()}) == 1 and len(records) == 2
        # the same words whichever branch holds: only the ids differ
        shapes.add(re.sub(r"#W\d+|\b[a-z]+_[a-z]+_\d{4}\b", "<id>", env.opening))
    assert shapes == {"Hi! My user id is <id>. If the status of my order <id> is pending, I'd like to cancel pending "
                      "order <id> (reason: no longer needed); otherwise, I'd like to return the delivered items of "
                      "order <id>. For the item ids and payment method id, use the ones on my order."}


def test_branches_are_balanced_and_no_constant_branch_pays(generated):
    _, cls = generated
    env = cls()
    firsts = [(env.reset(seed=s), env.scenario.bindings["first"])[1] for s in SEEDS]
    assert sum(firsts) == 10
    for tool, right in ((CANCEL, firsts), (RETURN, [not f for f in firsts])):
        scores = []
        for seed in SEEDS:
            env.reset(seed=seed)
            read = call(READ, order_id=env.scenario.bindings["target"])
            scores.append(run_actions(env, [read, *_steps(env, tool), "Done. Have a nice day!"], seed=seed)[0])
        # "always this branch" succeeds exactly where the fact selects it: half the seeds, nothing elsewhere
        assert scores == [1.0 if r else 0.0 for r in right]


def test_lazy_strategies_earn_less(validated_example):
    _, result, cls = validated_example(NAME)
    assert {"other_branch", "both_writes", "read_then_ask"} <= set(result.report.mutants)
    env = cls()
    for seed in SEEDS:
        assert run_scripted(env, "oracle", seed)[0] == 1.0, seed
        for mutant in ("other_branch", "both_writes", "read_then_ask", "wrong_argument", "text_only"):
            assert run_scripted(env, "mutant", seed, mutant=mutant)[0] == 0.0, (seed, mutant)
        # the right write without reading the order first: a part only
        assert run_scripted(env, "mutant", seed, mutant="drop_required_call")[0] == pytest.approx(2 / 3)


def test_a_careful_agent_earns_one_and_a_lazy_one_nothing(generated):
    _, cls = generated
    env = cls()
    seed = seed_where(env, lambda s: not s.bindings["first"])
    b = env.scenario.bindings
    read = call(READ, order_id=b["target"])
    record = env.scenario.state["records"][b["target"]]
    careful = ["Let me look up your order first.", read,
               f"Your order {b['target']} has been delivered, so I will return its items as you asked.",
               *_steps(env, RETURN), "The return is requested; you will get an email with instructions. Goodbye!"]
    assert run_actions(env, careful, seed=seed)[0] == 1.0
    assert run_actions(env, [read, f"Here is your order: {json.dumps(record)}"], seed=seed)[0] == 0.0
    assert run_actions(env, ["I have taken care of everything. Goodbye!"], seed=seed)[0] == 0.0
    # the first branch the user named, after reading a delivered order: the penalty
    score, info = run_actions(env, [read, *_steps(env, CANCEL), "Done."], seed=seed)
    assert score == 0.0 and info["reward_breakdown"]["no_write"] == 0.0


def test_same_seed_same_episode(generated):
    _, cls = generated
    a, b = cls(), cls()
    for seed in (0, 5, 13):
        assert a.reset(seed=seed)[0] == b.reset(seed=seed)[0]
        assert a.oracle_actions() == b.oracle_actions() and a.mutant_actions() == b.mutant_actions()
    assert a.reset(seed=1)[0] != a.reset(seed=2)[0]


# ------------------------------------------------------------------------------------------- what a conditional is
def _says(text: str) -> Run:
    return Run.model_construct(messages=[{"role": "user", "content": text}])


@pytest.mark.parametrize("text, conditional", [
    # tau2 retail task 42, both models: a condition on the order's status, with its other branch
    ("Also, I ordered a jigsaw—can you check if it’s shipped yet? If not, I’d like to change it to the easiest one "
     "you have, since my kid is too young for the one I picked.", True),
    # ft-gpt-4.1 retail task 100: an "if" naming the status
    ("If the order is still pending, is there any way you can change it to match what I want before it ships?", True),
    # conditions on what the agent can do, not on a record (tasks 56, 55, 71): not this family's
    ("If I can’t cancel just the air purifier, can you change it to the cheapest air purifier you have instead?",
     False),
    ("I was hoping you could help me cancel or return any orders I have open, if that’s possible.", False),
    ("I can provide my name and zip code if that helps.", False),
])
def test_conditionals_as_real_users_state_them(text, conditional):
    writes = ["modify_pending_order_items", RETURN, CANCEL]
    assert states_condition(_says(text), writes, ["pending", "delivered"]) is conditional


# ------------------------------------------------------------------------------------------------------ real data
@needs_data
def test_proposed_and_labelled_on_real_tau2_retail(retail):
    runs, kinds, ours = retail
    assert set(ours) == {"modify_items_if_pending_else_return_items", "modify_address_if_pending_else_return_items"}
    cand = ours["modify_items_if_pending_else_return_items"]
    assert cand.spec.roles == {"read": READ, "write": "modify_pending_order_items", "alt": RETURN, "key": "order_id"}
    assert cand.spec.params == {"field": "status", "values": ["pending"], "other_values": ["delivered"]}
    labels = {r.run_id: label_view(cand, RunView(r, kinds)) for r in runs}
    # the two runs of task 42 ("check if it's shipped yet? If not, change it"), both passed: modified, not returned
    assert {k for k, v in labels.items() if v != "NA"} == {"gpt-4.1_retail/42/0", "ft-gpt-4.1_retail/42/0"}
    assert set(labels.values()) == {"NA", "PRESENT"}
    run = next(r for r in runs if r.run_id == "gpt-4.1_retail/42/0")
    # without expected actions, the status read before the write selects the branch: pending, modified
    assert label_view(cand, RunView(run.model_copy(update={"ground_truth": None}), kinds)) == "PRESENT"
    # the other branch's write on that order instead (and the run failed): LACKING
    calls = [c.model_copy(update={"name": RETURN}) if c.name == "modify_pending_order_items" else c
             for c in run.tool_calls]
    wrong = run.model_copy(update={"tool_calls": calls, "success": False, "reward": 0.0})
    assert label_view(cand, RunView(wrong, kinds)) == "LACKING"
    # both branches' writes: LACKING too (the env's check zeroes it)
    both = run.model_copy(update={"tool_calls": run.tool_calls + [c for c in calls if c.name == RETURN],
                                  "success": False, "reward": 0.0})
    assert label_view(cand, RunView(both, kinds)) == "LACKING"


@needs_data
def test_not_proposed_where_users_state_no_conditional():
    runs = load_runs([TAU]).runs
    assert not [c for c in propose_offline(build_profile(runs), runs) if c.spec.family == "conditional_request"]


# ---------------------------------------------------------------------------------------------- help-desk planted
def test_helpdesk_proposal_and_exact_labels(helpdesk):
    runs, kinds, ours = helpdesk
    assert set(ours) == {HELPDESK_CAND}
    cand = ours[HELPDESK_CAND]
    assert cand.spec.roles == {"read": "get_account", "write": "restore_line", "alt": "set_roaming",
                               "key": "account_no"}
    assert cand.spec.params == {"field": "line.status", "values": ["suspended"], "other_values": ["active"]}
    for run in runs:
        truth = run.meta["planted"]
        want = "NA" if truth["task_kind"] != "conditional" else \
            "LACKING" if "ignores_condition" in truth["deficits"] else "PRESENT"
        assert label_view(cand, RunView(run, kinds)) == want, run.run_id


def test_helpdesk_labels_without_expected_actions(helpdesk):
    runs, kinds, ours = helpdesk
    cand = ours[HELPDESK_CAND]
    seen = set()
    for run in (r for r in runs if r.meta["planted"]["task_kind"] == "conditional"):
        label = label_view(cand, RunView(run.model_copy(update={"ground_truth": None}), kinds))
        # the line status read selects the branch
        assert label == ("LACKING" if "ignores_condition" in run.meta["planted"]["deficits"] else "PRESENT"), run.run_id
        seen.add(label)
    assert seen == {"LACKING", "PRESENT"}
    # a run that never read the account took a branch by chance, right or wrong: it lacks the capability (reading
    # the fact first), whichever branch the record would have selected
    run = next(r for r in runs if r.meta["planted"]["deficits"] == ["ignores_condition"])
    unread = [c for c in run.tool_calls if c.name != "get_account"]
    view = RunView(run.model_copy(update={"ground_truth": None, "tool_calls": unread}), kinds)
    assert label_view(cand, view) == "LACKING"
    # and one that made neither branch's write says nothing
    idle = [c for c in unread if c.name not in ("restore_line", "set_roaming")]
    view = RunView(run.model_copy(update={"ground_truth": None, "tool_calls": idle}), kinds)
    assert label_view(cand, view) == "NA"


def test_helpdesk_mining_recovers_the_deficit_and_its_env_tells_the_agents_apart(tmp_path, planted_mining):
    result = planted_mining("helpdesk", seed=0, with_rules=True)[1]
    kept = [(c.family, spec_target_tools(c)) for c in result.capabilities]
    score = DOMAIN.score_recovery(kept)
    assert "ignores_condition" in score["found"] and score["precision"] == 1.0, score
    spec = next(c for c in result.capabilities if c.family == "conditional_request")
    # other kinds' failures share the failed runs, so Cov moves as kinds are added; Delta stays high (0.90-0.91)
    assert spec.name == HELPDESK_CAND and spec.evidence.delta >= 0.85 and spec.evidence.cov >= 0.1
    published = generate_one(spec, tmp_path)
    assert published.published, published.error
    env = env_class(import_module_from(tmp_path / spec.name / MODULE_FILE))()
    free = [run_policy(env, DOMAIN.policy_agent([]), s)[0] for s in SEEDS]
    lacking = [run_policy(env, DOMAIN.policy_agent(["ignores_condition"]), s)[0] for s in SEEDS]
    assert min(free) == 1.0
    assert sum(lacking) / len(lacking) < 0.5


@pytest.mark.parametrize("text, conditional", [
    ("If my line is suspended, please restore it; otherwise, please just turn roaming on.", True),
    ("In case my line is suspended, restore it, otherwise set roaming on.", True),
    ("Should my line be suspended, restore it. If not, turn roaming on.", True),
    ("Unless my line is active, restore it; otherwise set the roaming on.", True),
    ("Please restore my line if it's suspended, and if it isn't, turn roaming on.", True),
    ("Can you restore my line if that's possible?", False),
    ("Let me know if you can restore my line.", False),
])
def test_a_condition_as_users_word_one(text, conditional):
    from types import SimpleNamespace

    from trace_envs.families.conditional_request.detector import states_condition

    run = SimpleNamespace(messages=[{"role": "user", "content": text}])
    assert states_condition(run, ["restore_line", "set_roaming"], ["suspended", "active"]) is conditional


# ---------------------------------------------------------------------------------------------- randomized domain
@pytest.fixture(scope="module")
def randomized():
    from trace_envs.datasets.randomized import random_domain

    return _domain(random_domain(5).runs())


@pytest.mark.parametrize("with_expected", [True, False])
def test_randomized_users_name_their_own_condition_value(randomized, with_expected):
    """Seed 5's students each name a term phase of their own ("if its term phase is locked, drop it; if not, add a
    lab seat"), so no value of the field splits the two writes over all runs: the value a run's user named does."""
    runs, kinds, ours = randomized
    [cand] = ours.values()
    assert {k: cand.spec.roles[k] for k in ("read", "write", "alt")} == {
        "read": "enrollments.fetch", "write": "enrollments.drop", "alt": "lab_seats.add"}
    assert cand.spec.params["field"] == "term_phase" and len(cand.spec.params["values"]) == 1
    seen = set()
    for run in runs:
        truth = run.meta["planted"]
        if truth["task_kind"] != "conditional_request" or truth["noise"]:
            continue
        view = RunView(run if with_expected else run.model_copy(update={"ground_truth": None}), kinds)
        label = label_view(cand, view)
        if truth["deficits"]:  # the deficit never reads and took the wrong branch
            assert label == "LACKING", run.run_id
        elif any(c.name == "enrollments.fetch" for c in run.agent_calls):
            assert label == "PRESENT", run.run_id
        elif not with_expected:  # the first branch unread, right by chance: no fact was looked up
            assert label == "LACKING", run.run_id
        seen.add(label)
    assert {"LACKING", "PRESENT"} <= seen


def test_a_stranger_domains_conditional_worded_its_own_way_is_recovered(tmp_path):
    """Randomizer seed 22 (clinic): "If its notice hours is under 24, get an interpreter ... If not, cancel the
    appointment." asks for `interpreters.request` or `appointments.withdraw`, in words neither name holds; the
    labeler reads the words users ask for each write with (before: 18 of the 32 failed runs that skipped the lookup
    were seen, and the capability was not kept). Agents there also confirm "make appointment A1 a video visit?",
    the users' words for `appointments.convert`: the confirmation labeler reads them too (before: every write was
    labelled unconfirmed)."""
    from _family import mine_random

    dom, caps = mine_random(22, tmp_path)
    score = dom.score_recovery(caps)
    assert {"ignores_notice_hours_condition", "no_confirmation_before_convert"} <= set(score["found"])
    assert score["false_findings"] == []
