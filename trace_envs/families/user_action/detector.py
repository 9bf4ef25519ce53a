"""Detector of user_side_action: how the miner finds it in real runs (see task.py for the env)."""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from trace_envs.checks.clauses import (
    CallMade,
    CallRef,
    Check,
)
from trace_envs.language.words import tool_words
from trace_envs.families.user_action.task import USER_VERBS, user_action_words
from trace_envs.language.instructions import ASKED_VERB
from trace_envs.mining.detector import Detector, Label, Proposal, ProposalContext, register_detector
from trace_envs.runtime.phrases import key_noun
from trace_envs.language.instructions import names_action
from trace_envs.language.sentences import SENTENCE_END
from trace_envs.mining.propose_offline import slug
from trace_envs.trajectories.device_text import parse_device_text
from trace_envs.checks.trace import read_result
from trace_envs.trajectories.results import ResultIndex, flatten


def _proposal(read: str, rargs: list[str], u: str, alt: str, settings: dict[str, dict[str, Any]],
              texts: list[str], healthy: dict[str, Any]) -> Proposal:
    noun = _thing_read(read) or (key_noun(rargs[0]) if rargs else "phone")
    if texts:  # the device: the user checks it with its own tool
        return Proposal(
            name=f"have_user_{u}_or_{alt}",
            description=f"Ask the user to check its phone ({read}), tell it to do the one fix on its side ({u} or "
            f"{alt}) that the check shows is needed, naming it clearly, then have it check again before saying it "
            "works.",
            roles={"read": read, "user_tool": u, "alt_tool": alt},
            label_check=_acted(u),
            label_args={"tools": [u, alt]},
            params={"settings": settings, "device": True, "healthy": healthy,
                    "phrase": f"get my phone's {noun} working again",
                    "symptom": f"My phone's {noun} is not working properly. Can you help me fix it?"},
            results={read: texts},
        )
    return Proposal(
        name=f"have_user_{u}_or_{alt}",
        description=f"Read {read}, tell the user to do the one fix on their side ({u} or {alt}) that the "
        "record shows is needed, naming it clearly, then read again to check before saying it works.",
        roles={"read": read, "key": rargs[0], "user_tool": u, "alt_tool": alt},
        label_check=_acted(u),
        label_args={"tools": [u, alt]},
        params={"settings": settings, "phrase": f"get my {noun} working again",
                "symptom": f"Something on my {noun} stopped working. Can you help me fix it?"},
    )


def _texts(runs: list[Any], check: str, fields: list[str]) -> list[str]:
    """Distinct real texts of the user's `check` that show every one of `fields` (at most 50)."""
    out: dict[str, None] = {}
    for run in runs:
        for c in run.user_calls:
            if c.name == check and not c.error and set(fields) <= parse_device_text(c.result).keys():
                out.setdefault(c.result, None)
    return list(out)[:50]


def settings_from_profile(profile: Any, read: str, tools: list[str]) -> dict[str, dict[str, Any]]:
    """Each user tool's setting as the runs show it: a field of `read`'s record (or check text) that it, and none of
    the other `tools`, changed, from what to what (see `ToolProfile.changes`), one its name names first ("sim_card"
    for reseat_sim_card, not the signal it brought back), with the first line of its real reply as its `result`;
    tools without such a field are left out."""
    user_tools = getattr(profile, "user_tools", {})
    seen = {n: (user_tools[n].changes.get(read, {}) if n in user_tools else {}) for n in tools}
    out: dict[str, dict[str, Any]] = {}
    for name in tools:
        changes = seen[name]
        # a field only this tool changes is its setting; one every fix changes (the signal) is a consequence
        others = {p for n in tools if n != name for p in seen[n]}
        taken = {s["field"] for s in out.values()}
        own = [p for p in changes if p not in others and p not in taken]
        named = set(tool_words(name)[1:])
        path = next((p for p in own if named & set(re.split(r"[._]", p))), own[0] if own else None)
        if path is not None:
            bad, good = changes[path]
            out[name] = {"field": path, "bad": bad, "good": good}
            reply = user_tools[name].result_example if name in user_tools else None
            if isinstance(reply, str) and reply.strip() and path in parse_device_text(reply):
                out[name]["result"] = reply.strip().splitlines()[0][:200]
    return out


