"""Apple ToolSandbox run folders.

What `tool_sandbox` writes for one run of its scenarios, `agent_<model>_user_<model>_<MM_DD_YYYY_HH_MM_SS>/`:

- `result_summary.json`: `{per_scenario_results: [{name, categories, traceback, exception_type, milestone_similarity,
  minefield_similarity, similarity, turn_count, milestone_mapping, minefield_mapping}], category_aggregated_results,
  git_sha}`;
- `trajectories/<scenario>/conversation.json`: the agent's side of the conversation as OpenAI chat messages (assistant
  `tool_calls[].function.arguments` as JSON strings, `tool` replies whose content is the Python repr of what the tool
  returned, or the exception it raised), each possibly with a `<role>_details` object (`database_update`,
  `milestone_matches`, `minefield_matches`); written only when the scenario played to its end;
- `trajectories/<scenario>/execution_context.json`: `{_dbs: {SANDBOX: [message rows: sandbox_message_index, sender,
  recipient (SYSTEM, USER, AGENT, EXECUTION_ENVIRONMENT), content, openai_tool_call_id, openai_function_name,
  conversation_active, tool_call_exception, tool_trace, visible_to], SETTING, CONTACT, MESSAGING, REMINDER},
  tool_allow_list, tool_deny_list, tool_augmentation_list, ...}`; always written. In it an agent's tool call is Python
  code, read here as data only (see `python_text`).

One run per scenario and folder: task id = scenario name (its tool-augmentation suffix, `_3_distraction_tools`,
`_all_tools`, ..., is also kept apart as `meta.task_variant`); reward = similarity, success = similarity 1.0
(ToolSandbox's "perfect"); several run folders of the same scenarios are trials, numbered in load order. A folder is
claimed when it holds a `result_summary.json` that starts like one; given alone, a `result_summary.json` loads its
folder, and a `conversation.json` or `execution_context.json` loads its one scenario from the run folder around it.
"""

from __future__ import annotations

import json
import logging
import re
import stat
from pathlib import Path
from typing import Any, Iterable, Iterator

from trace_envs.trajectories.formats.common import (
    Record,
    RunError,
    first_system,
    got,
    is_number,
    openai_messages,
    reward_success,
    set_error,
)
from trace_envs.trajectories.formats.python_text import NotACall, parse_tool_call, read_result
from trace_envs.trajectories.formats.registry import NoRunsHere, SourceFormat, register_format
from trace_envs.trajectories.tool_errors import FLAGGED, tool_error

LOG = logging.getLogger("trace_envs.trajectories")
SOURCE = "toolsandbox"
SUMMARY = "result_summary.json"
CONVERSATION = "conversation.json"
CONTEXT = "execution_context.json"
_SUMMARY_KEY = b'"per_scenario_results"'
_FOLDER_NAME = re.compile(r"^agent_(?P<agent>.+)_user_(?P<user>.+)_(?P<stamp>\d\d_\d\d_\d{4}_\d\d_\d\d_\d\d)$")
# ToolSandbox's tool augmentations append these to a base scenario's name (scenarios/__init__.py), longest first.
VARIANT_SUFFIXES = tuple(
    f"_3_distraction_tools_{a}_scrambled" for a in ("tool_description", "arg_type", "arg_description", "tool_name")
) + ("_3_distraction_tools", "_10_distraction_tools", "_all_tools")
# What ToolSandbox's tools do, by name: the searches and getters read, the rest of its verbs change the sandbox's
# databases or settings; end_conversation is the user's, the timestamp and unit helpers only compute.
READ_PREFIXES = ("search_", "get_")
WRITE_PREFIXES = ("send_", "add_", "modify_", "remove_", "set_", "update_", "delete_")
OTHER_TOOLS = frozenset({"end_conversation", "timestamp_diff", "shift_timestamp", "unit_conversion",
                         "datetime_info_to_timestamp", "timestamp_to_datetime_info", "convert_currency",
                         "calculate_lat_lon_distance"})
_ROLES = {
    ("SYSTEM", "AGENT"): "system",
    ("USER", "AGENT"): "user",
    ("EXECUTION_ENVIRONMENT", "AGENT"): "tool",
    ("AGENT", "EXECUTION_ENVIRONMENT"): "call",
    ("AGENT", "USER"): "assistant",
}


