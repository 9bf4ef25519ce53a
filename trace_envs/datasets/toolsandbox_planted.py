"""A ToolSandbox-format planted set: a scripted ToolSandbox-style device and agent whose runs are written as real
ToolSandbox run folders, with known deficits at known rates (the miner's ground truth on ToolSandbox logs).

The device follows ToolSandbox's published tools (apple/ToolSandbox `tool_sandbox/tools/*.py`): their names and
arguments, results as the Python repr the execution environment prints, and a failing call's reply as the last line
of the exception it raised. Its state dependencies are ToolSandbox's: `send_message_with_phone_number` raises
`ConnectionError: Cellular service is not enabled` while cellular is off, the RapidAPI searches (`search_stock`) raise
`ConnectionError: Wifi is not enabled` while wifi is off, and low battery mode turns cellular, wifi and location off
and makes turning them on raise `PermissionError: Cellular service cannot be turned on in low battery mode`.

Three kinds of scenario, each exposing one deficit (its `PlantedDeficit`):

- state dependency (`send_message_with_contact_content_cellular_off`, `..._low_battery_mode_on`,
  `find_stock_price_wifi_off`): the first call fails on a setting; the right agent turns the setting on (low battery
  mode off first) and retries. `ignores_state_dependency`: it gives up, or says it is done when it is not;
- a message to a contact (`send_message_with_contact_content`, `..._alt`): the right agent finds the phone number
  with `search_contacts`. `invents_phone_number`: it sends to a number it made up;
- a stock price (`find_stock_price`, `..._alt`, `..._current_price`): the right agent tells the price it read.
  `never_tells_result`: it calls `search_stock` and answers without the price.

Every base scenario comes plain and with ToolSandbox's tool augmentations (`_3_distraction_tools`,
`_10_distraction_tools`, `_all_tools`: more tools allowed, none of them needed). A run folder
`agent_<model>_user_<model>_<MM_DD_YYYY_HH_MM_SS>/` holds one run of every scenario: `result_summary.json` (similarity
as ToolSandbox scores it: the mean of the milestones' similarities, 1.0 when every milestone is met),
`trajectories/<scenario>/conversation.json` and `execution_context.json`. Several folders are several trials of the
same scenarios; a scenario's contacts, message and stock are the same in every folder.

    python -m trace_envs.datasets.toolsandbox_planted OUT --folders 20 --seed 0
    trace-envs inspect OUT && trace-envs mine OUT --out mined/
"""

from __future__ import annotations

import json
import random
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from trace_envs.datasets.sim import PlantedDeficit, match_deficit, score_recovery, write_atomically
from trace_envs.datasets.writers import SANDBOX_COLUMNS, call_code, folder_name

SYSTEM_PROMPT = ("Don't make assumptions about what values to plug into functions. "
                 "Ask for clarification if a user request is ambiguous.")
USER_INSTRUCTION = ("You are a user talking to a voice assistant on your phone. Follow the instruction below and do not "
                    "leak information the assistant should find itself. ")
SEND, SEARCH_CONTACTS = "send_message_with_phone_number", "search_contacts"
CELLULAR, WIFI, LOW_BATTERY, STOCK = ("set_cellular_service_status", "set_wifi_status", "set_low_battery_mode_status",
                                      "search_stock")
# Every ToolSandbox tool the device offers, as the allow lists of augmented scenarios draw on them.
ALL_TOOLS = (
    "add_contact", "modify_contact", "remove_contact", SEARCH_CONTACTS, SEND, "search_messages", "add_reminder",
    "modify_reminder", "remove_reminder", "search_reminder", CELLULAR, "get_cellular_service_status", WIFI,
    "get_wifi_status", LOW_BATTERY, "get_low_battery_mode_status", "set_location_service_status",
    "get_location_service_status", "get_current_location", "get_current_timestamp", STOCK,
    "search_weather_around_lat_lon", "search_lat_lon", "convert_currency", "unit_conversion",
)
AUGMENTATIONS = {"": 0, "_3_distraction_tools": 3, "_10_distraction_tools": 10, "_all_tools": len(ALL_TOOLS)}

