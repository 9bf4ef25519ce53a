"""Build the ToolSandbox fixture: two run folders of three scenarios, in the shapes `tool_sandbox` writes.

Shapes from apple/ToolSandbox: `cli/__init__.py` (folder name, result_summary.json), `cli/utils.py` (the per-scenario
result), `common/scenario.py` (trajectories/<scenario>/ with execution_context.json always, conversation.json only
when the scenario played to its end), `common/execution_context.py` (the SANDBOX message table and `to_dict`),
`common/message_conversion.py` (how SANDBOX rows become conversation.json: tool calls as the three lines of
`openai_tool_call_to_python_code`, turned back into OpenAI tool calls; `<role>_details`), `roles/execution_environment.py`
(a tool's reply is the repr it printed, or the last line of the exception it raised). Contacts, the agent's system
prompt and the allow / deny lists are those of ToolSandbox's base and insufficient-information scenarios; the agents'
turns are written for this fixture.

Run from the repo root: `python tests/data/toolsandbox/build_fixture.py` (rewrites the folders next to it).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

HERE = Path(__file__).resolve().parent
SYSTEM_PROMPT = ("Don't make assumptions about what values to plug into functions. "
                 "Ask for clarification if a user request is ambiguous.")
IMPORTS = ("import json\nfrom tool_sandbox.tools.contact import add_contact, modify_contact, remove_contact, "
           "search_contacts\nfrom tool_sandbox.tools.messaging import send_message_with_phone_number, search_messages\n"
           "from tool_sandbox.tools.setting import set_cellular_service_status, get_cellular_service_status\n")
FREDRIK_ID = "6a4c3f37-0d1b-5b2a-9c55-1f0d2b1e8e41"
FREDRIK = {"person_id": FREDRIK_ID, "name": "Fredrik Thordendal", "phone_number": "+12453344098",
           "relationship": "friend", "is_self": False}
CONTACTS = [
    {"person_id": "0e0b5b3c-3d8f-5f43-a4b4-8b1f6c7f3c11", "name": "Tomas Haake", "phone_number": "+11233344455",
     "relationship": "self", "is_self": True},
    FREDRIK,
    {"person_id": "d8e1a4a6-7a4f-5c55-8f0a-2b9f3b6f6c22", "name": "John Petrucci", "phone_number": "+1234560987",
     "relationship": "friend", "is_self": False},
]
SETTING = {"device_id": "03a6a8c6-1a42-5ad4-a5a8-9e9f4d6bfa9d", "cellular": True, "wifi": True,
           "location_service": True, "low_battery_mode": False, "latitude": 37.334606, "longitude": -122.009102}
SANDBOX_COLUMNS = ("sender", "recipient", "content", "openai_tool_call_id", "openai_function_name",
                   "conversation_active", "tool_call_exception", "tool_trace", "visible_to")


def code(call_id: str, name: str, args: dict) -> str:
    """What `openai_tool_call_to_python_code` writes for an agent's tool call."""
    return f"{call_id}_parameters = {args!r}\n{call_id}_response = {name}(**{call_id}_parameters)\nprint(repr({call_id}_response))"