def tool_kind(name: str) -> str | None:
    """read / write / other for a ToolSandbox tool name; None for a name it does not know (a scrambled one)."""
    if name in OTHER_TOOLS:
        return "other"
    if name.startswith(READ_PREFIXES):
        return "read"
    if name.startswith(WRITE_PREFIXES):
        return "write"
    return None


def task_variant(name: str) -> tuple[str, str]:
    """`(base scenario, augmentation)` of a scenario name; the augmentation is "" for a base scenario."""
    for suffix in VARIANT_SUFFIXES:
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)], suffix[1:]
    return name, ""


# --------------------------------------------------------------------------------------------------------------------
# files


def _regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(path.stat().st_mode)
    except OSError:
        return False


def sniff_folder(path: Path) -> bool:
    summary = path / SUMMARY
    if not _regular(summary):
        return False
    try:
        with summary.open("rb") as f:
            return _SUMMARY_KEY in f.read(4096)
    except OSError:
        return False


def _json_file(path: Path, where: str) -> Any:
    if not _regular(path):
        raise RunError(where, f"expected {path.name} to be a regular file")
    try:
        return json.loads(path.read_bytes())
    except (OSError, UnicodeDecodeError) as exc:
        raise RunError(where, f"cannot read {path.name}: {exc}") from None
    except (ValueError, RecursionError) as exc:
        raise RunError(where, f"{path.name} is not valid JSON ({exc})") from None


# --------------------------------------------------------------------------------------------------------------------
# one scenario


def _sandbox_rows(context: dict[str, Any], where: str) -> list[dict[str, Any]]:
    dbs = context.get("_dbs")
    if not isinstance(dbs, dict):
        raise RunError(where, f'expected "_dbs" to be an object, got {got(dbs)}')
    rows = dbs.get("SANDBOX")
    if not isinstance(rows, list):
        raise RunError(where, f'expected "_dbs.SANDBOX" to be a list of message rows, got {got(rows)}')
    # The first row is an all-null headguard; a row whose roles are not names is no message either.
    return [r for r in rows if isinstance(r, dict) and isinstance(r.get("sender"), str)
            and isinstance(r.get("recipient"), str)]


def _messages_from_sandbox(
    rows: list[dict[str, Any]], where: str, display: str
) -> tuple[list[dict[str, Any]], list[dict]]:
    """The agent's side of the SANDBOX message log as OpenAI chat messages (what conversation.json holds), and the
    tool calls whose code could not be read as one literal call."""
    messages: list[dict[str, Any]] = []
    unread: list[dict[str, Any]] = []
    for i, row in enumerate(rows):
        if row.get("visible_to") == ["USER"]:
            continue  # the user simulator's few-shot examples
        role = _ROLES.get((row.get("sender"), row.get("recipient")))
        if role is None:
            continue
        content = row.get("content")
        call_id = row.get("openai_tool_call_id") or f"call_{i}"
        if role == "call":
            try:
                name, arguments = parse_tool_call(content)
            except NotACall as exc:
                unread.append({"where": f"{where}: _dbs.SANDBOX row {row.get('sandbox_message_index')}",
                               "why": str(exc)})
                LOG.warning("warning: %s: %s: tool call not read (%s); it was not run", display, unread[-1]["where"], exc)
                continue
            call = {"id": call_id, "type": "function",
                    "function": {"name": row.get("openai_function_name") or name, "arguments": json.dumps(arguments)}}
            if messages and messages[-1].get("tool_calls") is not None and messages[-1]["role"] == "assistant":
                messages[-1]["tool_calls"].append(call)
            else:
                messages.append({"role": "assistant", "content": "", "tool_calls": [call]})
        elif role == "tool":
            messages.append({"role": "tool", "tool_call_id": call_id, "name": row.get("openai_function_name"),
                             "content": content})
        else:
            messages.append({"role": role, "content": content})
    return messages, unread


def _exceptions_by_call(rows: list[dict[str, Any]]) -> dict[str, str]:
    return {
        r["openai_tool_call_id"]: r["tool_call_exception"]
        for r in rows
        if r.get("sender") == "EXECUTION_ENVIRONMENT" and isinstance(r.get("tool_call_exception"), str)
        and isinstance(r.get("openai_tool_call_id"), str)
    }