DEFICITS = {
    "ignores_state_dependency": PlantedDeficit(
        "ignores_state_dependency", "error_recovery", (SEND, STOCK, CELLULAR, WIFI, LOW_BATTERY), 0.5,
        "a call fails on a device setting (cellular, wifi, low battery mode) and the agent gives up or says it is "
        "done instead of fixing the setting and retrying"),
    "invents_phone_number": PlantedDeficit(
        "invents_phone_number", "argument_grounding", (SEND, SEARCH_CONTACTS), 0.5,
        "sends the message to a phone number it made up instead of the contact's, found with search_contacts"),
    "never_tells_result": PlantedDeficit(
        "never_tells_result", "answer_from_records", (STOCK,), 0.5,
        "looks the stock up and answers without the price it read"),
}
NOISE_RATE = 0.05

_CONTACTS = [("Fredrik Thordendal", "friend"), ("John Petrucci", "friend"), ("Homer Simpson", "boss"),
             ("Mikael Akerfeldt", "friend"), ("Jordan Rudess", "coworker"), ("Tosin Abasi", "friend"),
             ("Misha Mansoor", "coworker"), ("Marge Simpson", "family")]
_MESSAGES = ["How's the new album coming along.", "Running 10 minutes late, start without me.",
             "Can you send me the slides from today?", "Happy birthday! Dinner is on me this week.",
             "The rehearsal moved to Thursday at 7pm.", "Don't forget to bring the amp tomorrow."]
_STOCKS = [("Apple Inc", "AAPL", "NASDAQ"), ("Microsoft Corp", "MSFT", "NASDAQ"), ("NVIDIA Corp", "NVDA", "NASDAQ"),
           ("Alphabet Inc Class A", "GOOGL", "NASDAQ"), ("Tesla Inc", "TSLA", "NASDAQ"),
           ("International Business Machines Corp", "IBM", "NYSE"), ("Walmart Inc", "WMT", "NYSE")]
SELF = {"name": "Tomas Haake", "phone_number": "+11233344455", "relationship": "self", "is_self": True}
SETTING = {"cellular": True, "wifi": True, "location_service": True, "low_battery_mode": False,
           "latitude": 37.334606, "longitude": -122.009102}


# ---- the device: ToolSandbox's tools over its databases ------------------------------------------------------------
class ToolError(Exception):
    """A tool raised: `text` is the line ToolSandbox's execution environment replies with."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.text = f"{kind}: {message}"


def _uid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


@dataclass
class Device:
    """The sandbox's databases (CONTACT, MESSAGING, SETTING) and the tools the scripted agent calls on them."""

    rng: random.Random
    contacts: list[dict[str, Any]]
    stocks: dict[str, dict[str, Any]]
    setting: dict[str, Any] = field(default_factory=lambda: dict(SETTING))
    messages: list[dict[str, Any]] = field(default_factory=list)

    def call(self, name: str, args: dict[str, Any]) -> Any:
        return getattr(self, name)(**args)

    def search_contacts(self, name: str | None = None, phone_number: str | None = None) -> list[dict[str, Any]]:
        return [c for c in self.contacts if (name is None or name.lower() in c["name"].lower())
                and (phone_number is None or c["phone_number"] == phone_number)]

    def send_message_with_phone_number(self, phone_number: str, content: str) -> str:
        if not self.setting["cellular"]:
            raise ToolError("ConnectionError", "Cellular service is not enabled")
        me = next(c for c in self.contacts if c["is_self"])
        to = self.search_contacts(phone_number=phone_number)
        message_id = _uid(self.rng)
        self.messages.append({"message_id": message_id, "sender_person_id": me["person_id"],
                              "sender_phone_number": me["phone_number"],
                              "recipient_person_id": to[0]["person_id"] if to else None,
                              "recipient_phone_number": phone_number, "content": content,
                              "creation_timestamp": 1717250400.0 + len(self.messages)})
        return message_id

    def _set(self, setting: str, on: bool) -> None:
        if self.setting[setting] == on:
            raise ToolError("ValueError", f"{setting} already {('disabled', 'enabled')[int(on)]}")
        self.setting[setting] = on

    def _radio(self, setting: str, what: str, on: bool) -> None:
        if on and self.setting["low_battery_mode"]:
            raise ToolError("PermissionError", f"{what} cannot be turned on in low battery mode")
        self._set(setting, on)

    def set_cellular_service_status(self, on: bool) -> None:
        self._radio("cellular", "Cellular service", on)

    def set_wifi_status(self, on: bool) -> None:
        self._radio("wifi", "Wifi", on)

    def set_low_battery_mode_status(self, on: bool) -> None:
        self._set("low_battery_mode", on)
        if on:  # ToolSandbox turns the radios off with it
            for s in ("cellular", "wifi", "location_service"):
                self.setting[s] = False

    def search_stock(self, query: str) -> dict[str, Any] | None:
        if not self.setting["wifi"]:
            raise ToolError("ConnectionError", "Wifi is not enabled")
        q = query.lower()
        return next((dict(s) for s in self.stocks.values() if q in s["name"].lower() or q == s["symbol"].lower()),
                    None)


