"""Test lanes, and the fixtures that several test files share.

Lanes. `make test` runs every test; `make quick` (`pytest -m "not slow"`) runs the quick lane, for the inner loop: every
family, the checks, the loaders on the real files, the scripted user and the CLI basics, at small sizes. A test's
lane comes from LANES below and from nowhere else: the lane of the first pattern its node id (below tests/) matches,
quick when none does.

LANES also orders the run. Its entries go from the costliest file down, and files start in that order (a file's rank
is its best-ranked test's; files no entry names come last, in their own order): where a worker takes a file at a time
(`make quick`: `--dist loadfile --no-loadscope-reorder`), the longest files start first and the short ones fill in at
the end, so both workers finish together, and each file's module fixtures are built once. `make test` spreads single
tests (`--dist worksteal`). In the quick lane a file whose every test is slow is not imported at all.

Shared fixtures. What several files need and costs seconds (a 2,000-run planted mining, the validation report of an
example env, the envs mined from a planted domain) is built once per run for all the workers (see _shared.py).
"""

from __future__ import annotations

import fnmatch
import functools
import os

import pytest

from _shared import Shared, run_root

SLOW = "slow"
QUICK = "quick"

# pattern (fnmatch over the node id below tests/) -> lane, the first match deciding. Listed by the CPU time of their
# files, costliest first (measured with the whole suite on 2 workers), so that the order of the run follows it.
LANES: dict[str, str] = {
    "test_pipeline.py::test_run_*": SLOW,  # `trace-envs run` with training, three times
    "test_mined_specs_generate.py::*": SLOW,  # every data set mined and each of its envs validated
    "test_hostile_inputs.py::test_megabyte_arguments_*": SLOW,  # `mine` and `generate` on a 1 MB argument
    "test_hostile_inputs.py::test_generate_never_replaces_*": SLOW,  # the CLI six times on mined tau2
    "test_hostile_inputs.py::test_an_unusable_output_folder_*": SLOW,  # the CLI ten times, each on a bad folder
    "test_benchmarks.py::test_benchmark_runs_at_smoke_size*": SLOW,  # every benchmark, a few samples each
    "test_planted.py::test_recovery_over_seeds_mean": SLOW,  # six 2,000-run minings
    "test_planted.py::test_miner_recovers_planted_deficits*": SLOW,  # five more
    "test_crash_safety_mine_train.py::*": SLOW,  # `mine` and a tiny GRPO run killed at random moments
    "test_distributed.py::*": SLOW,  # two ranks training one model; the entry points with the training stack
    "test_served_llm.py::*": SLOW,  # `transformers serve` with SmolLM2
    "test_family_contract.py::test_report_is_clean*": SLOW,  # the full validation of every example env
    "test_external_domains.py::*": SLOW,  # both external domains mined four times
    "test_family_option_selection_retail.py::test_each_file_keeps_*": SLOW,  # two real minings, each env validated
    "test_listing_reads.py::test_a_list_shaped_domain_*": SLOW,  # a randomized domain mined, one env generated
    "test_mining.py::test_pool_*": SLOW,  # the CLI mining the real data sets, several at once
    "test_mining.py::test_nothing_kept_*": SLOW,
    "test_mining.py::test_tau2_results_folder_*": SLOW,
    "test_mining.py::test_cli_offline_on_planted_*": SLOW,
    "test_mining.py::test_directory_of_mixed_formats": SLOW,
    "test_mining.py::test_tau2_retail_together": SLOW,
    "test_mining.py::test_tau_bench_airline": SLOW,
    "test_mining.py::test_tau2_airline_together": SLOW,
    "test_docs_snippets.py::test_snippet_runs[[]docs/serving.md*": SLOW,  # a `trace-envs serve` and its client
    "test_docs_snippets.py::test_snippet_runs[[]*:trains[]]": SLOW,  # a block that trains (the README's GRPO one)
    "test_randomizer.py::test_the_random_mining_benchmark_*": SLOW,  # two randomized domains mined
    "test_data_trust.py::test_inspect_diagnose_and_mine_print_*": SLOW,  # three CLI runs on real files
    "test_mining.py::test_domain_option_*": SLOW,
    "test_mining.py::test_names_kept_in_two_domains_*": SLOW,
    "test_mining.py::test_streaming_mine_matches_list": SLOW,  # 600-run minings, twice each
    "test_mining.py::test_thresholds_are_options": SLOW,
    "test_property_*.py::*": SLOW,  # hypothesis, hundreds of examples each
    "test_train.py::*": SLOW,  # GRPO and SFT on the tiny model; the training stack's import alone costs seconds
    "test_trl_bridge.py::*": SLOW,
    "test_model_names.py::*": SLOW,
    "test_eval.py::*": SLOW,  # evaluation with model-backed policies (the tiny model, OpenAI-compatible servers)
    "test_examples.py::test_custom_reinforce_loop_*": SLOW,  # the REINFORCE example, a model in a subprocess
    "test_construct_validity.py::*": SLOW,  # every planted agent in every env mined from each planted domain
    "test_policy_literal_agent.py::*": SLOW,  # three real minings, every env on every seed
    "test_helpdesk_planted.py::test_under_another_business_names_*": SLOW,  # 2,000-run minings
    "test_helpdesk_planted.py::test_offline_mining_*": SLOW,
    "test_helpdesk_planted.py::test_the_balance_is_learned_*": SLOW,
    "test_crash_safety.py::test_sigkill_*": SLOW,  # `generate` killed at random moments
    "test_serving*.py::*": SLOW,  # a `trace-envs serve` per file, sessions that must time out
    "test_per_turn.py::test_a_thousand_episodes_*": SLOW,  # 1,000 episodes, each replayed in terminal mode
    "test_per_turn.py::test_serv*": SLOW,  # `trace-envs serve --reward-mode per_turn`; the serving imports alone
    "test_per_turn.py::test_content_free_probes_*": SLOW,  # every content-free probe on every committed env
    "test_family_conditional_request.py::test_helpdesk_*": SLOW,  # the planted help desk mined
    "test_family_user_action.py::test_one_user_side_fix_is_recovered_*": SLOW,  # planted domains mined
    "test_family_user_action.py::test_mining_the_real_telecom_run_*": SLOW,  # a real data set mined, envs published
    "test_validation_memo.py::test_a_stored_report_is_the_fresh_one_*": SLOW,  # a spec validated four times
    "test_examples.py::test_custom_loop_*": SLOW,  # a model trained by the example loop
    # what reads an example env's validation report (`validated_example`) or validates a mined spec; the quick lane
    # plays the same envs with the oracle, the mutants and lazy agents
    "test_family_conditional_request.py::test_lazy_strategies_earn_less": SLOW,
    "test_llm_faults.py::*": SLOW,  # retries that wait out real back-off
    "test_mining_llm.py::test_llm_mining_end_to_end_*": SLOW,  # mining through fake SDK servers
    "test_mining_llm.py::test_bounded_retries_*": SLOW,  # retries that wait out real back-off
    "test_family_error_recovery.py::test_oracle_one_and_lazy_recoveries_nothing_on_every_seed": SLOW,
    "test_family_error_recovery.py::test_under_other_names_*": SLOW,  # mining real runs renamed
    "test_family_error_recovery.py::test_stranger_recoveries_*": SLOW,  # three randomized domains mined
    "test_family_error_recovery.py::test_a_fix_addressed_by_the_records_holder_*": SLOW,  # a randomized domain mined
    "test_family_answer_from_records.py::test_a_listing_read_is_asked_*": SLOW,  # a randomized domain mined
    "test_family_handoff_to_human.py::test_a_stranger_domains_*": SLOW,  # a randomized domain mined
    "test_family_claim_verification.py::test_a_claim_users_word_*": SLOW,  # a randomized domain mined
    "test_family_claim_verification.py::test_a_randomized_claim_env_publishes_*": SLOW,  # mined and published
    "test_family_confirmation_before_write.py::test_a_stranger_domains_*": SLOW,  # randomized domains mined
    "test_family_precondition_before_write.py::test_a_stranger_domains_*": SLOW,  # randomized domains mined
    "test_family_conditional_request.py::test_a_stranger_domains_*": SLOW,  # a randomized domain mined
    "test_family_multi_request_completion.py::test_other_request_counts*": SLOW,
    "test_routing.py::*": SLOW,  # routers over the 2,000-run planted mining; the model routers need the torch stack
    "test_toolsandbox_planted.py::test_kept_capability_generates_*": SLOW,
    "test_load.py::test_async_vector_env_under_random_load": SLOW,  # 5,000 steps over 8 processes
    "test_profile.py::test_a_mined_tau_bench_env_shows_*": SLOW,  # mines and publishes
    "test_determinism.py::test_committed_envs_are_byte_identical_across_processes": SLOW,
    "test_family_answer_from_records.py::test_oracle_earns_one_and_every_mutant_less": SLOW,
    "test_family_answer_from_records.py::test_the_mined_airline_candidate_makes_a_sound_env": SLOW,
    "test_family_claim_verification.py::test_the_user_claims_the_invoice_is_paid_*": SLOW,
    "test_family_claim_verification.py::test_oracle_earns_one_and_every_mutant_less": SLOW,
    "test_wheel.py::*": SLOW,  # builds the wheel and installs it in a scratch venv
}