def _tool_schemas(names: Iterable[str]) -> list[dict[str, Any]] | None:
    out = []
    for name in names:
        kind = tool_kind(name)
        fn: dict[str, Any] = {"name": name}
        out.append({"type": "function", "function": fn, **({"x-kind": kind} if kind else {})})
    return out or None


def _string_list(value: Any) -> list[str] | None:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else None


def _scenario_record(
    run_dir: Path, entry: Any, idx: int, display: str, folder_meta: dict[str, Any]
) -> tuple[str, dict[str, Any]]:
    base_where = f"{SUMMARY}: per_scenario_results[{idx}]"
    if not isinstance(entry, dict):
        raise RunError(base_where, f"expected a scenario result object, got {got(entry)}")
    name = entry.get("name")
    if not isinstance(name, str) or not name:
        raise RunError(base_where, f'expected "name" to be a scenario name, got {got(name)}')
    where = f"{base_where} (scenario {name})"
    similarity = entry.get("similarity")
    if not is_number(similarity):
        raise RunError(where, f'expected "similarity" to be a number, got {got(similarity)}')
    reward, success = reward_success(similarity, None, where, "similarity")
    categories = entry.get("categories")
    if categories is not None and not isinstance(categories, list):
        raise RunError(where, f'expected "categories" to be a list, got {got(categories)}')

    scenario_dir = run_dir / "trajectories" / name
    rel = f"trajectories/{name}"
    context = _json_file(scenario_dir / CONTEXT, f"{rel}/{CONTEXT}") if (scenario_dir / CONTEXT).exists() else None
    if context is not None and not isinstance(context, dict):
        raise RunError(f"{rel}/{CONTEXT}", f"expected an execution context object, got {got(context)}")
    rows = _sandbox_rows(context, f"{rel}/{CONTEXT}") if context is not None else []
    unread: list[dict[str, Any]] = []
    if (scenario_dir / CONVERSATION).exists():
        key = f"{rel}/{CONVERSATION}"
        raw = _json_file(scenario_dir / CONVERSATION, key)
        if not isinstance(raw, list):
            raise RunError(key, f"expected a list of messages, got {got(raw)}")
    elif context is not None:
        key = f"{rel}/{CONTEXT}: _dbs.SANDBOX"
        raw, unread = _messages_from_sandbox(rows, f"{rel}/{CONTEXT}", display)
    else:
        raise RunError(where, f"expected {rel}/{CONVERSATION} or {rel}/{CONTEXT}, found neither")
    if not raw:
        raise RunError(where, f"expected {key} to hold at least one message, got none")
    messages, joiner = openai_messages(raw, key, "messages", copy=True)

    exceptions = _exceptions_by_call(rows)
    tool_exceptions = []
    for call in joiner.calls:
        result, exc = read_result(call["result"])
        logged = exceptions.get(call["id"])
        if logged is not None and exc is None:
            exc = read_result(logged)[1] or ("Exception", logged)
        call["result"] = result
        # decided again on the reply read into JSON (a repr `{'error': ...}` is an envelope only once read)
        set_error(call, tool_error(result, flagged=exc is not None or call["error_reason"] == FLAGGED))
        if exc is not None:
            tool_exceptions.append({"call_id": call["id"], "tool": call["name"], "type": exc[0], "message": exc[1]})

    base, variant = task_variant(name)
    meta: dict[str, Any] = {"domain": SOURCE, **folder_meta, "base_scenario": base, "task_variant": variant,
                            "categories": [c for c in categories or [] if isinstance(c, str)],
                            "result_style": "python-repr"}
    for k in ("milestone_similarity", "minefield_similarity", "turn_count", "exception_type"):
        if entry.get(k) is not None:
            meta[k] = entry[k]
    if isinstance(entry.get("traceback"), str) and entry["traceback"].strip():
        meta["scenario_error"] = entry["traceback"].strip().splitlines()[-1]
    allowed = denied = None
    if context is not None:
        allowed, denied = _string_list(context.get("tool_allow_list")), _string_list(context.get("tool_deny_list"))
        meta["allowed_tools"], meta["denied_tools"] = allowed, denied or []
        if _string_list(context.get("tool_augmentation_list")):
            meta["tool_augmentations"] = _string_list(context["tool_augmentation_list"])
    if tool_exceptions:
        meta["tool_exceptions"] = tool_exceptions
    if unread:
        meta["unread_tool_calls"] = unread
    if joiner.bad_arguments:
        meta["undecodable_arguments"] = joiner.bad_arguments
    used = dict.fromkeys([*(allowed or []), *(c["name"] for c in joiner.calls if c["requestor"] == "agent")])
    return where, {
        "source": SOURCE,
        "file": display,
        "task_id": name,
        "trial": None,  # numbered by the loader: the n-th run folder of this scenario in the load
        "messages": messages,
        "tool_calls": joiner.calls,
        "reward": reward,
        "success": success,
        "policy": first_system(messages),
        "tools": _tool_schemas(used),
        "meta": meta,
    }


