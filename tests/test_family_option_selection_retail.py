"""Option selection on the real tau2 retail runs: a product's variants come keyed by item id (`{"variants": {item_id:
{...}}}`), users name the options they want ("to a blue colored one", "1000ml"), and the variant must be available.
The miner reads the keyed listing like a list, learns the named group, the requirement and the item replaced from the
passed runs, labels the failed runs that took another variant, and keeps a capability whose env a careful agent passes
on every seed while the habits (the first listed, an unavailable or another variant) earn nothing."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from trace_envs.envs_loader import env_class, import_module_from
from trace_envs.generate.policies import run_policy
from trace_envs.generate.publish import MODULE_FILE, generate_one
from trace_envs.mining.label import label_run
from trace_envs.mining.pipeline import MineOptions, mine
from trace_envs.mining.propose_offline import propose_offline
from trace_envs.trajectories.loaders import load_runs
from trace_envs.trajectories.profile import build_profile

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT.parent / "shared" / "data" / "tau2-bench" / "results"
FILES = [RESULTS / "gpt-4.1_retail.json", RESULTS / "ft-gpt-4.1_retail.json"]
needs_data = pytest.mark.skipif(not all(f.exists() for f in FILES),
                                reason="real data not found beside the repo (../shared/data)")
PARAMS = {"option_id": "item_id", "match_group": "options", "require_field": "available", "require_value": True,
          "replaces": "item_ids"}
ROLES = {"write": "modify_pending_order_items", "read": "get_order_details", "key": "order_id",
         "search": "get_product_details", "arg": "new_item_ids"}


def _agent(pick: str):
    spec = importlib.util.spec_from_file_location("retail_variant_agent", ROOT / "examples" / "policy_agents" /
                                                  "retail_variant.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.make_policy(pick)


@needs_data
def test_the_variants_keyed_by_item_id_are_options_and_the_failed_picks_are_lacking():
    runs = load_runs(FILES).runs
    prof = build_profile(runs)
    cands = {c.name: c for c in propose_offline(prof, runs) if c.spec.family == "option_selection"}
    pick = cands["pick_item_id_for_modify_pending_order_items"]
    assert pick.spec.roles == ROLES and pick.spec.params == PARAMS
    # item_ids names the order's own item (the order held it when read): replaced, never proposed as a choice
    assert all(c.spec.roles["arg"] != "item_ids" for c in cands.values())
    lacking = {r.run_id for r in runs if not r.success and label_run(pick, r, prof.kinds) == "LACKING"}
    # 79: 1000ml in the other bottle's red (glass red unavailable) -> the agent took the black one; 64: another 4K
    assert lacking == {"gpt-4.1_retail/79/0", "ft-gpt-4.1_retail/64/0"}
    assert not any(label_run(pick, r, prof.kinds) == "LACKING" for r in runs if r.success)
    # the candidate over every write also counts another order (71) and other items returned (55)
    every = cands["pick_listed_options"]
    assert every.spec.params == PARAMS
    assert {r.run_id for r in runs if not r.success and label_run(every, r, prof.kinds) == "LACKING"} == \
        lacking | {"gpt-4.1_retail/55/0", "ft-gpt-4.1_retail/71/0"}


@needs_data
@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_each_file_keeps_the_variant_pick_and_a_careful_agent_alone_passes_its_env(path, tmp_path):
    result = mine(load_runs([path]).runs, options=MineOptions())
    kept = {c.name: c for c in result.capabilities}
    assert "pick_listed_options" in kept, [row["status"] for row in result.rows if row["name"].startswith("pick")]
    spec = kept["pick_listed_options"]
    assert spec.roles == ROLES and spec.params == PARAMS
    assert generate_one(spec, tmp_path).published
    env = env_class(import_module_from(tmp_path / spec.name / MODULE_FILE))()
    seeds = range(30)
    assert [run_policy(env, _agent("careful"), seed)[0] for seed in seeds] == [1.0] * len(seeds)
    for habit in ("first", "unavailable", "other"):
        assert max(run_policy(env, _agent(habit), seed)[0] for seed in seeds) == 0.0, habit
    # the listing has the target's shape, one product's variants keyed by item id, and the user names options
    env.reset(seed=0)
    product = json.loads(env.call_tool("get_product_details", env.scenario.state["search_args"]))
    assert set(product) >= {"name", "product_id", "variants"}
    assert all(k == v["item_id"] and set(v) == {"item_id", "options", "available", "price"}
               for k, v in product["variants"].items())
    assert "in my order" in env.scenario.opening and " to one with " in env.scenario.opening