def lane_of(nodeid: str) -> tuple[int, str]:
    """(rank of the first LANES entry the node id matches, its lane); (len(LANES), quick) when none does."""
    relative = nodeid.split("tests/", 1)[-1]
    for rank, (pattern, lane) in enumerate(LANES.items()):
        if fnmatch.fnmatchcase(relative, pattern):
            return rank, lane
    return len(LANES), QUICK


def pytest_ignore_collect(collection_path, config: pytest.Config) -> bool | None:
    """In the quick lane, a file whose every test is slow (its `file::*` entry) is not even imported: importing the
    training, serving and SDK stacks those files need cost each worker seconds before its first quick test."""
    if config.option.markexpr.replace(" ", "") != f"not{SLOW}" or collection_path.suffix != ".py":
        return None
    return True if lane_of(f"tests/{collection_path.name}::*")[1] == SLOW else None


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by the markers set here
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    rank_of_file: dict[str, int] = {}
    for item in items:
        rank, lane = lane_of(item.nodeid)
        item.add_marker(getattr(pytest.mark, lane))
        path = item.nodeid.split("::", 1)[0]
        rank_of_file[path] = min(rank, rank_of_file.get(path, rank))
    # whole files move, their tests in their own order (a stable sort)
    items.sort(key=lambda item: rank_of_file[item.nodeid.split("::", 1)[0]])