# --------------------------------------------------------------------------------------------------------------------
# sources


def _folder_meta(run_dir: Path, summary: dict[str, Any]) -> dict[str, Any]:
    meta: dict[str, Any] = {"run_folder": run_dir.name}
    m = _FOLDER_NAME.match(run_dir.name)
    if m:
        meta.update(agent_model=m.group("agent"), user_model=m.group("user"), run_timestamp=m.group("stamp"))
    if isinstance(summary.get("git_sha"), str):
        meta["git_sha"] = summary["git_sha"]
    return meta


def _scenarios(run_dir: Path, display: str, only: str | None) -> Iterator[Record]:
    try:
        summary = _json_file(run_dir / SUMMARY, SUMMARY)
        if not isinstance(summary, dict):
            raise RunError(SUMMARY, f"expected a result summary object, got {got(summary)}")
        results = summary.get("per_scenario_results")
        if not isinstance(results, list):
            raise RunError(SUMMARY, f'expected "per_scenario_results" to be a list, got {got(results)}')
    except RunError as exc:
        yield exc.where, exc
        return
    folder_meta = _folder_meta(run_dir, summary)
    for i, entry in enumerate(results):
        if only is not None and not (isinstance(entry, dict) and entry.get("name") == only):
            continue
        try:
            yield _scenario_record(run_dir, entry, i, display, folder_meta)
        except RunError as exc:
            yield exc.where, exc


def read_folder(path: Path, display: str) -> Iterable[Record]:
    return _scenarios(path, display, None)


def sniff_summary(document: Any) -> bool:
    return isinstance(document, dict) and "per_scenario_results" in document


def read_summary(document: Any, path: Path, display: str) -> Iterable[Record]:
    if not (path.parent / "trajectories").is_dir():
        raise NoRunsHere(
            f"a ToolSandbox {SUMMARY} holds scores but no conversations, and there is no trajectories/ folder "
            "beside it; pass the whole run folder (agent_<model>_user_<model>_<time>/)"
        )
    return _scenarios(path.parent, display, None)


def _is_message_list(document: Any) -> bool:
    first = next((x for x in document if isinstance(x, dict)), None) if isinstance(document, list) else None
    return first is not None and isinstance(first.get("role"), str) and not {"messages", "traj"} & set(first)


def sniff_scenario_file(document: Any) -> bool:
    """A conversation.json (a bare list of chat messages) or an execution_context.json (an object with `_dbs`)."""
    return _is_message_list(document) or (isinstance(document, dict) and isinstance(document.get("_dbs"), dict))


def read_scenario_file(document: Any, path: Path, display: str) -> Iterable[Record]:
    run_dir = path.resolve().parent.parent.parent
    if path.resolve().parent.parent.name == "trajectories" and sniff_folder(run_dir):
        return _scenarios(run_dir, display, path.resolve().parent.name)
    what = "a list of chat messages" if _is_message_list(document) else "a ToolSandbox execution context"
    raise NoRunsHere(
        f"{what} with no outcome beside it; a ToolSandbox {path.name} is read from its run folder "
        f"(agent_<model>_user_<model>_<time>/ with {SUMMARY} and trajectories/<scenario>/): pass that folder"
    )


FOLDER = register_format(
    SourceFormat(
        name=SOURCE,
        description=f"ToolSandbox run folders (agent_<model>_user_<model>_<time>/ with {SUMMARY} and trajectories/)",
        sniff=sniff_summary,
        read=read_summary,
        sniff_folder=sniff_folder,
        read_folder=read_folder,
    )
)
SCENARIO_FILE = register_format(
    SourceFormat(
        name="toolsandbox-scenario",
        description="a ToolSandbox conversation.json or execution_context.json inside its run folder",
        sniff=sniff_scenario_file,
        read=read_scenario_file,
    )
)