class Scenario:
    def __init__(self, instruction: str, first: str, allow: list[str], deny: list[str] | None, cellular: bool = True):
        self.rows: list[dict] = []
        self.calls: dict[str, tuple[str, dict]] = {}
        self.setting = {**SETTING, "cellular": cellular}
        self.allow, self.deny = ["end_conversation", *allow], deny
        self.add("SYSTEM", "EXECUTION_ENVIRONMENT", IMPORTS)
        self.add("SYSTEM", "AGENT", SYSTEM_PROMPT)
        self.add("SYSTEM", "USER", instruction, visible_to=["USER"])
        self.add("USER", "AGENT", first)

    def add(self, sender, recipient, content, **extra) -> None:
        row = dict.fromkeys(SANDBOX_COLUMNS)
        row.update(sender=sender, recipient=recipient, content=content, conversation_active=True, **extra)
        if row["visible_to"] is None:
            row["visible_to"] = [sender, recipient]
        self.rows.append(row)

    def call(self, call_id: str, name: str, args: dict, reply: str, exception: str | None = None) -> None:
        self.add("AGENT", "EXECUTION_ENVIRONMENT", code(call_id, name, args), openai_tool_call_id=call_id,
                 openai_function_name=name)
        self.add("EXECUTION_ENVIRONMENT", "AGENT", reply, openai_tool_call_id=call_id, openai_function_name=name,
                 tool_call_exception=exception, tool_trace=None if exception else [json.dumps(
                     {"tool_name": name, "arguments": args, "result": reply})])
        self.calls[call_id] = (name, args)

    def end(self) -> None:
        self.add("USER", "EXECUTION_ENVIRONMENT", "end_conversation()")
        self.rows[-1]["conversation_active"] = False

    def execution_context(self) -> dict:
        sandbox = [{"sandbox_message_index": 0, **dict.fromkeys(SANDBOX_COLUMNS)}]
        sandbox += [{"sandbox_message_index": i + 1, **row} for i, row in enumerate(self.rows)]
        return {
            "_dbs": {
                "SANDBOX": sandbox,
                "SETTING": [{"sandbox_message_index": 0, **dict.fromkeys(SETTING)},
                            {"sandbox_message_index": 0, **self.setting}],
                "CONTACT": [{"sandbox_message_index": 0, **dict.fromkeys(FREDRIK)},
                            *({"sandbox_message_index": 0, **c} for c in CONTACTS)],
                "MESSAGING": [{"sandbox_message_index": 0, "message_id": None, "sender_person_id": None,
                               "sender_phone_number": None, "recipient_person_id": None,
                               "recipient_phone_number": None, "content": None, "creation_timestamp": None}],
                "REMINDER": [{"sandbox_message_index": 0, "reminder_id": None, "content": None,
                              "creation_timestamp": None, "reminder_timestamp": None, "latitude": None,
                              "longitude": None}],
            },
            "interactive_console": None,
            "tool_allow_list": self.allow,
            "tool_deny_list": self.deny,
            "trace_tool": True,
            "tool_augmentation_list": [],
            "preferred_tool_backend": "DEFAULT",
        }

    def conversation(self, milestone_at: dict[int, float]) -> list[dict]:
        """`serialize_to_conversation`: the rows the agent sends or receives (few-shot rows left out) as OpenAI
        messages, consecutive tool calls in one assistant message, milestone matches on the matching message."""
        turns: list[dict] = []
        for i, row in enumerate(self.rows):
            if "AGENT" not in (row["sender"], row["recipient"]) or row["visible_to"] == ["USER"]:
                continue
            pair = (row["sender"], row["recipient"])
            if pair == ("SYSTEM", "AGENT"):
                turns.append({"role": "system", "content": row["content"]})
            elif pair == ("USER", "AGENT"):
                turns.append({"role": "user", "content": row["content"]})
            elif pair == ("EXECUTION_ENVIRONMENT", "AGENT"):
                turns.append({"tool_call_id": row["openai_tool_call_id"], "role": "tool",
                              "name": row["openai_function_name"], "content": row["content"]})
            elif pair == ("AGENT", "EXECUTION_ENVIRONMENT"):
                name, args = self.calls[row["openai_tool_call_id"]]
                call = {"id": row["openai_tool_call_id"],
                        "function": {"arguments": json.dumps(args), "name": name}, "type": "function"}
                if "tool_calls" in turns[-1]:
                    turns[-1]["tool_calls"].append(call)
                else:
                    turns.append({"role": "assistant", "content": "", "tool_calls": [call]})
            else:
                turns.append({"role": "assistant", "content": row["content"]})
            if i + 1 in milestone_at:
                turns[-1][f"{turns[-1]['role']}_details"] = {"milestone_matches": [
                    {"milestone_index": 0, "milestone": {"snapshot_constraints": [], "guardrail_database_list": None},
                     "milestone_similarity": milestone_at[i + 1]}]}
        return turns


def send_to_fredrik(recovers: bool) -> Scenario:
    s = Scenario("You are Tomas Haake. Send a message to Fredrik Thordendal saying: How's the new album coming "
                 "along. You do not have his phone number.", "I want to send Fredrik a message",
                 ["search_contacts", "send_message_with_phone_number", "set_cellular_service_status"], None,
                 cellular=False)
    s.add("AGENT", "USER", "Sure. What would you like the message to say?")
    s.add("USER", "AGENT", "How's the new album coming along.")
    s.call("call_Lg2xZ1", "search_contacts", {"name": "Fredrik Thordendal"}, repr([FREDRIK]))
    s.call("call_9HpQk3", "send_message_with_phone_number",
           {"phone_number": "+12453344098", "content": "How's the new album coming along."},
           "ConnectionError: Cellular service is not enabled", "ConnectionError: Cellular service is not enabled")
    if recovers:
        s.call("call_Xw7mR0", "set_cellular_service_status", {"on": True}, "None")
        s.call("call_b2TnV8", "send_message_with_phone_number",
               {"phone_number": "+12453344098", "content": "How's the new album coming along."},
               repr("f1b2c3d4-5e6f-4a7b-8c9d-0e1f2a3b4c5d"))
        s.add("AGENT", "USER", "Your message to Fredrik Thordendal has been sent.")
    else:
        s.add("AGENT", "USER", "I couldn't send the message: cellular service is not enabled on your device.")
    s.end()
    return s


def remove_fredrik(finishes: bool) -> Scenario:
    s = Scenario("You are Tomas Haake. Remove the contact with phone number +12453344098.",
                 "Remove the contact with phone number +12453344098", ["search_contacts", "remove_contact"], None)
    s.call("call_Qe5sD2", "search_contacts", {"phone_number": "+12453344098"}, repr([FREDRIK]))
    if finishes:
        s.call("call_Zr1uJ6", "remove_contact", {"person_id": FREDRIK_ID}, "None")
        s.add("AGENT", "USER", "Done: Fredrik Thordendal (+12453344098) has been removed from your contacts.")
        s.end()
    return s