@pytest.fixture(scope="session")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Shared:
    return Shared(tmp_path_factory)


@pytest.fixture(scope="session", autouse=True)
def validation_memo(tmp_path_factory: pytest.TempPathFactory):
    """One validation memo for the run (its workers and every CLI they start): the same mined spec is validated by the
    miner's publish check and by `generate`, in many tests; each distinct env is validated once per run (see
    trace_envs.generate.memo; tests/test_validation_memo.py checks that a stored report is the fresh one)."""
    from trace_envs.generate.memo import ENV_VAR

    before = os.environ.get(ENV_VAR)
    os.environ[ENV_VAR] = str(run_root(tmp_path_factory) / "validation-memo")
    yield
    if before is None:
        os.environ.pop(ENV_VAR, None)
    else:
        os.environ[ENV_VAR] = before


@pytest.fixture(scope="session")
def validated_example(shared: Shared):
    """`name` -> (the example spec `examples/specs/<name>.json`, its `GenerateResult` with the full validation report,
    the committed env class `generated/<name>`): the validation runs once per test run."""
    from _family import committed_env, example_spec

    from trace_envs.generate.publish import generate_one

    def get(name: str):
        result = shared.get(f"example-{name}", lambda: generate_one(example_spec(name), shared.folder("examples")))
        assert result.published, result.error
        return example_spec(name), result, committed_env(name)

    return get


@pytest.fixture(scope="session")
def planted_mining(shared: Shared):
    """(domain, seed, with_rules, runs) -> (that many planted runs of the domain and seed, 2,000 by default, and their
    offline mining with default options, with the domain's rules or without): each mined once per test run."""
    from trace_envs.datasets.domains import planted_domains
    from trace_envs.mining.pipeline import MineOptions, mine

    def build(domain: str, seed: int, with_rules: bool, n: int):
        planted = planted_domains()[domain]
        runs = planted.generate(n, seed)
        return runs, mine(runs, options=MineOptions(), rules=planted.rules if with_rules else None)

    def get(domain: str = "retail", seed: int = 0, with_rules: bool = False, runs: int = 2000):
        key = f"planted-{domain}-{seed}-{runs}-{'rules' if with_rules else 'norules'}"
        return shared.get(key, functools.partial(build, domain, seed, with_rules, runs))

    return get


@pytest.fixture(scope="session")
def planted_envs(shared: Shared, planted_mining):
    """domain -> (the mining of its 2,000 planted runs of seed 0 with its rules, {capability: GenerateResult} for each
    capability published with `generate`'s full validation (the sizes the miner's publish check used, so each report
    comes from the validation memo), the folder they are published in)."""
    from trace_envs.generate.publish import generate_one

    def build(domain: str):
        _, result = planted_mining(domain, seed=0, with_rules=True)
        out = shared.folder(f"planted-envs-{domain}")
        return result, {spec.name: generate_one(spec, out) for spec in result.capabilities}, out

    return lambda domain: shared.get(f"planted-envs-{domain}", functools.partial(build, domain))
