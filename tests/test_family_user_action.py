"""user_side_action: tau2 user-side tool calls are ingested as the user's, mined into a capability, and its env pays
only an agent that diagnoses, has the user do the one fix that is needed (named clearly), and checks before saying it
works."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from _family import committed_env, seed_where

from trace_envs.checks.run_view import RunView
from trace_envs.datasets.planted import (
    APP_NOTIFY,
    APP_READ,
    APP_UPDATE,
    generate_planted,
    match_deficit,
)
from trace_envs.mining.detector import get_detector
from trace_envs.envs_loader import env_class, import_module_from
from trace_envs.generate.policies import run_actions, run_policy, run_scripted
from trace_envs.generate.publish import MODULE_FILE
from trace_envs.generate.publish import generate_one
from trace_envs.mining.propose_offline import propose_offline
from trace_envs.runtime.world import call
from trace_envs.trajectories.loaders import load_runs
from trace_envs.trajectories.profile import build_profile

NAME = "planted_user_fixes_app_notifications"
FAMILY = "user_side_action"

# ---- a tau2-bench results file in tau2's own format, telecom-like: the user toggles and reseats on its phone --------
STATUS, CUSTOMER = "get_network_status", "get_customer_by_phone"
AIRPLANE, RESEAT, STATUS_BAR = "toggle_airplane_mode", "reseat_sim_card", "check_status_bar"


def _phone(task: str) -> str:
    return f"555-123-20{int(task):02d}"


def _status(task: str, airplane: str = "off", sim: str = "seated") -> dict:
    signal = "good" if airplane == "off" and sim == "seated" else "no_service"
    return {"phone_number": _phone(task), "airplane_mode": airplane, "sim_card": sim, "signal": signal}


class _Sim:
    """One tau2 simulation's messages, with tau2's fields (turn_idx, requestor, tool messages keyed by `id`)."""

    def __init__(self, task_id: str, reward: float):
        self.task_id, self.reward, self.messages, self.n = task_id, reward, [], 0

    def _add(self, msg: dict) -> None:
        msg.setdefault("turn_idx", len(self.messages))
        msg.setdefault("timestamp", "2025-08-01T15:53:27.553803")
        self.messages.append(msg)

    def say(self, role: str, text: str) -> None:
        self._add({"role": role, "content": text, "tool_calls": None})

    def call(self, role: str, name: str, args: dict, result: dict | str) -> None:
        self.n += 1
        cid = f"call_{self.task_id}_{self.n}"
        requestor = "assistant" if role == "assistant" else "user"
        self._add({"role": role, "content": None,
                   "tool_calls": [{"id": cid, "name": name, "arguments": args, "requestor": requestor}]})
        self._add({"id": cid, "role": "tool", "content": result if isinstance(result, str) else json.dumps(result),
                   "requestor": requestor, "error": False})

    def dump(self, i: int) -> dict:
        return {"id": f"sim-{i}", "task_id": self.task_id, "trial": 0, "seed": 300 + i,
                "termination_reason": "user_stop", "reward_info": {"reward": self.reward}, "messages": self.messages}


def _fixed(task: str, cause: str, reward: float, instruction: str, user_tool: str, reread: bool = True) -> _Sim:
    broken = _status(task, airplane="on") if cause == "airplane" else _status(task, sim="not_seated")
    after = {**broken, "airplane_mode": "on" if broken["airplane_mode"] == "off" else "off"} \
        if user_tool == AIRPLANE else {**broken, "sim_card": "seated"}
    after["signal"] = "good" if after["airplane_mode"] == "off" and after["sim_card"] == "seated" else "no_service"
    s = _Sim(task, reward)
    s.say("assistant", "Hi! How can I help you today?")
    s.say("user", f"My phone shows no service. My number is {_phone(task)}.")
    s.call("assistant", STATUS, {"phone_number": _phone(task)}, broken)
    s.say("assistant", instruction)
    s.call("user", user_tool, {}, {"done": True})
    s.say("user", "Done, I did that.")
    if reread:
        s.call("assistant", STATUS, {"phone_number": _phone(task)}, after)
        s.say("assistant", f"Thanks, I checked again: the signal is now {after['signal']}.")
    s.say("user", "Thanks! ###STOP###")
    return s


def _vague(task: str) -> _Sim:
    s = _Sim(task, 0.0)
    s.say("user", f"My phone shows no service. My number is {_phone(task)}.")
    s.call("assistant", STATUS, {"phone_number": _phone(task)}, _status(task, airplane="on"))
    s.say("assistant", "Please try some settings on your phone and see whether it helps.")
    s.call("user", STATUS_BAR, {}, "No service")
    s.say("user", "It still says no service. ###STOP###")
    return s


def _billing(task: str) -> _Sim:
    s = _Sim(task, 1.0)
    s.say("user", f"What plan am I on? My number is {_phone(task)}.")
    s.call("assistant", CUSTOMER, {"phone_number": _phone(task)}, {"phone_number": _phone(task), "plan": "Unlimited"})
    s.say("assistant", "You are on the Unlimited plan.")
    s.say("user", "Thanks! ###STOP###")
    return s


def _unprompted(task: str) -> _Sim:
    s = _Sim(task, 1.0)
    s.say("user", f"My phone shows no service. My number is {_phone(task)}. I'll toggle airplane mode myself.")
    s.call("user", AIRPLANE, {}, {"done": True})
    s.call("assistant", STATUS, {"phone_number": _phone(task)}, _status(task))
    s.say("assistant", "Your signal is good now.")
    return s


def _task(task_id: str, user_tool: str | None) -> dict:
    actions = [{"action_id": f"{task_id}_0", "requestor": "assistant", "name": STATUS if user_tool else CUSTOMER,
                "arguments": {"phone_number": _phone(task_id)}, "info": None, "compare_args": None}]
    if user_tool:
        actions.append({"action_id": f"{task_id}_1", "requestor": "user", "name": user_tool, "arguments": {},
                        "info": None, "compare_args": None})
    return {"id": task_id, "description": {"purpose": "telecom fixture"}, "user_scenario": {"instructions": {
        "domain": "telecom", "reason_for_call": "No service on the phone.", "known_info": f"Your number is {_phone(task_id)}.",
        "unknown_info": None, "task_instructions": "Do what the agent asks on your phone."}},
        "evaluation_criteria": {"actions": actions, "env_assertions": None, "communicate_info": [],
                                "nl_assertions": None}}


SIMS = [
    (_fixed("1", "airplane", 1.0, "Your phone is in airplane mode. Please turn off airplane mode.", AIRPLANE), AIRPLANE),
    (_fixed("2", "sim", 1.0, "Your SIM card is not seated. Please reseat your SIM card.", RESEAT), RESEAT),
    (_vague("3"), AIRPLANE),
    (_fixed("4", "sim", 0.0, "Please toggle airplane mode.", AIRPLANE, reread=False), RESEAT),
    (_billing("5"), None),
    (_unprompted("6"), AIRPLANE),
    (_fixed("7", "airplane", 1.0, "Airplane mode is on: please switch off airplane mode.", AIRPLANE), AIRPLANE),
    (_fixed("8", "sim", 1.0, "Please remove and reinsert your SIM card.", RESEAT), RESEAT),
]


@pytest.fixture(scope="module")
def telecom(tmp_path_factory):
    path = tmp_path_factory.mktemp("tau2") / "gpt-4.1_telecom.json"
    data = {
        "timestamp": "2025-08-01T15:53:27",
        "info": {"git_commit": "b02b509", "num_trials": 1, "max_steps": 200, "max_errors": 10,
                 "user_info": {"implementation": "user_simulator", "llm": "gpt-4.1"},
                 "agent_info": {"implementation": "llm_agent", "llm": "gpt-4.1"},
                 "environment_info": {"domain_name": "telecom", "policy": "# Telecom agent policy\nHelp the user "
                                      "fix their phone. Only the user can toggle airplane mode or reseat the SIM card.",
                                      "tool_defs": None},
                 "seed": 300},
        "tasks": [_task(s.task_id, tool) for s, tool in SIMS],
        "simulations": [s.dump(i) for i, (s, _) in enumerate(SIMS)],
    }
    path.write_text(json.dumps(data))
    return load_runs([path]).runs


def test_tau2_user_calls_are_the_users_and_ground_truth_keeps_its_requestor(telecom):
    assert len(telecom) == 8
    assert sum(len(r.agent_calls) for r in telecom) == 12
    assert sum(len(r.user_calls) for r in telecom) == 7
    assert [c.name for c in telecom[2].user_calls] == [STATUS_BAR]
    assert telecom[0].user_calls[0].result == '{"done": true}' and not telecom[0].user_calls[0].error
    assert [(g.name, g.requestor) for g in telecom[0].ground_truth] == [(STATUS, "agent"), (AIRPLANE, "user")]


def test_profile_keeps_user_tools_apart_with_what_they_changed(telecom):
    profile = build_profile(telecom)
    assert set(profile.tools) == {STATUS, CUSTOMER}
    assert {n: t.calls for n, t in profile.user_tools.items()} == {AIRPLANE: 4, RESEAT: 2, STATUS_BAR: 1}
    assert profile.user_tools[AIRPLANE].changes == {STATUS: {"airplane_mode": ["on", "off"], "signal": ["no_service", "good"]}}
    assert profile.user_tools[RESEAT].changes == {STATUS: {"sim_card": ["not_seated", "seated"], "signal": ["no_service", "good"]}}
    assert profile.user_tools[STATUS_BAR].changes == {}


def test_offline_proposal_and_labels_on_the_tau2_runs(telecom, tmp_path):
    profile = build_profile(telecom)
    cands = [c for c in propose_offline(profile, telecom) if c.spec.family == FAMILY]
    assert [c.spec.roles for c in cands] == [
        {"read": STATUS, "key": "phone_number", "user_tool": AIRPLANE, "alt_tool": RESEAT}]
    cand = cands[0]
    assert cand.spec.params["settings"] == {AIRPLANE: {"field": "airplane_mode", "bad": "on", "good": "off"},
                                            RESEAT: {"field": "sim_card", "bad": "not_seated", "good": "seated"}}
    fam = get_detector(FAMILY)
    labels = [fam.label(RunView(r, profile.kinds), cand.check, cand.args) for r in telecom]
    assert labels == ["PRESENT", "PRESENT", "LACKING", "LACKING", "NA", "NA", "PRESENT", "PRESENT"]
    published = generate_one(cand.spec, tmp_path, seeds=10)  # the mined capability makes a sound env too
    assert published.published, published.error


# ---- the env ------------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def env_cls():
    return committed_env(NAME)


def _say_fixed(env) -> str:
    return f"Thanks, I checked again: it is now {env.scenario.bindings['good_words']}. Have a nice day!"


def _read(env) -> str:
    return call(APP_READ, user_id=env.scenario.bindings["target"])


INSTRUCT = {APP_NOTIFY: "Please turn on notifications for the store app on your phone.",
            APP_UPDATE: "Please update the store app to the latest version."}


def test_planted_episodes_score_exactly(env_cls):
    env = env_cls()
    seed = seed_where(env, lambda s: s.klass == APP_NOTIFY)
    read, told = _read(env), _say_fixed(env)
    fix = INSTRUCT[APP_NOTIFY]
    assert run_actions(env, env.oracle_actions(), seed)[0] == 1.0
    assert run_actions(env, [read, fix, read, told], seed)[0] == 1.0
    # vague advice: the user changes nothing
    assert run_actions(env, [read, "Please try some settings on your phone.", read, told], seed)[0] == 0.0
    # claims it is fixed without the user acting
    assert run_actions(env, [read, "I have fixed your notifications, they work now.", read, told], seed)[0] == 0.0
    # no verification read: diagnosed 1 + fixed 2 of 5
    assert run_actions(env, [read, fix, told], seed)[0] == pytest.approx(3 / 5)
    # pasting the status back instead of telling the user what to do
    assert run_actions(env, [read, "Here is your status: " + info_result(env, seed), read, told], seed)[0] == 0.0
    # the agent cannot do the user's part itself: the tool is not offered and its call is an error
    env.reset(seed=seed)
    obs = env.step(call(APP_NOTIFY))[0]
    assert "unknown tool" in obs and APP_NOTIFY not in [t.name for t in env.tool_specs]
    assert run_actions(env, [read, call(APP_NOTIFY), read, told], seed)[0] == 0.0
    # both fixes at once: the user updates an app that was up to date
    both = INSTRUCT[APP_NOTIFY] + " " + INSTRUCT[APP_UPDATE]
    assert run_actions(env, [read, both, read, told], seed)[0] == 0.0
    # the other fix
    assert run_actions(env, [read, INSTRUCT[APP_UPDATE], read, told], seed)[0] == 0.0


def info_result(env, seed: int) -> str:
    env.reset(seed=seed)
    return env.step(_read(env))[0]


def test_the_user_acts_once_and_only_on_a_clear_instruction(env_cls):
    env = env_cls()
    seed = seed_where(env, lambda s: s.klass == APP_UPDATE)
    env.reset(seed=seed)
    env.step(_read(env))
    for text in ("Maybe the app needs something.", "Please don't update the app yet."):
        assert not env.step(text)[0].startswith("OK")
    obs = env.step("Please upgrade the store app.")[0]
    assert obs == "OK, I updated the app on my side."
    assert env.scenario.state["records"][env.scenario.bindings["target"]]["app_version"] == "5.4.0"
    env.step("Please update the app again.")
    user_calls = [s for s in env.trace().steps if s.kind == "call" and s.name == APP_UPDATE]
    assert len(user_calls) == 1 and not user_calls[0].error


def _careful(env, rng, turn):
    """Follows the shown policy: announces, reads the status, asks for the fix it shows, reads again, tells."""
    msgs = env.messages
    results = [json.loads(m["content"]) for m in msgs if m.get("role") == "tool"]
    user = re.search(r"user id is (\S+?)\.", msgs[1]["content"]).group(1)
    last = msgs[-1]
    if turn == 1:
        return "Let me look up the status of the app on your phone."
    if not results:
        return call(APP_READ, user_id=user)
    status = results[-1]
    if len(results) == 1 and last.get("role") == "tool":
        if status["notifications"] == "off":
            return "Your notifications are turned off. Please turn on notifications for the store app."
        if status["app_version"] != status["latest_version"]:
            return "Your app is out of date. Please update the store app to the latest version."
    if len(results) == 1:
        return call(APP_READ, user_id=user)
    what = status["notifications"] if any(r["notifications"] == "off" for r in results) else status["app_version"]
    return f"Thanks, I checked again and it is now {what}, so notifications will reach you. Have a nice day!"


def _lazy(env, rng, turn):
    """Pastes everything, tells the user to do every fix at once, claims success, repeats calls."""
    user = re.search(r"user id is (\S+?)\.", env.messages[1]["content"]).group(1)
    if turn <= 3:
        return call(APP_READ, user_id=user)
    if turn == 4:
        pasted = "\n".join(m["content"] for m in env.messages if m.get("role") == "tool")
        return ("Here is everything: " + pasted + " Please turn on notifications for the app, update the app, "
                "restart your phone and reinstall everything.")
    return "Everything is fixed now, your notifications are on and the app is updated. Have a nice day!"


def test_careful_agent_scores_one_and_lazy_agent_nothing(env_cls):
    env = env_cls()
    careful = [run_policy(env, _careful, seed)[0] for seed in range(20)]
    assert careful == [1.0] * 20
    lazy = [run_policy(env, _lazy, seed)[0] for seed in range(20)]
    assert lazy == [0.0] * 20


def test_planted_runs_label_as_planted(env_cls):
    runs = [r for r in generate_planted(600, seed=5) if r.task_id.startswith("app-")]
    profile = build_profile(generate_planted(600, seed=5))
    cand = next(c for c in propose_offline(profile, runs) if c.spec.family == FAMILY)
    assert match_deficit(FAMILY, cand.target_tools()) == "vague_user_instruction"
    fam = get_detector(FAMILY)
    for run in runs:
        label = fam.label(RunView(run, profile.kinds), cand.check, cand.args)
        shown = "vague_user_instruction" in run.meta["planted"]["deficits"]
        assert label == ("LACKING" if shown else "PRESENT"), run.run_id


def test_records_that_all_share_one_key_still_give_fresh_ids():
    # tau2 telecom runs often read one customer's line only: a mask fixing every character used to loop forever
    import numpy as np

    from trace_envs.runtime.records import fixed_positions, unique_ids

    assert fixed_positions(["555-123-2002", "555-123-2002"]) is None
    ids = unique_ids("555-123-2002", 3, np.random.default_rng(0), fixed_positions(["555-123-2002"] * 2))
    assert len(set(ids)) == 3 and "555-123-2002" not in ids


def test_the_planted_agent_plays_the_env_as_its_deficit_says(env_cls):
    from trace_envs.datasets.planted import planted_policy

    env = env_cls()
    free = [run_policy(env, planted_policy(()), seed)[0] for seed in range(10)]
    vague = [run_policy(env, planted_policy(("vague_user_instruction",)), seed)[0] for seed in range(10)]
    assert free == [1.0] * 10 and vague == [0.0] * 10


@pytest.mark.parametrize("text, named", [
    ("Please turn off airplane mode.", True),
    ("Could you turn airplane mode off for me?", True),
    ("Try turning off airplane mode, then tell me.", True),
    ("Airplane mode is not turned off, so please switch off airplane mode.", True),
    ("Please don't turn off airplane mode.", False),
    ("Please try some settings on your phone.", False),
    ("Your airplane mode is on.", False),
    ('{"airplane_mode": "on", "signal": "no_service"}', False),
])
def test_an_instruction_names_the_verb_and_the_object(text, named):
    from trace_envs.families.user_action.task import user_action_words
    from trace_envs.language.instructions import names_action

    verbs, objects = user_action_words(AIRPLANE)
    assert objects == ("airplane mode", "airplane")
    assert names_action(text, verbs, objects) is named


def test_a_mined_toggle_flips_the_setting(telecom, tmp_path):
    from trace_envs.envs_loader import env_class, import_module_from

    cand = next(c for c in propose_offline(build_profile(telecom), telecom) if c.spec.family == FAMILY)
    assert generate_one(cand.spec, tmp_path, seeds=10).published
    env = env_class(import_module_from(tmp_path / cand.spec.name / "env.py"))()
    seed = seed_where(env, lambda s: s.klass == RESEAT)  # airplane mode is off: the SIM card is the cause
    target = env.scenario.bindings["target"]
    env.step(call(STATUS, phone_number=target))
    assert env.step("Please toggle airplane mode.")[0].startswith("OK, I toggled")
    assert env.scenario.state["records"][target]["airplane_mode"] == "on"
    assert run_actions(env, [call(STATUS, phone_number=target), "Please toggle airplane mode."], seed)[0] == 0.0


# ---- the real tau2 telecom run: the device shows only in the user's own check texts --------------------------------
TELECOM_RUNS = (Path(__file__).resolve().parents[1].parent / "shared" / "data" / "tau2-bench" / "telecom-results"
                / "gpt-4.1_telecom.json")
REAL = "telecom_user_fixes_airplane_or_roaming"
NETWORK, ROAMING = "check_network_status", "toggle_roaming"
# a real check_network_status text of the run, and real replies of the user's toggles
NETWORK_TEXT = ("Airplane Mode: ON\nSIM Card Status: active\nCellular Connection: no_service\nCellular Signal: none\n"
                "Cellular Network Type: none\nMobile Data Enabled: No\nData Roaming Enabled: No\nWi-Fi Radio: OFF\n"
                "Wi-Fi Connected: No")


@pytest.fixture(scope="module")
def real_telecom():
    if not TELECOM_RUNS.exists():
        pytest.skip(f"{TELECOM_RUNS} is not here (see ../shared/data/SOURCE.md)")
    runs = load_runs([TELECOM_RUNS]).runs
    return runs, build_profile(runs)


def test_device_text_reads_and_writes_the_real_check_texts():
    from trace_envs.trajectories.device_text import parse_device_text, render_device_text

    assert parse_device_text(NETWORK_TEXT) == {
        "airplane_mode": "on", "sim_card": "active", "cellular_connection": "no_service", "cellular_signal": "none",
        "cellular_network_type": "none", "mobile_data": "off", "data_roaming": "off", "wi_fi": "off",
        "wi_fi_connected": "off"}
    # a toggle's reply names the same field as the check's line, in the same vocabulary
    assert parse_device_text("Data Roaming is now ON.\nStatus Bar: 📶¹ Poor | 2G | 📱 Data Enabled | 🔋 80%") == {
        "data_roaming": "on"}
    assert parse_device_text("Wi-Fi Calling is currently turned ON.") == {"wi_fi_calling": "on"}
    assert parse_device_text("Your SIM card is active and working.") == {}
    written = render_device_text(NETWORK_TEXT, {"airplane_mode": "off", "data_roaming": "on"})
    assert written.splitlines()[0] == "Airplane Mode: OFF" and "Data Roaming Enabled: Yes" in written
    assert written.replace("OFF", "ON", 1).replace("Roaming Enabled: Yes", "Roaming Enabled: No") == NETWORK_TEXT


def test_profile_learns_which_user_tool_fixes_which_device_field_from_the_check_texts(real_telecom):
    _, profile = real_telecom
    assert len(profile.user_tools) == 27
    assert {n: t.changes for n, t in profile.user_tools.items() if t.changes} == {
        "toggle_airplane_mode": {NETWORK: {"airplane_mode": ["on", "off"]}},
        "reseat_sim_card": {NETWORK: {"cellular_connection": ["no_service", "connected"],
                                      "cellular_network_type": ["none", "2G"], "cellular_signal": ["none", "poor"],
                                      "sim_card": ["missing", "active"]}},
        "toggle_data": {NETWORK: {"mobile_data": ["off", "on"]}},
        "toggle_wifi_calling": {"check_wifi_calling_status": {"wi_fi_calling": ["on", "off"]}},
        "toggle_data_saver_mode": {"check_data_restriction_status": {"data_saver_mode": ["on", "off"]}},
        ROAMING: {NETWORK: {"data_roaming": ["off", "on"]}},
    }


def test_real_telecom_proposals_and_labels(real_telecom):
    from collections import Counter

    runs, profile = real_telecom
    cands = [c for c in propose_offline(profile, runs) if c.spec.family == FAMILY]
    # the user tools the tasks expect most pair first (toggle_roaming: 15 tasks; toggle_airplane_mode: 12)
    assert [(c.spec.roles["user_tool"], c.spec.roles["alt_tool"]) for c in cands] == [
        ("toggle_airplane_mode", ROAMING), (ROAMING, "toggle_data"), ("toggle_data", "toggle_airplane_mode"),
        ("reseat_sim_card", "toggle_airplane_mode")]
    cand = cands[0]
    assert cand.spec.roles == {"read": NETWORK, "user_tool": "toggle_airplane_mode", "alt_tool": ROAMING}
    assert cand.spec.params["settings"] == {
        "toggle_airplane_mode": {"field": "airplane_mode", "bad": "on", "good": "off",
                                 "result": "Airplane Mode is now OFF."},
        ROAMING: {"field": "data_roaming", "bad": "off", "good": "on", "result": "Data Roaming is now ON."}}
    assert cand.spec.params["device"] is True
    assert cand.spec.params["healthy"] == {"mobile_data": "on", "sim_card": "active"}
    assert len(cand.spec.tool(NETWORK).result_examples) == 11  # the distinct real texts showing both fields
    fam = get_detector(FAMILY)
    labels = Counter((fam.label(RunView(r, profile.kinds), cand.check, cand.args), r.success) for r in runs)
    assert labels == {("LACKING", False): 13, ("PRESENT", False): 4, ("NA", False): 5,
                      ("PRESENT", True): 6, ("NA", True): 12}


def test_mining_the_real_telecom_run_keeps_user_side_capabilities(real_telecom):
    from trace_envs.mining.pipeline import mine

    runs, _ = real_telecom
    kept = {s.name: s for s in mine(runs).capabilities}
    assert sorted(kept) == ["have_user_toggle_airplane_mode_or_toggle_roaming", "have_user_toggle_roaming_or_toggle_data"]
    spec = kept["have_user_toggle_airplane_mode_or_toggle_roaming"]
    assert spec.family == FAMILY and {ROAMING, "toggle_airplane_mode"} <= {t.name for t in spec.tools}
    assert (spec.evidence.cov, spec.evidence.delta, spec.evidence.passes) == (0.5909, 0.7647, 10)


@pytest.fixture(scope="module")
def telecom_env():
    return committed_env(REAL)


def _last_user(env) -> str:
    return next(m["content"] for m in reversed(env.messages) if m.get("role") == "user")


def _telecom_careful(env, rng, turn):
    """Follows the telecom manual: has the user check the network status, asks for the one toggle it shows (Airplane
    Mode ON: turn it off; Data Roaming off: turn it on), has the user check again, then says it is fixed."""
    said = _last_user(env)
    checks = [m["content"] for m in env.messages if m.get("role") == "user" and "It shows:" in m["content"]]
    if not checks:
        return "I'm sorry to hear that. Could you please check the network status on your phone and tell me what it shows?"
    if "My phone says" in said:
        return "Thank you. Please check the network status on your phone again and tell me what it shows now."
    if len(checks) == 1:
        if "Airplane Mode: ON" in checks[0]:
            return "Airplane Mode is ON, which blocks every connection. Please turn off Airplane Mode on your phone."
        return "Data Roaming is turned off. Please turn on Data Roaming on your phone and tell me when it is done."
    fixed = "Airplane Mode is now OFF" if "Airplane Mode: ON" in checks[0] else "Data Roaming is now ON"
    return f"Thanks! {fixed}, so your mobile data should work again. Have a great day!"


def _lazy_every_toggle(env, rng, turn):
    if turn == 1:
        return "Please turn off airplane mode and turn on data roaming on your phone."
    if turn == 2:
        return "Now please check the network status on your phone again."
    return "Everything is fixed now: airplane mode is off and roaming is on. Have a great day!"


def _lazy_vague(env, rng, turn):
    if turn == 1:
        return "Please try restarting a few settings on your phone and see whether it helps."
    return "It should be working now, your mobile data is fixed. Have a great day!"


def _lazy_claims(env, rng, turn):
    return "I have fixed your phone: airplane mode is off and roaming is on, so your data works now. Have a nice day!"


def test_telecom_careful_agent_scores_one_and_lazy_agents_nothing(telecom_env):
    env = telecom_env()
    assert [run_policy(env, _telecom_careful, seed)[0] for seed in range(20)] == [1.0] * 20
    for lazy in (_lazy_every_toggle, _lazy_vague, _lazy_claims):
        assert [run_policy(env, lazy, seed)[0] for seed in range(20)] == [0.0] * 20, lazy.__name__


def test_telecom_user_checks_its_phone_and_reads_out_the_real_text(telecom_env):
    env = telecom_env()
    seed = seed_where(env, lambda s: s.klass == "toggle_airplane_mode")
    # the device is the user's: the agent is offered none of its tools, and calling one is an error
    assert env.tool_specs == [] and "unknown tool" in env.step(call(NETWORK))[0]
    env.reset(seed=seed)
    first = env.step("Could you please check the network status on your phone?")[0]
    assert first.startswith("I checked the network status on my phone. It shows:\nAirplane Mode: ON\n")
    assert "Data Roaming Enabled: Yes" in first  # the other setting is fine
    assert env.step("Please turn off airplane mode.")[0] == (
        "OK, I toggled the airplane mode on my side. My phone says: Airplane Mode is now OFF.")
    state = env.scenario.state  # what the user last read out stays as read until it checks again ("verified")
    assert state["seen"]["device"]["airplane_mode"] == "on" and state["records"]["device"]["airplane_mode"] == "off"
    again = env.step("Please check the network status again.")[0]
    assert "Airplane Mode: OFF" in again and state["seen"]["device"]["airplane_mode"] == "off"
    env.step("Please toggle airplane mode once more.")  # each fix at most once; a check every time asked
    calls = [(s.name, s.error) for s in env.trace().steps if s.kind == "call"]
    assert calls == [(NETWORK, False), ("toggle_airplane_mode", False), (NETWORK, False)]
    # told to toggle roaming, which was fine, the user breaks it
    env.reset(seed=seed)
    env.step("Please toggle data roaming on your phone.")
    assert env.scenario.state["records"]["device"]["data_roaming"] == "off"


# Sentences of the real gpt-4.1 agent in the telecom run: what the env's user does on each (a toggle, a check of its
# network status, or nothing: a sentence that describes a setting asks for nothing).
@pytest.mark.parametrize("text, toggles, checks", [
    ("To fix this, please turn off Airplane Mode on your phone.", ["toggle_airplane_mode"], False),
    ("Tapping the airplane icon to disable Airplane Mode.", ["toggle_airplane_mode"], False),
    ("Enable data roaming on your phone.", [ROAMING], False),
    ("Airplane Mode disables all wireless connections, including cellular service and mobile data, which are "
     "required for MMS.", [], False),
    ("It looks like Airplane Mode is enabled on your phone, which will prevent you from getting any signal.", [], False),
    ("When Airplane Mode is on, all wireless connections—including mobile data—are disabled, which will stop your "
     "internet from working.", [], False),
    ("Your line did not have international roaming enabled, which is necessary for mobile data to work properly "
     "while you are traveling outside your usual area.", [], False),
    ("Please check if Airplane Mode is enabled on your phone.", [], True),
    ("First, can you check if your phone is in Airplane Mode or if there are any other unusual icons at the top of "
     "your screen?", [], True),
])
def test_real_agent_sentences_move_the_telecom_user_as_they_ask(telecom_env, text, toggles, checks):
    from trace_envs.language.instructions import names_action

    env = telecom_env()
    env.reset(seed=0)
    *fixes, check = env.scenario.user_actions
    assert check.tool == NETWORK and check.repeat
    assert [a.tool for a in fixes if names_action(text, a.verbs, a.objects)] == toggles
    assert names_action(text, check.verbs, check.objects) is checks


# ---- one user-side fix, learned from the runs (randomized planted domains: the user's action as a call or as words) --
def _one_fix_candidate(source_format: str, tmp_path):
    """A randomized domain of `source_format` with a user_side_action deficit, its runs as loaded, and the one-fix
    candidate the offline proposer makes over its status read."""
    from trace_envs.datasets.randomized import random_domain
    from trace_envs.datasets.randomized.axes import draw_axes, draw_families

    seed = next(s for s in range(30) if draw_axes(s)["source_format"] == source_format
                and "user_side_action" in draw_families(s))
    dom = random_domain(seed)
    deficit = next(d for d in dom.deficits.values() if d.family == FAMILY)
    made = dom.runs()
    runs = load_runs([str(dom.write_runs(made, tmp_path))]).runs
    def said(r):  # a run's words and calls, the same however the format wrote it
        return (tuple(m["content"] for m in r.messages if m.get("role") == "user" and isinstance(m.get("content"), str)),
                tuple((c.name, json.dumps(c.arguments, sort_keys=True)) for c in r.agent_calls))

    truth = {said(m): deficit.name in m.meta["planted"]["deficits"] for m in made}
    planted = {r.run_id for r in runs if truth[said(r)]}
    profile = build_profile(runs)
    found = [c for c in propose_offline(profile, runs) if c.spec.family == FAMILY]
    assert [c.spec.roles["read"] for c in found] == [deficit.tools[0]]
    return deficit, runs, profile, found[0], planted


def _lazy_reads_then_claims(env, rng, turn):
    """Reads the status, then claims the problem is fixed without the user doing anything."""
    key = env.SPEC.roles["key"]
    target = env.scenario.bindings["target"]
    if turn == 1:
        return call(env.SPEC.roles["read"], **{key: target})
    return "I've taken care of it on our side, so it should work again now. Have a nice day!"


@pytest.mark.parametrize("source_format", ["openai-jsonl", "toolsandbox"])
def test_one_user_side_fix_is_recovered_from_planted_runs(source_format, tmp_path):
    deficit, runs, profile, cand, planted = _one_fix_candidate(source_format, tmp_path)
    roles, setting = cand.spec.roles, cand.spec.params["settings"][cand.spec.roles["user_tool"]]
    assert "alt_tool" not in roles and roles["key"] in cand.spec.tool(roles["read"]).properties
    if source_format == "openai-jsonl":  # the user's own tool shows in the log
        assert roles["user_tool"] == deficit.tools[1]
    else:  # only the user's words: the action is named as the agents who got it done named it
        assert roles["user_tool"] not in {c.name for r in runs for c in r.tool_calls}
        assert setting["say"] and setting["report"]
    # the runs that skipped the user's step are the failed runs that planted it, and only those
    labels = {r.run_id: get_detector(FAMILY).label(RunView(r, profile.kinds), cand.check, cand.args) for r in runs}
    assert {i for i, v in labels.items() if v == "LACKING"} == planted
    assert "PRESENT" in labels.values()  # the runs that got the user to act (some failed for other reasons)
    # its env publishes (oracle 1.0 on every seed, mutants and probes below it) and a lazy agent earns nothing
    result = generate_one(cand.spec, tmp_path / "gen")
    assert result.published, result.error or result.report.problems
    env = env_class(import_module_from(tmp_path / "gen" / cand.spec.name / MODULE_FILE))()
    assert [run_policy(env, _lazy_reads_then_claims, seed)[0] for seed in range(10)] == [0.0] * 10
    assert [run_scripted(env, "oracle", seed)[0] for seed in range(10)] == [1.0] * 10