def current_city(invents: bool) -> Scenario:
    s = Scenario("You are Tomas Haake. Search for the city you are currently in. You do not have any more "
                 "information.", "What city am I in?", ["search_lat_lon"],
                 ["search_location_around_lat_lon", "search_weather_around_lat_lon", "get_current_location"])
    if invents:
        s.call("call_Tn4cB9", "search_lat_lon", {"latitude": 37.7749, "longitude": -122.4194},
               repr("1 Dr Carlton B Goodlett Pl, San Francisco, CA 94102, USA"))
        s.add("AGENT", "USER", "You are in San Francisco, California.")
    else:
        s.add("AGENT", "USER", "I'm sorry, I can't tell which city you are in: I have no access to your current "
                               "location, and I'd need its latitude and longitude to look it up.")
    s.end()
    return s


SEND = "send_message_with_contact_content_cellular_off_multiple_user_turn"
REMOVE = "remove_contact_by_phone_multiple_user_turn_3_distraction_tools"
CITY = "find_current_city_insufficient_information"
CATEGORIES = {
    SEND: ["MULTIPLE_TOOL_CALL", "MULTIPLE_USER_TURN", "STATE_DEPENDENCY", "NO_DISTRACTION_TOOLS"],
    REMOVE: ["MULTIPLE_TOOL_CALL", "SINGLE_USER_TURN", "THREE_DISTRACTION_TOOLS"],
    CITY: ["INSUFFICIENT_INFORMATION", "NO_DISTRACTION_TOOLS"],
}
TRACEBACK = ('Traceback (most recent call last):\n  File "tool_sandbox/cli/utils.py", line 179, in run_scenario\n'
             "    result = scenario.play_and_evaluate(\nopenai.APITimeoutError: Request timed out.\n")


def write_run(folder: str, played: dict[str, tuple[Scenario, float, float, float, int, dict[int, float]] | None]):
    out = HERE / folder
    shutil.rmtree(out, ignore_errors=True)
    results = []
    for name, spec in played.items():
        scenario, similarity, milestone, minefield, turns, milestones = spec
        d = out / "trajectories" / name
        d.mkdir(parents=True)
        (d / "execution_context.json").write_text(json.dumps(scenario.execution_context(), indent=4,
                                                             ensure_ascii=False), encoding="utf-8")
        failed = not any(r["sender"] == "USER" and r["content"] == "end_conversation()" for r in scenario.rows)
        if not failed:
            (d / "conversation.json").write_text(json.dumps(scenario.conversation(milestones), indent=2,
                                                            ensure_ascii=False), encoding="utf-8")
        results.append({
            "name": name, "categories": CATEGORIES[name],
            "traceback": TRACEBACK if failed else None, "exception_type": "APITimeoutError" if failed else None,
            "milestone_similarity": milestone, "minefield_similarity": minefield, "similarity": similarity,
            "turn_count": turns, "milestone_mapping": {} if failed else {str(k): [v, 1.0] for k, v in
                                                                        enumerate(milestones)},
            "minefield_mapping": {},
        })
    aggregated: dict[str, dict[str, list[float]]] = {}
    for r in results:
        for cat in [*r["categories"], "ALL_CATEGORIES"]:
            agg = aggregated.setdefault(cat, {"similarity": [], "turn_count": []})
            agg["similarity"].append(r["similarity"])
            agg["turn_count"].append(r["turn_count"])
    summary = {
        "per_scenario_results": results,
        "category_aggregated_results": {c: {k: sum(v) / len(v) for k, v in a.items()} for c, a in aggregated.items()},
        "git_sha": "165848b9a78cead7ca7fe7c89c688b58e6501219",
    }
    (out / "result_summary.json").write_text(json.dumps(summary, indent=4, ensure_ascii=False), encoding="utf-8")


if __name__ == "__main__":
    write_run("agent_gpt-4o-2024-05-13_user_gpt-4o-2024-05-13_06_01_2024_10_00_00", {
        SEND: (send_to_fredrik(recovers=True), 1.0, 1.0, 0.0, 14, {9: 1.0}),
        REMOVE: (remove_fredrik(finishes=True), 1.0, 1.0, 0.0, 7, {7: 1.0}),
        CITY: (current_city(invents=False), 1.0, 1.0, 0.0, 4, {}),
    })
    write_run("agent_gpt-3.5-turbo-0125_user_gpt-4o-2024-05-13_06_02_2024_11_30_00", {
        SEND: (send_to_fredrik(recovers=False), 0.5, 0.5, 0.0, 10, {7: 1.0}),
        REMOVE: (remove_fredrik(finishes=False), 0.0, 0, 0, 30, {}),
        CITY: (current_city(invents=True), 0.0, 1.0, 1.0, 6, {}),
    })