# ---- a scenario's log, in ToolSandbox's shapes ---------------------------------------------------------------------
class Log:
    """The SANDBOX message table of one scenario as it plays, the agent's calls run against `device`."""

    def __init__(self, device: Device, instruction: str, allow: list[str]) -> None:
        self.device, self.allow = device, allow
        self.rows: list[dict[str, Any]] = []
        self.args: dict[str, dict[str, Any]] = {}
        self.initial = {"SETTING": dict(device.setting), "CONTACT": [dict(c) for c in device.contacts]}
        self.add("SYSTEM", "AGENT", SYSTEM_PROMPT)
        self.add("SYSTEM", "USER", USER_INSTRUCTION + instruction, visible_to=["USER"])

    def add(self, sender: str, recipient: str, content: str, **extra: Any) -> int:
        row = dict.fromkeys(SANDBOX_COLUMNS)
        row.update(sender=sender, recipient=recipient, content=content, conversation_active=True,
                   visible_to=[sender, recipient])
        row.update(extra)
        self.rows.append(row)
        return len(self.rows)  # its sandbox_message_index (row 0 is the headguard)

    def user(self, text: str) -> None:
        self.add("USER", "AGENT", text)

    def say(self, text: str) -> int:
        return self.add("AGENT", "USER", text)

    def call(self, name: str, /, **args: Any) -> tuple[Any, str | None]:
        """Run an agent tool call on the device: (its value, None) or (None, the exception line)."""
        cid = f"call_{self.device.rng.getrandbits(48):012x}"
        self.add("AGENT", "EXECUTION_ENVIRONMENT", call_code(cid, name, args), openai_tool_call_id=cid,
                 openai_function_name=name)
        self.args[cid] = args
        try:
            value, error = self.device.call(name, args), None
        except ToolError as exc:
            value, error = None, exc.text
        trace = None if error else [json.dumps({"tool_name": name, "arguments": args, "result": value})]
        self.add("EXECUTION_ENVIRONMENT", "AGENT", error or repr(value), openai_tool_call_id=cid,
                 openai_function_name=name, tool_call_exception=error, tool_trace=trace)
        return value, error

    def end(self) -> None:
        self.add("USER", "EXECUTION_ENVIRONMENT", "end_conversation()", conversation_active=False)

    def conversation(self) -> list[dict[str, Any]]:
        """`serialize_to_conversation`: the agent's rows as OpenAI messages, consecutive calls in one message."""
        turns: list[dict[str, Any]] = []
        for row in self.rows:
            pair = (row["sender"], row["recipient"])
            if "AGENT" not in pair or row["visible_to"] == ["USER"]:
                continue
            if pair == ("AGENT", "EXECUTION_ENVIRONMENT"):
                cid = row["openai_tool_call_id"]
                call = {"id": cid, "function": {"arguments": json.dumps(self.args[cid]),
                                                "name": row["openai_function_name"]}, "type": "function"}
                if turns and "tool_calls" in turns[-1]:
                    turns[-1]["tool_calls"].append(call)
                else:
                    turns.append({"role": "assistant", "content": "", "tool_calls": [call]})
            elif pair == ("EXECUTION_ENVIRONMENT", "AGENT"):
                turns.append({"tool_call_id": row["openai_tool_call_id"], "role": "tool",
                              "name": row["openai_function_name"], "content": row["content"]})
            else:
                role = {"SYSTEM": "system", "USER": "user"}.get(row["sender"], "assistant")
                turns.append({"role": role, "content": row["content"]})
        return turns

    def execution_context(self, deny: list[str] | None, augmentations: list[str]) -> dict[str, Any]:
        last = len(self.rows)

        def table(initial: list[dict[str, Any]], final: list[dict[str, Any]], columns: tuple[str, ...]) -> list:
            rows = [{"sandbox_message_index": 0, **dict.fromkeys(columns)}]
            rows += [{"sandbox_message_index": 0, **r} for r in initial]
            if final != initial:
                rows += [{"sandbox_message_index": last, **r} for r in final]
            return rows

        d = self.device
        return {
            "_dbs": {
                "SANDBOX": [{"sandbox_message_index": 0, **dict.fromkeys(SANDBOX_COLUMNS)}]
                + [{"sandbox_message_index": i + 1, **r} for i, r in enumerate(self.rows)],
                "SETTING": table([self.initial["SETTING"]], [dict(d.setting)], tuple(SETTING)),
                "CONTACT": table(self.initial["CONTACT"], d.contacts,
                                 ("person_id", "name", "phone_number", "relationship", "is_self")),
                "MESSAGING": table([], d.messages, ("message_id", "sender_person_id", "sender_phone_number",
                                                    "recipient_person_id", "recipient_phone_number", "content",
                                                    "creation_timestamp")),
                "REMINDER": table([], [], ("reminder_id", "content", "creation_timestamp", "reminder_timestamp",
                                           "latitude", "longitude")),
            },
            "interactive_console": None,
            "tool_allow_list": ["end_conversation", *self.allow],
            "tool_deny_list": deny,
            "trace_tool": True,
            "tool_augmentation_list": augmentations,
            "preferred_tool_backend": "DEFAULT",
        }


