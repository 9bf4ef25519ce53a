"""A read that answers with a list of the customer's records (`get_holds(member_id) -> {"holds": [...]}`) while the
writes take one record's own id (`cancel_hold(hold_id)`): the miner indexes each listed record by its own id, the spec
says the read lists the records, and the env lists them for the user's id."""

from __future__ import annotations

import json

from trace_envs.datasets.randomized import random_domain
from trace_envs.trajectories.profile import build_profile
from trace_envs.trajectories.results import ResultIndex, gate_candidates

SEED = 14  # hr_it, camelCase names, list-shaped records, tau2 results: readEmployeeLeaveRequests(employeeId)


def test_a_listing_reads_records_are_indexed_by_their_own_ids():
    runs = random_domain(SEED).runs()
    index = ResultIndex(runs, build_profile(runs).kinds)
    # learned from the runs: the later writes pass the listed records' leaveRequestId
    assert index.listed["readEmployeeLeaveRequests"] == ("leaveRequests", "leaveRequestId")
    # the records read before reassignApprover are the ones it took, by their own paths (not the list's first item)
    before = index.before_write[("readEmployeeLeaveRequests", "reassignApprover", "leaveRequestId")]
    assert "balanceCheck" in before and not any(p.startswith("leaveRequests.") for p in before)
    gates = gate_candidates(index, "readEmployeeLeaveRequests", "reassignApprover", "leaveRequestId")
    assert {"field": "balanceCheck", "allowed": ["sufficient"], "blocked": ["insufficient"]} in gates


def test_a_list_shaped_domain_recovers_its_gate_and_the_env_lists_the_records(tmp_path):
    """Before listed records were indexed, seed 14's precondition (the balance check before reassignApprover) was
    missed: the gate was looked for on the list's first item, and the env could not read by the owner's id."""
    from _family import mine_random
    from trace_envs.envs_loader import env_class, import_module_from
    from trace_envs.generate.publish import MODULE_FILE, generate_one
    from trace_envs.spec.io import load_specs

    dom, caps = mine_random(SEED, tmp_path)
    score = dom.score_recovery(caps)
    assert "skips_balance_check_check" in score["found"]
    assert score["precision"] == 1.0
    spec = next(s for s in load_specs(tmp_path / "mined" / "capabilities.json")
                if s.family == "precondition_before_write" and s.roles.get("write") == "reassignApprover")
    read = spec.tool("readEmployeeLeaveRequests")
    assert read.lists is not None and (read.lists.by, read.lists.id) == ("employeeId", "leaveRequestId")
    assert spec.params["field"] == "balanceCheck"
    published = generate_one(spec, tmp_path / "envs")
    assert published.published, published.error  # the oracle scores 1.0 on every seed, the mutants less
    env = env_class(import_module_from(tmp_path / "envs" / spec.name / MODULE_FILE))()
    env.reset(seed=0)
    owner = env.scenario.facts["employeeId"]
    listed = json.loads(env.call_tool("readEmployeeLeaveRequests", {"employeeId": owner}))
    assert {r["leaveRequestId"] for r in listed["leaveRequests"]} == set(env.scenario.state["records"])
    assert "not found" in env.call_tool("readEmployeeLeaveRequests", {"employeeId": owner + "9"})


def test_flatten_addresses_leaves_as_the_templates_do():
    """Dotted paths to scalar leaves three levels deep at most, a list by its first item ("0."), keys that are no plain
    words (spaces, dots, non-strings) skipped, None left out; a prefix and depth continue a walk already begun."""
    from trace_envs.trajectories.results import flatten

    record = {"status": "pending", "paid": True, "total": 12.5, "note": None, "a b": 1, "x.y": 2,
              "items": [{"id": "I1", "options": {"size": {"eu": 42, "deeper": {"no": 1}}}}, {"id": "I2"}],
              "empty": [], "tags": ["new", "sale"]}
    flat = flatten(record)
    assert list(flat) == ["status", "paid", "total", "items.0.id", "tags.0"]  # "items.0.options.size.eu" is a 5th level
    assert flatten({"a": {"b": {"c": 1, "d": {"e": 2}}}}) == {"a.b.c": 1}
    assert flatten([{"id": 1}]) == {"0.id": 1} and flatten("x") == {} and flatten("x", "p.") == {"p": "x"}
    assert flatten({"c": 1, "d": {"e": 2}}, "a.b.", 2) == {"a.b.c": 1}
    assert flatten({"c": 1}, "a.b.c.", 3) == {} and flatten({"c": 1}, "deep.", 4) == {}