MIN_RUNS = 2  # runs that must show the same change before it counts as the user's own action
MIN_SHARE = 0.8  # of the changes seen on a field, the share the most common (bad -> good) pair must hold


@dataclass
class UserChange:
    """One field of an agent read's record that changed between two reads of the same record while only the user
    acted in between (a message, or a call of its own tool): a fix on the user's side, seen from the agent's side."""

    read: str
    path: str
    pairs: Counter = field(default_factory=Counter)  # (bad, good) as JSON texts -> how many times
    runs: set[str] = field(default_factory=set)
    keys: Counter = field(default_factory=Counter)  # the read's argument names
    user_tools: Counter = field(default_factory=Counter)  # user calls made in between
    asked: list[str] = field(default_factory=list)  # what the agent said before the user acted
    reports: Counter = field(default_factory=Counter)  # what the user said once done
    symptoms: Counter = field(default_factory=Counter)  # the user's last words before the first read

    def pair(self) -> tuple[Any, Any] | None:
        """The (bad, good) change most runs show, when it holds `MIN_SHARE` of the changes and `MIN_RUNS` runs."""
        if not self.pairs or len(self.runs) < MIN_RUNS:
            return None
        top, n = self.pairs.most_common(1)[0]
        if n < MIN_RUNS or n < MIN_SHARE * sum(self.pairs.values()):
            return None
        bad, good = json.loads(top)
        return (bad, good) if bad != good and bad not in (None, "") else None


def _record(raw: str | None) -> dict[str, Any] | None:
    value = read_result(raw) if raw else None
    return value if isinstance(value, dict) else None


def user_changes(runs: list[Any], kinds: dict[str, str]) -> dict[tuple[str, str], UserChange]:
    """Per (agent read, dotted field): the changes between two successful reads of the same record (same arguments)
    with no agent call but reads in between and the user acting there (a user message or a successful user call).
    The agent cannot have made them; the user did, on its side."""
    out: dict[tuple[str, str], UserChange] = {}
    for run in runs:
        msgs = run.messages
        calls = run.agent_calls
        reads = [c for c in calls if kinds.get(c.name) == "read" and not c.error and _record(c.result) is not None]
        acts = [c.message_index for c in calls if kinds.get(c.name) != "read" and not c.error]
        firsts: set[tuple[str, str]] = set()
        for i, r1 in enumerate(reads):
            r2 = next((c for c in reads[i + 1:] if c.name == r1.name and c.arguments == r1.arguments), None)
            if r2 is None or any(r1.message_index < a < r2.message_index for a in acts):
                continue
            span = range(r1.message_index + 1, r2.message_index)
            said = [j for j in span if msgs[j].get("role") == "user" and isinstance(msgs[j].get("content"), str)]
            done = [c for c in run.user_calls if r1.message_index < c.message_index < r2.message_index and not c.error]
            if not said and not done:
                continue
            first = min([*said, *(c.message_index for c in done)])
            before, after = flatten(_record(r1.result)), flatten(_record(r2.result))
            for path in sorted(before.keys() & after.keys()):
                if before[path] == after[path] or path in r1.arguments:
                    continue
                ch = out.setdefault((r1.name, path), UserChange(r1.name, path))
                ch.pairs[json.dumps([before[path], after[path]])] += 1
                ch.runs.add(run.run_id)
                ch.keys.update(k for k in r1.arguments)
                ch.user_tools.update({c.name for c in done})
                ch.asked += [msgs[j]["content"] for j in range(r1.message_index + 1, first)
                             if msgs[j].get("role") == "assistant" and isinstance(msgs[j].get("content"), str)]
                ch.reports.update(msgs[j]["content"].strip() for j in said[:1])
                if (r1.name, path) not in firsts:
                    firsts.add((r1.name, path))
                    prior = [m.get("content") for m in msgs[: r1.message_index] if m.get("role") == "user"]
                    if prior and isinstance(prior[-1], str):
                        ch.symptoms[prior[-1].strip()] += 1
    return out


