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
"""

from __future__ import annotations

import copy
import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from trace_envs.checks.clauses import (
    CallMade,
    CallRef,
    Check,
    Communicated,
    FinalState,
    NoCall,
    Order,
)
from trace_envs.checks.words import tool_words
from trace_envs.families.base import Family, Label, Proposal, ProposalContext
from trace_envs.families.kit import GOODBYE
from trace_envs.families.registry import register_family
from trace_envs.runtime import Scenario
from trace_envs.runtime.phrases import key_noun, path_words
from trace_envs.runtime.records import get_path, set_path
from trace_envs.runtime.scenario import ToolError, UserAction, UserRequest
from trace_envs.runtime.user import names_action
from trace_envs.runtime.world import (
    RecordEnv,
    RecordSource,
    ScenarioError,
    call,
    new_state,
    read_record,
)
from trace_envs.spec.model import ToolSpec
from trace_envs.trajectories.results import ResultIndex

PRIMARY_SHARE = 0.5
USER_KIND = "user"  # the trace's kind for user-side tools: no agent-side clause (kind read / write) ever counts them

# A user-side tool's leading verb -> how a person tells someone to do it.
USER_VERBS = {
    "toggle": ("toggle", "turn off", "turn on", "switch off", "switch on"),
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


class UserActionParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # Plain dicts, each checked as a `Setting`: the spec's JSON Schema inlines params schemas without their $defs.
    settings: dict[str, dict[str, Any]] = Field(
        description="For roles.user_tool and roles.alt_tool: the setting each fixes (field, bad, good; optional verbs, "
        "objects, report)."
    )
    symptom: str = Field(description="The user's complaint, the same whichever setting causes it.")
    phrase: str = Field(default="fix this problem", description="What the user wants, as a verb phrase.")

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


def _action(tool: str, setting: Setting) -> UserAction:
    verbs, objects = user_action_words(tool)
    verbs, objects = tuple(setting.verbs) or verbs, tuple(setting.objects) or objects
    report = setting.report or f"OK, I {_past(verbs[0])} the {objects[0]} on my side."
    return UserAction(tool=tool, verbs=verbs, objects=objects, report=report)


def _past(verb: str) -> str:
    """"turn on" -> "turned on", "enable" -> "enabled", "reset" -> "reset"."""
    head, _, rest = verb.partition(" ")
    past = head if head.endswith("set") else head + ("d" if head.endswith("e") else "ed")
    return f"{past} {rest}".strip()


def _instruction(action: UserAction) -> str:
    return f"{action.verbs[0]} the {action.objects[0]}"


class UserActionEnv(RecordEnv):
    """The user's record (device or account state), read by the agent; the user-side tools change it when the user
    is told to use them. They are never offered to the agent."""

    def __init__(self, render_mode: str | None = None, max_turns: int | None = None, hint_rate: float | None = None):
        super().__init__(render_mode=render_mode, max_turns=max_turns, hint_rate=hint_rate)
        for role in ("user_tool", "alt_tool"):
            self._kinds[self.SPEC.roles[role]] = USER_KIND

    def works(self, tool: ToolSpec) -> bool:  # type: ignore[override]
        roles = self.SPEC.roles
        return tool.name not in (roles["user_tool"], roles["alt_tool"]) and super().works(tool)

    def run_tool(self, name: str, args: dict[str, Any], state: dict[str, Any]) -> Any:
        roles = self.SPEC.roles
        if name in (roles["user_tool"], roles["alt_tool"]):
            setting = Setting.model_validate(self.SPEC.params["settings"][name])
            record = state["records"][state["user_record"]]
            value = setting.good
            if tool_words(name)[:1] == ["toggle"] and get_path(record, setting.field)[1] == setting.good:
                value = setting.bad  # a toggle flips: toggling a setting that was fine breaks it
            set_path(record, setting.field, copy.deepcopy(value))
            return {"status": "done", setting.field: value}
        if name == roles["read"]:
            text = read_record(state, roles["key"], args)
            # what the agent last saw of each record: "verified" reads it
            state.setdefault("seen", {})[args[roles["key"]]] = json.loads(text)
            return text
        raise ToolError(f"{name} is not available in this environment")

    def build_scenario(self, rng) -> Scenario:
        spec = self.SPEC
        roles, params = spec.roles, UserActionParams.model_validate(spec.params)
        key, read = roles["key"], roles["read"]
        primary = self.class_draw < PRIMARY_SHARE
        needed, other = (roles["user_tool"], roles["alt_tool"]) if primary else (roles["alt_tool"], roles["user_tool"])
        fix, fine = params.setting(needed), params.setting(other)

        def broken(record: dict[str, Any]) -> list[dict[str, Any]]:
            variant = copy.deepcopy(record)
            set_path(variant, fix.field, copy.deepcopy(fix.bad))
            set_path(variant, fine.field, copy.deepcopy(fine.good))
            return [variant]

        source = RecordSource(spec, read, key, rng)
        record = source.draw(lambda r: get_path(r, fix.field)[0] and get_path(r, fine.field)[0], broken)
        if record is None:
            raise ScenarioError(f"no record of {read} has both {fix.field} and {fine.field}")
        target = str(record[key])
        label = key.replace("_", " ")
        actions = {t: _action(t, params.setting(t)) for t in (needed, other)}
        do, dont = actions[needed], actions[other]
        opening = f"Hi! My {label} is {target}. {params.symptom}"
        look = call(read, **{key: target})
        noun = key_noun(key)
        instruct = (f"I checked: your {path_words(fix.field)} is {_words(fix.bad)}. Only you can change that on your "
                    f"side: please {_instruction(do)}, and tell me when you have done it.")
        told = (f"Thanks! I checked again: the {path_words(fix.field)} is now {_words(fix.good)}, so it should work "
                f"again. {GOODBYE}")
        both = (f"I checked your {noun}. Please {_instruction(do)}. Also please {_instruction(dont)}. Tell me when "
                "you have done both.")
        wrong = (f"I checked your {noun}. Only you can change that on your side: please {_instruction(dont)}, and "
                 "tell me when you have done it.")
        oracle = [look, instruct, look, told]
        mutants = {
            "drop_required_call": [look, instruct, told],  # no verification read
            "swap_calls": [instruct, look, told],  # told the user what to do before looking
            "wrong_argument": [look, wrong, look, told],  # the other action
            "forbidden_extra_call": [look, both, look, told],  # the user changes a setting that was fine
            "text_only": [told],
        }
        state = new_state({target: record})
        state["user_record"] = target
        return Scenario(
            state=state,
            bindings={"target": target, "primary": primary, "good_words": _words(fix.good)},
            opening=opening,
            facts={label: target},
            requests=[UserRequest(kind="act", phrase=params.phrase)],
            user_actions=[actions[roles["user_tool"]], actions[roles["alt_tool"]]],
            oracle=oracle,
            mutants=mutants,
            klass=needed,
        )


class UserSideAction(Family):
    name = "user_side_action"
    summary = ("Diagnose, tell the user to do the one user-side action that fixes it (naming it clearly), then verify "
               "before saying it works; never pretend to do it yourself.")
    roles = ("read", "key", "user_tool", "alt_tool")
    params = UserActionParams
    env_class = UserActionEnv
    teaches = ("user_action_missing",)

    def check(self, roles: dict[str, str], params: dict[str, Any], requests: int = 2) -> Check:
        p = UserActionParams.model_validate(params)
        key, read = roles["key"], roles["read"]
        read_target = CallRef(tool=read, args={key: {"$var": "target"}})
        clauses: list = []
        for tool, other, when, sfx in ((roles["user_tool"], roles["alt_tool"], "primary", ""),
                                       (roles["alt_tool"], roles["user_tool"], "!primary", "_alt")):
            s = p.setting(tool)
            clauses += [
                Order(id=f"diagnosed{sfx}", weight=1, when=when, first=read_target, then=CallRef(tool=tool),
                      description=f"read the record with {read} before the user does {tool}"),
                FinalState(id=f"fixed{sfx}", weight=2, when=when, path=f"records.$target.{s.field}", value=s.good,
                           description=f"the user did {tool}: {s.field} is {s.good} at the end"),
                FinalState(id=f"verified{sfx}", weight=1, when=when, requires=[f"fixed{sfx}"],
                           path=f"seen.$target.{s.field}", value=s.good,
                           description=f"the agent's last {read} shows {s.field} fixed (it checked after the user acted)"),
                Communicated(id=f"told{sfx}", weight=1, when=when, requires=[f"verified{sfx}"],
                             values=[{"$var": "good_words"}], after=read_target,
                             description="after checking, tell the user the setting is fixed"),
                NoCall(id=f"only_needed{sfx}", when=when, penalty=True, call=CallRef(tool=other),
                       description=f"the user was not made to do {other}, which was fine"),
            ]
        clauses.append(NoCall(id="no_write", penalty=True, call=CallRef(kind="write"),
                              description="the agent changes nothing itself"))
        return Check(clauses=clauses)

    def problems(self, spec: Any) -> list[str]:
        out = super().problems(spec)
        if out:
            return out
        roles = spec.roles
        if roles["user_tool"] == roles["alt_tool"]:
            out.append("roles.user_tool and roles.alt_tool must be two different user-side tools")
        settings = spec.params.get("settings", {})
        out += [f"params.settings has no entry for roles.{r} ({roles[r]})"
                for r in ("user_tool", "alt_tool") if roles[r] not in settings]
        if not out:
            fields = {settings[roles[r]]["field"] for r in ("user_tool", "alt_tool")}
            if len(fields) < 2:
                out.append("the two user-side tools must fix two different fields")
        return out

    def label(self, view, check: Check, args: dict[str, Any]) -> Label:
        """NA without ground-truth user actions of the candidate's tools; LACKING when one never happened; PRESENT
        when each happened after an agent message telling the user to do it; NA when the user did them unprompted."""
        tools = set(args.get("tools") or [])
        run = view.run
        wanted = [g.name for g in run.ground_truth or [] if g.requestor == "user" and g.name in tools]
        if not wanted:
            return "NA"
        done = {c.name: c.message_index for c in reversed(run.user_calls) if not c.error}
        if any(name not in done for name in wanted):
            return "LACKING"
        for name in wanted:
            verbs, objects = user_action_words(name)
            said = [m.get("content") for m in run.messages[: done[name]] if m.get("role") == "assistant"]
            if not any(isinstance(t, str) and names_action(t, verbs, objects) for t in said):
                return "NA"
        return "PRESENT"

    def portable_check(self, roles: dict[str, str]) -> tuple[Check, dict[str, Any]] | None:
        u, a = roles.get("user_tool"), roles.get("alt_tool")
        return (_acted(u), {"tools": [u, a]}) if u and a else None

    def propose(self, ctx: ProposalContext) -> list[Proposal]:
        """A pair of user-side tools the runs show changing fields of one agent read's record (the user acted
        between two reads), one candidate per pair."""
        user_tools = getattr(ctx.profile, "user_tools", {})
        out, paired = [], set()
        for u, tool in user_tools.items():
            for read in sorted(tool.changes, key=lambda r: (-len(tool.changes[r]), r)):
                alt = next((v for v, t in user_tools.items() if v != u and read in t.changes
                            and frozenset((u, v)) not in paired
                            and set(t.changes[read]) != set(tool.changes[read])), None)
                rargs = ctx.args(read)
                if alt is None or not rargs:
                    continue
                settings = settings_from_profile(ctx.profile, read, [u, alt])
                if len(settings) < 2:
                    continue
                paired.add(frozenset((u, alt)))
                noun = _thing_read(read) or key_noun(rargs[0])
                out.append(Proposal(
                    name=f"have_user_{u}_or_{alt}",
                    description=f"Read {read}, tell the user to do the one fix on their side ({u} or {alt}) that the "
                    "record shows is needed, naming it clearly, then read again to check before saying it works.",
                    roles={"read": read, "key": rargs[0], "user_tool": u, "alt_tool": alt},
                    label_check=_acted(u),
                    label_args={"tools": [u, alt]},
                    params={"settings": settings, "phrase": f"get my {noun} working again",
                            "symptom": f"Something on my {noun} stopped working. Can you help me fix it?"},
                ))
                break
        return out

    def infer_params(self, roles: dict[str, str], index: ResultIndex, policy: str = "", rules: Any = None
                     ) -> tuple[dict[str, Any], str]:
        """Nothing: the settings are what the profile saw each user tool change (`settings_from_profile`), which
        `propose` puts in its proposals; the agent-side index holds no user calls."""
        return {}, ""

    def target_tools(self, roles: dict[str, str]) -> list[str]:
        return [t for t in (roles.get("user_tool"), roles.get("alt_tool")) if t]


def settings_from_profile(profile: Any, read: str, tools: list[str]) -> dict[str, dict[str, Any]]:
    """Each user tool's setting as the runs show it: the first field of `read`'s record that it, and none of the other
    `tools`, changed, from what to what (see `ToolProfile.changes`); tools without such a field are left out."""
    user_tools = getattr(profile, "user_tools", {})
    seen = {n: (user_tools[n].changes.get(read, {}) if n in user_tools else {}) for n in tools}
    out: dict[str, dict[str, Any]] = {}
    for name in tools:
        changes = seen[name]
        # a field only this tool changes is its setting; one every fix changes (the signal) is a consequence
        others = {p for n in tools if n != name for p in seen[n]}
        taken = {s["field"] for s in out.values()}
        path = next((p for p in changes if p not in others and p not in taken), None)
        if path is not None:
            bad, good = changes[path]
            out[name] = {"field": path, "bad": bad, "good": good}
    return out


def _thing_read(read: str) -> str:
    """What a read tool shows, in words ("get_app_status" -> "app"), or "" when its name says nothing more."""
    return " ".join(w for w in tool_words(read)[1:] if w not in ("status", "details", "info", "by", "id", "of"))


def _acted(user_tool: str) -> Check:
    return Check(clauses=[CallMade(id="user_acted", call=CallRef(tool=user_tool))])


register_family(UserSideAction())