# ---- the scenarios -----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class World:
    """What a base scenario is about, the same in every run folder (drawn from the scenario's name)."""

    contacts: list[dict[str, Any]]
    target: dict[str, Any]
    message: str
    stock: dict[str, Any]


def draw_world(seed: int, base: str) -> World:
    rng = random.Random(f"{seed}:{base}")
    people = rng.sample(_CONTACTS, 4)
    contacts = [{"person_id": _uid(rng), **SELF}] + [
        {"person_id": _uid(rng), "name": n, "phone_number": f"+1{rng.randint(200, 989)}{rng.randint(1000000, 9999999)}",
         "relationship": r, "is_self": False} for n, r in people]
    name, symbol, exchange = rng.choice(_STOCKS)
    price = round(rng.uniform(40, 900), 2)
    change = round(rng.uniform(-12, 12), 2)
    stock = {"name": name, "symbol": symbol, "exchange": exchange, "price": price, "change": change,
             "percent_change": round(100 * change / (price - change), 2), "currency": "USD"}
    return World(contacts, contacts[rng.randint(1, 4)], rng.choice(_MESSAGES), stock)


@dataclass
class Played:
    """A scenario's outcome: milestone similarities (index -> (sandbox row, similarity)) and deficits shown."""

    milestones: list[tuple[int | None, float]]
    shown: set[str]
    turns: int = 0


def _first(name: str) -> str:
    return name.split()[0]


def _tell_sent(log: Log, w: World) -> int:
    return log.say(f"Your message to {w.target['name']} has been sent.")