def _field_words(path: str) -> list[str]:
    """The words of a dotted (snake or camel) field: `appNotifications` -> ["app", "notifications"]."""
    last = path.split(".")[-1]
    return [w for w in re.split(r"[^a-z0-9]+", re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", last).lower()) if w]


def spoken_action(change: UserChange, tool: str | None) -> dict[str, Any]:
    """How the agents that got the user to act named the action, learned from what they said before it: the
    sentences naming the field (or the user's tool), their asking verb ("please open ..."), the field's words they
    used, and the clause they asked for; with the user's most common report. Empty when no sentence names it."""
    # the field's words name the object; the tool's only where the field's are never said (a noun-first tool name
    # would lend its verb as an object: app_notifications_allow)
    found = _spoken(change, [w for w in _field_words(change.path) if w not in _GENERIC and len(w) > 2])
    if not found and tool:
        found = _spoken(change, [w for w in tool_words(tool)[1:] if w not in _GENERIC and len(w) > 2])
    return found


def _spoken(change: UserChange, words: list[str]) -> dict[str, Any]:
    verbs: Counter = Counter()
    objects: Counter = Counter()
    clauses: Counter = Counter()
    for text in change.asked:
        for said in SENTENCE_END.split(text):
            sentence = said.lower()
            named = [w for w in words if re.search(rf"\b{re.escape(w)}", sentence)]
            m = ASKED_VERB.search(sentence)
            if not named or m is None or len(sentence) != len(said):
                continue
            # the clause as said (names keep their case), up to where the agent asks to hear back
            clause = re.split(r",? and (?:tell|let) me\b", said[m.start(1):])[0]
            clauses[clause.rstrip(" .!,")] += 1
            # its verbs: the one asked for and each joined to it ("open your app and scan the code")
            for verb in [m.group(1), *re.findall(r"\b(?:and|then)\s+([a-z]+)", clause.lower())]:
                if verb not in _NOT_VERBS:
                    verbs[verb] += 1
            objects.update(named)
    if not verbs:
        return {}
    said_verbs = [v for v, _ in verbs.most_common(4)]
    # and how else people say them ("allow" -> "enable", "turn on"): an agent need not echo the runs' words
    alike = [w for v in said_verbs for head, same in USER_VERBS.items() if v == head or v in same for w in (head, *same)]
    out: dict[str, Any] = {"verbs": list(dict.fromkeys([*said_verbs, *alike])),
                           "objects": [o for o, _ in objects.most_common()],
                           "say": clauses.most_common(1)[0][0][:200]}
    if change.reports:
        out["report"] = change.reports.most_common(1)[0][0][:300]
    return out


_NOT_VERBS = {"the", "a", "an", "your", "my", "it", "then", "tell", "let", "i", "we", "you", "that", "this", "also"}
_GENERIC = {"status", "state", "setting", "settings", "enabled", "the", "app", "mode", "is", "has", "flag"}


def _thing_read(read: str) -> str:
    """What a read tool shows, in words ("get_app_status" -> "app"), or "" when its name says nothing more."""
    return " ".join(w for w in tool_words(read)[1:] if w not in ("status", "details", "info", "by", "id", "of"))


def _label_change(run: Any, args: dict[str, Any]) -> Label:
    """NA unless an agent read of `args.read` showed `args.field` at its bad value; then PRESENT when the user did
    the fix afterwards (a later same read shows it good, or the user called its tool), LACKING when it never
    happened (the agent did something else, claimed it was done, or left it)."""
    read, path, bad, good = args["read"], args["field"], args["bad"], args["good"]
    reads = [c for c in run.agent_calls if c.name == read and not c.error]
    seen = next((c for c in reads if flatten(_record(c.result)).get(path) == bad), None)
    if seen is None:
        return "NA"
    later = [c for c in reads if c.message_index > seen.message_index and c.arguments == seen.arguments]
    if any(flatten(_record(c.result)).get(path) == good for c in later):
        return "PRESENT"
    tools = set(args.get("tools") or [])
    if any(c.name in tools and not c.error and c.message_index > seen.message_index for c in run.user_calls):
        return "PRESENT"
    return "LACKING"


def _instead(ctx: ProposalContext, read: str, path: str, bad: Any, key: str) -> str | None:
    """The agent write the runs made after `read` showed `path` at `bad` (what the failing agents did instead of
    getting the user to act, most common first), else one taking the read's `key`: the env offers it as the
    temptation a careful agent resists."""
    kinds = {n: t.kind for n, t in ctx.profile.tools.items()}
    made: Counter = Counter()
    for run in ctx.runs:
        seen = next((c for c in run.agent_calls if c.name == read and not c.error
                     and flatten(_record(c.result)).get(path) == bad), None)
        if seen is not None:
            made.update(c.name for c in run.agent_calls
                        if c.message_index > seen.message_index and kinds.get(c.name) == "write")
    writes = [w for w, _ in made.most_common()] + [w for w in ctx.writes if key in ctx.args(w)]
    return next((w for w in writes if key in ctx.args(w)), None)


def _symptom(change: UserChange, noun: str) -> str:
    """The user's complaint as the runs' users said it before the first read: their most common sentence of five
    words or more that holds no number (no id of theirs), else a plain one."""
    sentences: Counter = Counter()
    for text, n in change.symptoms.items():
        for s in SENTENCE_END.split(text):
            if len(s.split()) >= 5 and not re.search(r"\d", s):
                sentences[s.strip()] += n
    return sentences.most_common(1)[0][0][:300] if sentences else \
        f"Something on my {noun} stopped working. Can you help me fix it?"


def _acted(user_tool: str) -> Check:
    return Check(clauses=[CallMade(id="user_acted", call=CallRef(tool=user_tool))])


class UserSideActionDetector(Detector):
    task = "user_side_action"
    teaches = ("user_action_missing",)

    def label(self, view, check: Check, args: dict[str, Any]) -> Label:
        """NA without ground-truth user actions of the candidate's tools; LACKING when one never happened; PRESENT
        when each happened after an agent message telling the user to do it; NA when the user did them unprompted.
        For one user-side fix (`args.field`), see `_label_change`."""
        tools = set(args.get("tools") or [])
        run = view.run
        if "field" in args:
            return _label_change(run, args)
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
        """A pair of user-side tools the runs show changing fields of one record, one candidate per pair: an agent
        read's record (the user acted between two reads), or the device as the user's own check tool prints it
        (`params.device`: tau2 telecom, where the agent never reads the device). Where the runs carry expected user
        actions, only tools they expect pair up, the most expected first."""
        user_tools = getattr(ctx.profile, "user_tools", {})
        expected = Counter(g.name for r in ctx.runs for g in r.ground_truth or [] if g.requestor == "user")
        order = [n for n in user_tools if not expected or expected[n]]
        order.sort(key=lambda n: -expected[n])  # stable: the profile's order (most called first) breaks ties
        out, paired = [], set()
        for u in order:
            tool = user_tools[u]
            for read in sorted(tool.changes, key=lambda r: (-len(tool.changes[r]), r)):
                alt = next((v for v in order if v != u and read in user_tools[v].changes
                            and frozenset((u, v)) not in paired
                            and set(user_tools[v].changes[read]) != set(tool.changes[read])), None)
                device = read in user_tools and read not in ctx.profile.tools
                rargs = ctx.args(read)
                if alt is None or not (rargs or device):
                    continue
                settings = settings_from_profile(ctx.profile, read, [u, alt])
                texts = _texts(ctx.runs, read, [s["field"] for s in settings.values()]) if device else []
                if len(settings) < 2 or (device and not texts):
                    continue
                paired.add(frozenset((u, alt)))
                healthy = {} if not device else {
                    s["field"]: s["good"] for v in order if v not in (u, alt) and read in user_tools[v].changes
                    for s in settings_from_profile(ctx.profile, read, [v]).values()
                    if s["field"] not in {x["field"] for x in settings.values()}}
                out.append(_proposal(read, rargs, u, alt, settings, texts, healthy))
                break
        return out + self._propose_single(ctx, {p.roles["read"] for p in out})

    def _propose_single(self, ctx: ProposalContext, taken: set[str]) -> list[Proposal]:
        """One user-side fix per agent read no pair took: a field of its record that runs show changing, the same
        way, while only the user acted (`user_changes`): a call of the user's own tool (tau2, OpenAI JSONL) or only
        its words (tau-bench, ToolSandbox), where the action is named as the agents who got it done named it."""
        kinds = {n: t.kind for n, t in ctx.profile.tools.items()}
        changes = sorted(user_changes(ctx.runs, kinds).values(), key=lambda c: (-len(c.runs), c.read, c.path))
        out: list[Proposal] = []
        for ch in changes:
            pair = ch.pair()
            if ch.read in taken or pair is None or not ch.keys:
                continue
            key = ch.keys.most_common(1)[0][0]
            called = ch.user_tools.most_common(1)
            tool = called[0][0] if called and called[0][1] * 2 >= sum(ch.pairs.values()) else None
            spoken = spoken_action(ch, tool)
            if tool is None and not spoken:
                continue  # nothing names what the user did: no words for the scripted user to act on
            write = _instead(ctx, ch.read, ch.path, pair[0], key)
            if write is None:
                continue
            setting: dict[str, Any] = {"field": ch.path, "bad": pair[0], "good": pair[1]}
            if spoken:  # as the agents said it (a tool's name may not: app_notifications_allow)
                setting.update(verbs=spoken["verbs"], objects=spoken["objects"], say=spoken["say"])
                if "report" in spoken:
                    setting["report"] = spoken["report"]
            name = tool or slug(f"{spoken['verbs'][0]}_{'_'.join(_field_words(ch.path))}")
            noun = _thing_read(ch.read) or key_noun(key)
            taken.add(ch.read)
            out.append(Proposal(
                name=f"have_user_{slug(name)}",
                description=f"Read {ch.read}; when it shows {ch.path} {pair[0]}, which only the user can change, tell "
                f"the user to do it on their side, naming it clearly, wait until they have, then read again to check "
                f"before saying it works; do not do something else yourself instead (such as {write}).",
                roles={"read": ch.read, "key": key, "user_tool": name},
                label_check=_acted(name),
                label_args={"tools": [name], "read": ch.read, "field": ch.path, "bad": pair[0], "good": pair[1]},
                params={"settings": {name: setting}, "phrase": f"get my {noun} working again",
                        "symptom": _symptom(ch, noun)},
                extra_tools=[write],
            ))
        return out

    def infer_params(self, roles: dict[str, str], index: ResultIndex, policy: str = "", rules: Any = None
                     ) -> tuple[dict[str, Any], str]:
        """Nothing: the settings are what the profile saw each user tool change (`settings_from_profile`), which
        `propose` puts in its proposals; the agent-side index holds no user calls."""
        return {}, ""

    def target_tools(self, roles: dict[str, str]) -> list[str]:
        return [t for t in (roles.get("user_tool"), roles.get("alt_tool")) if t]


register_detector(UserSideActionDetector())
