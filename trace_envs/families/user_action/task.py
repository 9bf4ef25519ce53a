"""User-side action: get the user to do what only the user can do, then check that it worked.

Some fixes live on the user's side (toggle airplane mode, reseat the SIM card, turn on an app's notifications, update
the app): the agent has no tool for them. It must read the record that shows the user's setting (diagnose), tell the
user to do the one action that fixes it, naming it clearly ("please turn on notifications for the app"), wait for the
user to report, read again (verify) and only then tell the user it works. The scripted user does a user-side action
when, and only when, one sentence of an agent message names its verb and its object, at most once; vague advice ("try
some settings") does nothing, and the agent calling the user's tool itself gets an error (it is never offered).

Two user-side settings can cause the symptom (`roles.user_tool` and `roles.alt_tool`, each described in
`params.settings`: the record field it changes, its bad and good values, the words that name the action); each
scenario breaks exactly one of them, half the seeds each, so "always tell the user to do X" is right half the time and
telling the user to do both is penalised (the user changes a setting that was fine; a `toggle_*` tool flips it, so
toggling a setting that was fine breaks it). Scoring, per class: the read
before the user acted (1), the setting fixed at the end (2), the agent's last read showing it fixed (1), then telling
the user it is fixed (1); the user doing the other action, or any agent write, zeroes the score. Bindings: `target`
(the record's key), `primary` (the user_tool is the cause), `good_words` (the fixed value in words).

Example episode (the planted retail domain; notifications are off):

    user:  Hi! My user id is ava_kim_1234. I'm not getting any delivery notifications from your app anymore.
    agent: get_app_status(user_id=ava_kim_1234)  -> {"user_id": "ava_kim_1234", "notifications": "off", ...}
    agent: Your app status shows that notifications are off. Please turn on notifications for the store app on your
           phone, and tell me when you have done it.
    user:  [runs enable_app_notifications()] OK, I enabled the app notifications on my side.
    agent: get_app_status(user_id=ava_kim_1234)  -> {..., "notifications": "on", ...}
    agent: Thanks! I checked again: your notifications are now on, so delivery notifications will reach you again.

With `params.device` (tau2 telecom, mined from the real gpt-4.1 run) the agent reads nothing: the device shows only in
the user's own check tool (`roles.read`, e.g. check_network_status), whose real text the user reads out each time it
is asked to check it, or a setting it shows; the fixes reply as the real toggles do. The settings are what the
profile learned from those texts before and after each user action (`trajectories.device_text`), and the tools pair
up as the tasks' expected user actions list them. The check is the same, with the user's check in place of the read:

    user:  Hi! My mobile data is not working on my phone. Can you help me fix it?
    agent: Could you please check the network status on your phone and tell me what it shows?
    user:  [runs check_network_status()] I checked the network status on my phone. It shows:
           Airplane Mode: ON / SIM Card Status: active / ... / Data Roaming Enabled: Yes / ...
    agent: Airplane Mode is ON, which blocks every connection. Please turn off Airplane Mode on your phone.
    user:  [runs toggle_airplane_mode()] OK, I toggled the airplane mode on my side. My phone says: Airplane Mode is
           now OFF.
    agent: Thank you. Please check the network status on your phone again and tell me what it shows now.
    user:  [runs check_network_status()] ... Airplane Mode: OFF ...
    agent: Thanks! Airplane Mode is now OFF, so your mobile data should work again. Have a great day!
"""

from __future__ import annotations

import copy
import re
import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from trace_envs.checks.clauses import (
    CallRef,
    Check,
    Communicated,
    FinalState,
    NoCall,
    Order,
)
from trace_envs.language.words import tool_words
from trace_envs.families.kit import GOODBYE
from trace_envs.families.task import Task, register_task
from trace_envs.language import hints
from trace_envs.runtime import Scenario
from trace_envs.runtime.phrases import key_noun, path_words
from trace_envs.runtime.records import get_path, set_path
from trace_envs.runtime.scenario import RESULT, ToolError, UserAction, UserRequest
from trace_envs.runtime.world import (
    RecordEnv,
    RecordSource,
    ScenarioError,
    call,
    copy_record,
    new_state,
    read_record,
)
from trace_envs.spec.model import ToolSpec
from trace_envs.trajectories.device_text import parse_device_text, render_device_text