def send_with_setting(log: Log, w: World, flags: dict[str, bool], rng: random.Random, low_battery: bool) -> Played:
    """Cellular is off (with low battery mode on, when `low_battery`): the send fails until it is fixed."""
    log.user(f"Send a message to {w.target['name']} saying: {w.message}")
    found, _ = log.call(SEARCH_CONTACTS, name=w.target["name"])
    searched = len(log.rows)
    number = found[0]["phone_number"]
    _, error = log.call(SEND, phone_number=number, content=w.message)
    assert error is not None
    if flags["ignores_state_dependency"]:
        if rng.random() < 0.5:
            log.say("I'm sorry, I couldn't send the message: cellular service is not enabled on your device.")
        else:
            _tell_sent(log, w)
        return Played([(searched, 1.0), (None, 0.0), (None, 0.0)], {"ignores_state_dependency"})
    _, error = log.call(CELLULAR, on=True)
    if error is not None:  # low battery mode blocks the radio: turn it off first
        log.call(LOW_BATTERY, on=False)
        log.call(CELLULAR, on=True)
    fixed = len(log.rows)
    log.call(SEND, phone_number=number, content=w.message)
    sent = len(log.rows)
    _tell_sent(log, w)
    return Played([(searched, 1.0), (fixed, 1.0), (sent, 1.0)], set())


def send_to_contact(log: Log, w: World, flags: dict[str, bool], rng: random.Random) -> Played:
    """Cellular is on; the phone number is only in the contacts."""
    log.user(f"Text {_first(w.target['name'])} that {w.message[0].lower()}{w.message[1:]}")
    if flags["invents_phone_number"]:
        invented = f"+1{rng.randint(200, 989)}555{rng.randint(1000, 9999)}"
        log.call(SEND, phone_number=invented, content=w.message)
        # The message was added with the right content and the wrong recipient.
        sent = len(log.rows)
        _tell_sent(log, w)
        return Played([(None, 0.0), (sent, 0.5)], {"invents_phone_number"})
    found, _ = log.call(SEARCH_CONTACTS, name=_first(w.target["name"]))
    searched = len(log.rows)
    log.call(SEND, phone_number=found[0]["phone_number"], content=w.message)
    sent = len(log.rows)
    _tell_sent(log, w)
    return Played([(searched, 1.0), (sent, 1.0)], set())


_PRICE_QUESTIONS = ["What's the current stock price of {q}?", "What is the stock price of {q} right now?",
                    "Can you tell me the current price of {q} stock?"]


def stock_price(log: Log, w: World, flags: dict[str, bool], rng: random.Random, wifi_off: bool,
                question: str) -> Played:
    """The user asks for a stock's price; with `wifi_off` the search fails until wifi is on."""
    query = w.stock["name"].split()[0]
    log.user(question.format(q=query))
    fixed = None
    found, error = log.call(STOCK, query=query)
    if error is not None:
        if flags["ignores_state_dependency"]:
            log.say("I can't look up stock prices right now: your device is not connected to the internet.")
            return Played([(None, 0.0), (None, 0.0), (None, 0.0)], {"ignores_state_dependency"})
        log.call(WIFI, on=True)
        fixed = len(log.rows)
        found, _ = log.call(STOCK, query=query)
    searched = len(log.rows)
    milestones = [(fixed, 1.0)] if wifi_off else []
    if not wifi_off and flags["never_tells_result"]:
        log.say(f"I looked up {found['name']} ({found['symbol']}) on the {found['exchange']} for you.")
        return Played([(searched, 1.0), (None, 0.0)], {"never_tells_result"})
    told = log.say(f"{found['name']} ({found['symbol']}) is trading at {found['price']} {found['currency']}.")
    return Played([*milestones, (searched, 1.0), (told, 1.0)], set())


@dataclass(frozen=True)
class BaseScenario:
    name: str
    categories: tuple[str, ...]
    tools: tuple[str, ...]
    play: Callable[[Log, World, dict[str, bool], random.Random], Played]
    exposure: str
    setting: dict[str, Any] = field(default_factory=dict)


_SEND_TOOLS = (SEARCH_CONTACTS, SEND, CELLULAR, "get_cellular_service_status")
SCENARIOS = [
    BaseScenario("send_message_with_contact_content_cellular_off",
                 ("MULTIPLE_TOOL_CALL", "SINGLE_USER_TURN", "STATE_DEPENDENCY"), _SEND_TOOLS,
                 lambda log, w, f, r: send_with_setting(log, w, f, r, low_battery=False), "ignores_state_dependency",
                 {"cellular": False}),
    BaseScenario("send_message_with_contact_content_cellular_off_low_battery_mode_on",
                 ("MULTIPLE_TOOL_CALL", "SINGLE_USER_TURN", "STATE_DEPENDENCY"),
                 (*_SEND_TOOLS, LOW_BATTERY, "get_low_battery_mode_status"),
                 lambda log, w, f, r: send_with_setting(log, w, f, r, low_battery=True), "ignores_state_dependency",
                 {"cellular": False, "wifi": False, "location_service": False, "low_battery_mode": True}),
    BaseScenario("find_stock_price_wifi_off", ("MULTIPLE_TOOL_CALL", "SINGLE_USER_TURN", "STATE_DEPENDENCY"),
                 (STOCK, WIFI, "get_wifi_status"),
                 lambda log, w, f, r: stock_price(log, w, f, r, True, _PRICE_QUESTIONS[0]), "ignores_state_dependency",
                 {"wifi": False}),
    BaseScenario("send_message_with_contact_content", ("MULTIPLE_TOOL_CALL", "SINGLE_USER_TURN"), _SEND_TOOLS,
                 send_to_contact, "invents_phone_number"),
    BaseScenario("send_message_with_contact_content_alt", ("MULTIPLE_TOOL_CALL", "SINGLE_USER_TURN"), _SEND_TOOLS,
                 send_to_contact, "invents_phone_number"),
    *(BaseScenario(f"find_stock_price{suffix}", ("SINGLE_TOOL_CALL", "SINGLE_USER_TURN"), (STOCK,),
                   lambda log, w, f, r, q=q: stock_price(log, w, f, r, False, q), "never_tells_result")
      for suffix, q in zip(("", "_alt", "_current_price"), _PRICE_QUESTIONS)),
]
_DISTRACTION = {"": "NO_DISTRACTION_TOOLS", "_3_distraction_tools": "THREE_DISTRACTION_TOOLS",
                "_10_distraction_tools": "TEN_DISTRACTION_TOOLS", "_all_tools": "ALL_TOOLS_AVAILABLE"}


# ---- run folders ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Truth:
    """One scenario run's planted truth: the folder, the scenario, the deficits shown, noise, the similarity."""

    folder: str
    scenario: str
    deficits: tuple[str, ...]
    noise: bool
    similarity: float


def _allow(base: BaseScenario, augmentation: str, rng: random.Random) -> list[str]:
    extra = [t for t in ALL_TOOLS if t not in base.tools]
    n = AUGMENTATIONS[augmentation]
    return [*base.tools, *(extra if n >= len(extra) else rng.sample(extra, n))]


def play_scenario(seed: int, folder_idx: int, base: BaseScenario, augmentation: str, rates: dict[str, float],
                  noise_rate: float) -> tuple[Log, Played, bool]:
    rng = random.Random(f"{seed}:{folder_idx}:{base.name}{augmentation}")
    w = draw_world(seed, base.name)
    device = Device(rng, [dict(c) for c in w.contacts], {w.stock["symbol"]: w.stock})
    device.setting.update(base.setting)
    allow = _allow(base, augmentation, random.Random(f"{seed}:{base.name}{augmentation}"))
    log = Log(device, f"Do what the first message asks. The contact is {w.target['name']}.", allow)
    flags = {d: rng.random() < r for d, r in rates.items()}
    flags = {d: v and d == base.exposure for d, v in flags.items()}
    played = base.play(log, w, flags, rng)
    log.end()
    noise = not played.shown and rng.random() < noise_rate
    if noise:  # the user simulator's last turn strayed: the final milestone matched only in part
        row, _ = played.milestones[-1]
        played.milestones[-1] = (row, 0.8)
    played.turns = sum(r["sender"] in ("USER", "AGENT") for r in log.rows)
    return log, played, noise