PRIMARY_SHARE = 0.5
DEVICE = "device"  # the device's record key in a `params.device` scenario (its only record)
USER_KIND = "user"  # the trace's kind for user-side tools: no agent-side clause (kind read / write) ever counts them

# A user-side tool's leading verb -> how a person tells someone to do it.
USER_VERBS = {
    # a toggle turns a setting on or off: real agents say "Enable data roaming on your phone" as often as "turn on"
    "toggle": ("toggle", "turn off", "turn on", "switch off", "switch on", "enable", "disable"),
    "enable": ("enable", "turn on", "switch on", "activate", "allow"),
    "disable": ("disable", "turn off", "switch off", "deactivate"),
    "turn": ("turn on", "turn off"),
    "grant": ("grant", "allow", "give"),
    "reseat": ("reseat", "reinsert", "take out and put back", "remove and reinsert"),
    "update": ("update", "upgrade", "install the latest"),
    "restart": ("restart", "reboot"),
    "reboot": ("reboot", "restart"),
    "reset": ("reset",),
    "set": ("set", "change"),
    "check": ("check", "look at", "verify"),
}
_GENERIC_OBJECT_WORDS = {"app", "mode", "card", "settings", "setting", "status", "the", "my", "phone", "device"}


def user_action_words(tool: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """How people name `tool`'s action: verbs from its leading word, objects from the rest ("toggle_airplane_mode" ->
    ("toggle", "turn off", ...), ("airplane mode", "airplane"))."""
    words = tool_words(tool)
    if not words:
        return (), ()
    head, rest = words[0], words[1:]
    verbs = USER_VERBS.get(head, (head,))
    phrase = " ".join(rest)
    objects = [phrase] if phrase else []
    if len(rest) >= 2:
        objects += [w for w in rest if w not in _GENERIC_OBJECT_WORDS and len(w) > 2]
    return tuple(verbs), tuple(dict.fromkeys(objects or [head]))


class Setting(BaseModel):
    """One user-side setting and the action that fixes it."""

    model_config = ConfigDict(extra="forbid")

    field: str = Field(description="Record field (a dotted path) the user-side tool changes.")
    bad: Any = Field(description="The field's value that causes the symptom.")
    good: Any = Field(description="The field's value once the user has done the action.")
    verbs: list[str] = Field(default_factory=list, description="How the action's verb is said (default: from the tool).")
    objects: list[str] = Field(default_factory=list, description="What it acts on, in words (default: from the tool).")
    report: str = Field(default="", description="What the user says once done (default: from the action's words).")
    result: str = Field(default="", description="What the user tool replies, as the runs show it (\"Airplane Mode is "
                        "now OFF.\"): an on / off in it follows the value the tool set (default: a generic receipt).")
    say: str = Field(default="", description="How agents ask for the action, as the runs show it (\"open your "
                     "authenticator app and scan the new code\"; default: its first verb and object).")


class UserActionParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # Plain dicts, each checked as a `Setting`: the spec's JSON Schema inlines params schemas without their $defs.
    settings: dict[str, dict[str, Any]] = Field(
        description="For roles.user_tool and roles.alt_tool: the setting each fixes (field, bad, good; optional verbs, "
        "objects, report)."
    )
    symptom: str = Field(description="The user's complaint, the same whichever setting causes it.")
    phrase: str = Field(default="fix this problem", description="What the user wants, as a verb phrase.")
    device: bool = Field(default=False, description="roles.read is the user's own check tool (tau2 telecom's "
                         "check_network_status): the setting shows only in its text, which the user reads out when "
                         "the agent asks it to check; the agent reads nothing itself. Else roles.read is the agent's "
                         "read of the record under roles.key.")
    healthy: dict[str, Any] = Field(default_factory=dict, description="With params.device: other fields of the check "
                                    "text that other user tools fix, at their fixed values (the scenario's is the "
                                    "only fault its text shows).")

    @field_validator("settings")
    @classmethod
    def _settings(cls, value: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        for setting in value.values():
            Setting.model_validate(setting)
        return value

    def setting(self, tool: str) -> Setting:
        return Setting.model_validate(self.settings[tool])


def _words(value: Any) -> str:
    return str(value).replace("_", " ")


def _action(tool: str, setting: Setting, device: bool = False) -> UserAction:
    verbs, objects = user_action_words(tool)
    verbs, objects = tuple(setting.verbs) or verbs, tuple(setting.objects) or objects
    report = setting.report or f"OK, I {_past(verbs[0])} the {objects[0]} on my side."
    if device and not setting.report:
        report += f" My phone says: {RESULT}"  # as a tau2 user reads out its toggle's reply
    return UserAction(tool=tool, verbs=verbs, objects=objects, report=report)


def _past(verb: str) -> str:
    """"turn on" -> "turned on", "enable" -> "enabled", "reset" -> "reset"."""
    head, _, rest = verb.partition(" ")
    past = head if head.endswith("set") else head + ("d" if head.endswith("e") else "ed")
    return f"{past} {rest}".strip()


def _instruction(action: UserAction) -> str:
    return f"{action.verbs[0]} the {action.objects[0]}"


def _keep_seen(state: dict[str, Any]) -> None:
    """Before a tool may change the device: the user's last reading of it, kept as the record itself while nothing
    changed it (a reading copied at every check cost a sixth of a step), becomes a copy of it."""
    seen = state.get("seen")
    if seen:
        user = state["user_record"]
        record = state["records"][user]
        if seen.get(user) is record:
            seen[user] = copy_record(record)


class UserActionEnv(RecordEnv):
    """The user's record (device or account state), read by the agent, or with `params.device` shown only by the
    user's own check tool, whose text the user reads out when asked; the user-side tools change it when the user is
    told to use them. They are never offered to the agent."""

    def __init__(self, **kwargs: Any):
        super().__init__(**kwargs)
        for tool in self._user_side():
            self._kinds[tool] = USER_KIND

    @property
    def device(self) -> bool:
        return bool(self.SPEC.params.get("device"))

    @property
    def single(self) -> bool:
        """One user-side fix (no `roles.alt_tool`): the setting it fixes is broken on every seed, and the agent's
        own write beside it is the temptation (doing something itself instead of getting the user to act)."""
        return "alt_tool" not in self.SPEC.roles

    def _user_side(self) -> tuple[str, ...]:
        roles = self.SPEC.roles
        tools = tuple(roles[r] for r in ("user_tool", "alt_tool") if r in roles)
        return (*tools, roles["read"]) if self.device else tools

    def works(self, tool: ToolSpec) -> bool:  # type: ignore[override]
        return tool.name not in self._user_side() and super().works(tool)

    def run_tool(self, name: str, args: dict[str, Any], state: dict[str, Any]) -> Any:
        roles = self.SPEC.roles
        if self.device and name != roles["read"]:
            _keep_seen(state)
        if name in (roles["user_tool"], roles.get("alt_tool")):
            setting = Setting.model_validate(self.SPEC.params["settings"][name])
            record = state["records"][state["user_record"]]
            value = setting.good
            if tool_words(name)[:1] == ["toggle"] and get_path(record, setting.field)[1] == setting.good:
                value = setting.bad  # a toggle flips: toggling a setting that was fine breaks it
            set_path(record, setting.field, copy.deepcopy(value))
            return _said(setting, value) if self.device else {"status": "done", setting.field: value}
        if name == roles["read"] and self.device:
            record = state["records"][state["user_record"]]
            state.setdefault("seen", {})[state["user_record"]] = record  # what the user last read out: see _keep_seen
            return render_device_text(state["device_text"], record)
        if name == roles["read"]:
            text = read_record(state, roles["key"], args)
            # what the agent last saw of each record: "verified" reads it
            state.setdefault("seen", {})[args[roles["key"]]] = json.loads(text)
            return text
        if self.single:  # the agent's own write: it works as the backend does, and fixes nothing on the user's side
            return super().run_tool(name, args, state)
        raise ToolError(f"{name} is not available in this environment")

    def build_scenario(self, rng) -> Scenario:
        spec = self.SPEC
        roles, params = spec.roles, UserActionParams.model_validate(spec.params)
        if self.single:
            return self._single_scenario(rng, params)
        primary = self.class_draw < PRIMARY_SHARE
        needed, other = (roles["user_tool"], roles["alt_tool"]) if primary else (roles["alt_tool"], roles["user_tool"])
        fix, fine = params.setting(needed), params.setting(other)
        actions = {t: _action(t, params.setting(t), params.device) for t in (needed, other)}
        do, dont = actions[needed], actions[other]
        if self.device:
            state, look, again, opening, facts, seen = self._device_world(rng, params, fix, fine)
        else:
            state, look, again, opening, facts, seen = self._record_world(rng, params, fix, fine)
        target = state["user_record"]
        instruct = (f"{seen[0]}: your {path_words(fix.field)} is {_words(fix.bad)}. Only you can change that on your "
                    f"side: please {_instruction(do)}, and tell me when you have done it.")
        told = (f"Thanks! I checked again: the {path_words(fix.field)} is now {_words(fix.good)}, so it should work "
                f"again. {GOODBYE}")
        both = (f"{seen[1]}. Please {_instruction(do)}. Also please {_instruction(dont)}. Tell me when you have done "
                "both.")
        wrong = (f"{seen[1]}. Only you can change that on your side: please {_instruction(dont)}, and tell me when "
                 "you have done it.")
        oracle = [look, instruct, again, told]
        mutants = {
            "drop_required_call": [look, instruct, told],  # no verification
            "swap_calls": [instruct, look, told],  # told the user what to do before looking
            "wrong_argument": [look, wrong, again, told],  # the other action
            "forbidden_extra_call": [look, both, again, told],  # the user changes a setting that was fine
            "text_only": [told],
        }
        user_actions = [actions[roles["user_tool"]], actions[roles["alt_tool"]]]
        if self.device:
            user_actions.append(check_action(roles["read"], do.objects + dont.objects))
        return Scenario(
            state=state,
            bindings={"target": target, "primary": primary, "good_words": _words(fix.good)},
            opening=opening,
            facts=facts,
            requests=[UserRequest(kind="act", phrase=params.phrase)],
            user_actions=user_actions,
            oracle=oracle,
            mutants=mutants,
            klass=needed,
        )

    def _single_scenario(self, rng, params: UserActionParams) -> Scenario:
        """One user-side fix: the setting is broken; the agent reads, names the action the way the runs' agents did,
        waits for the user, reads again and says it works. Writing instead (the agent's own fix beside it) zeroes."""
        roles = self.SPEC.roles
        tool = roles["user_tool"]
        fix = params.setting(tool)
        do = _action(tool, fix)
        state, look, again, opening, facts, seen = self._record_world(rng, params, fix, None)
        target = state["user_record"]
        ask = fix.say or _instruction(do)
        instruct = (f"{seen[0]}: your {path_words(fix.field)} is {_words(fix.bad)}. Only you can change that on your "
                    f"side: please {ask}, and tell me when you have done it.")
        told = (f"Thanks! I checked again: the {path_words(fix.field)} is now {_words(fix.good)}, so it should work "
                f"again. {GOODBYE}")
        vague = f"{seen[1]}. Please try again in a little while, and tell me if it still does not work."
        key = roles["key"]
        writes = [t.name for t in self.tool_specs if self._kinds.get(t.name) == "write" and key in t.properties]
        if not writes:
            raise ScenarioError("no write of the agent's takes the record's key: nothing to do instead of the user")
        instead = call(writes[0], **{key: target})
        return Scenario(
            state=state,
            bindings={"target": target, "primary": True, "good_words": _words(fix.good)},
            opening=opening,
            facts=facts,
            requests=[UserRequest(kind="act", phrase=params.phrase)],
            user_actions=[do],
            oracle=[look, instruct, again, told],
            mutants={
                "drop_required_call": [look, instruct, told],  # no verification
                "swap_calls": [instruct, look, told],  # told the user what to do before looking
                "wrong_argument": [look, vague, again, told],  # named no action: the user does nothing
                "forbidden_extra_call": [look, instead, instruct, again, told],  # did something itself as well
                "text_only": [told],
            },
            klass=tool,
        )

    def _record_world(self, rng, params: UserActionParams, fix: Setting, fine: Setting | None):
        """The user's record drawn from the agent read's real records, with the agent's read as the look; with one
        fix (`fine` None) a record the runs showed with that very fault first (its other fields agree with it)."""
        spec, roles = self.SPEC, self.SPEC.roles
        key, read = roles["key"], roles["read"]

        def broken(record: dict[str, Any]) -> list[dict[str, Any]]:
            variant = copy.deepcopy(record)
            set_path(variant, fix.field, copy.deepcopy(fix.bad))
            if fine is not None:
                set_path(variant, fine.field, copy.deepcopy(fine.good))
            return [variant]

        source = RecordSource(spec, read, key, rng)
        if fine is None:
            record = source.draw(lambda r: get_path(r, fix.field) == (True, fix.bad)) or \
                source.draw(lambda r: get_path(r, fix.field)[0], broken)
        else:
            record = source.draw(lambda r: get_path(r, fix.field)[0] and get_path(r, fine.field)[0], broken)
        if record is None:
            raise ScenarioError(f"no record of {read} has both {fix.field} and {fine.field}" if fine is not None
                                else f"no record of {read} has {fix.field}")
        target = str(record[key])
        label = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", key).replace("_", " ").lower()  # customerId -> customer id
        state = new_state({target: record})
        state["user_record"] = target
        look = call(read, **{key: target})
        return (state, look, look, f"Hi! My {label} is {target}. {params.symptom}", {label: target},
                ("I checked", f"I checked your {key_noun(key)}"))

    def _device_world(self, rng, params: UserActionParams, fix: Setting, fine: Setting):
        """The device as a real text of the user's check tool shows it, with the needed setting broken and the other
        fine; the look is asking the user to check."""
        read = self.SPEC.roles["read"]
        texts = [t for t in self.SPEC.tool(read).result_examples
                 if isinstance(t, str) and {fix.field, fine.field} <= parse_device_text(t).keys()]
        if not texts:
            raise ScenarioError(f"no real text of {read} shows both {fix.field} and {fine.field}")
        # a text the runs showed with this very fault reads truest (its other lines agree with it)
        texts = [t for t in texts if parse_device_text(t)[fix.field] == fix.bad
                 and parse_device_text(t)[fine.field] == fine.good] or texts
        text = texts[int(rng.integers(len(texts)))]
        record: dict[str, Any] = dict(parse_device_text(text))
        record.update({f: v for f, v in params.healthy.items() if f in record})
        record[fix.field], record[fine.field] = copy.deepcopy(fix.bad), copy.deepcopy(fine.good)
        state = new_state({DEVICE: record})
        state["user_record"], state["device_text"] = DEVICE, text
        what = user_action_words(read)[1][0]
        look = f"Let's find the cause. Please check the {what} on your phone and tell me what it shows."
        again = f"Please check the {what} on your phone again and tell me what it shows now."
        return state, look, again, f"Hi! {params.symptom}", {}, (f"Thanks, I see it in your {what}", "Thanks")


def check_action(tool: str, settings: tuple[str, ...] = ()) -> UserAction:
    """The user checking its phone with its own `tool` (check_network_status) whenever asked to check it or one of
    the `settings` it shows ("Could you check if Airplane Mode is on?"), reading out the text."""
    verbs, objects = user_action_words(tool)
    return UserAction(tool=tool, verbs=verbs, objects=(*objects, *settings), repeat=True,
                      report=f"I checked the {objects[0]} on my phone. It shows:\n{RESULT}")


def _said(setting: Setting, value: Any) -> str:
    """The user tool's reply as the runs show it, saying the value it set."""
    text = setting.result or f"Done: {path_words(setting.field)} is now {_words(value)}."
    return render_device_text(text, {setting.field: value}) if setting.field in parse_device_text(text) else text


class UserSideAction(Task):
    name = "user_side_action"
    summary = ("Diagnose, tell the user to do the one user-side action that fixes it (naming it clearly), then verify "
               "before saying it works; never pretend to do it yourself.")
    roles = ("read", "user_tool")  # `alt_tool` for two fixes; and `key`, the read's argument, unless params.device
    params = UserActionParams
    env_class = UserActionEnv

    def hint(self, spec: Any) -> str:
        return hints.user_fix(spec.roles["read"], bool(spec.params.get("device")))

    def check(self, roles: dict[str, str], params: dict[str, Any], requests: int = 2) -> Check:
        p = UserActionParams.model_validate(params)
        read = roles["read"]
        # with params.device the user runs the check (no arguments); else the agent reads the user's record
        read_target = CallRef(tool=read, args={} if p.device else {roles["key"]: {"$var": "target"}})
        who, looked = (("the user's", f"the user checks with {read}") if p.device else
                       ("the agent's", f"read the record with {read}"))
        clauses: list = []
        pairs = ((roles["user_tool"], roles["alt_tool"], "primary", ""),
                 (roles["alt_tool"], roles["user_tool"], "!primary", "_alt")) if "alt_tool" in roles else \
            ((roles["user_tool"], None, None, ""),)
        for tool, other, when, sfx in pairs:
            s = p.setting(tool)
            clauses += [
                Order(id=f"diagnosed{sfx}", weight=1, when=when, first=read_target, then=CallRef(tool=tool),
                      description=f"{looked} before the user does {tool}"),
                FinalState(id=f"fixed{sfx}", weight=2, when=when, path=f"records.$target.{s.field}", value=s.good,
                           description=f"the user did {tool}: {s.field} is {s.good} at the end"),
                FinalState(id=f"verified{sfx}", weight=1, when=when, requires=[f"fixed{sfx}"],
                           path=f"seen.$target.{s.field}", value=s.good,
                           description=f"{who} last {read} shows {s.field} fixed (it checked after the user acted)"),
                Communicated(id=f"told{sfx}", weight=1, when=when, requires=[f"verified{sfx}"],
                             values=[{"$var": "good_words"}], after=read_target,
                             description="after checking, tell the user the setting is fixed"),
            ]
            if other is not None:
                clauses.append(NoCall(id=f"only_needed{sfx}", when=when, penalty=True, call=CallRef(tool=other),
                                      description=f"the user was not made to do {other}, which was fine"))
        clauses.append(NoCall(id="no_write", penalty=True, call=CallRef(kind="write"),
                              description="the agent changes nothing itself"))
        return Check(clauses=clauses)

    def problems(self, spec: Any) -> list[str]:
        out = super().problems(spec)
        if out:
            return out
        roles = spec.roles
        if roles["user_tool"] == roles.get("alt_tool"):
            out.append("roles.user_tool and roles.alt_tool must be two different user-side tools")
        if spec.params.get("device") and "alt_tool" not in roles:
            out.append("params.device needs roles.alt_tool (two fixes on the device)")
        if not spec.params.get("device") and "key" not in roles:
            out.append("roles.key is missing (the read's argument naming the user's record; or set params.device)")
        settings = spec.params.get("settings", {})
        out += [f"params.settings has no entry for roles.{r} ({roles[r]})"
                for r in ("user_tool", "alt_tool") if r in roles and roles[r] not in settings]
        if not out and "alt_tool" in roles:
            fields = {settings[roles[r]]["field"] for r in ("user_tool", "alt_tool")}
            if len(fields) < 2:
                out.append("the two user-side tools must fix two different fields")
        return out


register_task(UserSideAction())