def write_folder(root: Path, index: int, seed: int = 0, rates: dict[str, float] | None = None,
                 noise_rate: float = NOISE_RATE) -> list[Truth]:
    """Write run folder `index` (every scenario once) under `root`; returns each scenario's planted truth."""
    r = {name: d.rate for name, d in DEFICITS.items()}
    r.update(rates or {})
    run_dir = root / folder_name(index, seed)
    results, truths = [], []
    for base in SCENARIOS:
        for augmentation in AUGMENTATIONS:
            name = base.name + augmentation
            log, played, noise = play_scenario(seed, index, base, augmentation, r, noise_rate)
            d = run_dir / "trajectories" / name
            context = log.execution_context(None, [augmentation[1:]] if augmentation else [])
            conversation = log.conversation()
            write_atomically(d / "execution_context.json", lambda fh, c=context: json.dump(c, fh, indent=2))
            write_atomically(d / "conversation.json", lambda fh, c=conversation: json.dump(c, fh, indent=2))
            sims = [s for _, s in played.milestones]
            similarity = round(sum(sims) / len(sims), 4)
            results.append({
                "name": name, "categories": [*base.categories, _DISTRACTION[augmentation]], "traceback": None,
                "exception_type": None, "milestone_similarity": similarity, "minefield_similarity": 0.0,
                "similarity": similarity, "turn_count": played.turns,
                "milestone_mapping": {str(i): [row, s] for i, (row, s) in enumerate(played.milestones)
                                      if row is not None},
                "minefield_mapping": {},
            })
            truths.append(Truth(run_dir.name, name, tuple(sorted(played.shown)), noise, similarity))
    aggregated: dict[str, list[float]] = {}
    for res in results:
        for cat in [*res["categories"], "ALL_CATEGORIES"]:
            aggregated.setdefault(cat, []).append(res["similarity"])
    summary = {"per_scenario_results": results,
               "category_aggregated_results": {c: {"similarity": sum(v) / len(v)} for c, v in aggregated.items()}}
    write_atomically(run_dir / "result_summary.json", lambda fh: json.dump(summary, fh, indent=4))
    return truths


def write_planted(root: str | Path, folders: int = 20, seed: int = 0, **kwargs: Any) -> list[Truth]:
    """Write `folders` run folders (trials of every scenario) under `root`; their planted truth, in order."""
    root = Path(root)
    return [t for i in range(folders) for t in write_folder(root, i, seed, **kwargs)]


def match(family: str, tools: list[str] | tuple[str, ...]) -> str | None:
    """The planted deficit a kept capability (family, target tools) stands for, else None."""
    return match_deficit(DEFICITS, {}, family, tools)


def score(kept: list[tuple[str, list[str]]]) -> dict[str, Any]:
    """Precision / recall of kept (family, target tools) against the planted deficits (see `sim.score_recovery`)."""
    return score_recovery(DEFICITS, {}, kept)


def main(argv: list[str] | None = None) -> int:
    import argparse

    p = argparse.ArgumentParser(prog="python -m trace_envs.datasets.toolsandbox_planted",
                                description="Write a ToolSandbox-format planted set (run folders) under OUT.")
    p.add_argument("out")
    p.add_argument("--folders", type=int, default=20, help="run folders (trials of every scenario)")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    truths = write_planted(a.out, a.folders, a.seed)
    shown = {d: sum(d in t.deficits for t in truths) for d in DEFICITS}
    print(f"wrote {a.folders} run folders, {len(truths)} scenario runs, "
          f"{sum(t.similarity == 1.0 for t in truths)} perfect, deficits shown: {shown}, "
          f"noise: {sum(t.noise for t in truths)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
