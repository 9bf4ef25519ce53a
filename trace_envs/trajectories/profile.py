"""The DomainProfile: what the agent's tools look like, as seen in real runs.

For every tool the agent called (calls by the simulated user are profiled apart, as `user_tools`): how often, an argument schema (JSON types
seen, arguments present in every call, a few example values), the shape of its results, its error rate, and whether it
reads or writes state. The kind comes from an override file, else from the tool definition (a kind it states, what its
description says), else from what the tool did in the runs (a record read again after its call changed), else from
its name split in any style, else from weaker evidence (see `trace_envs.trajectories.kinds`). The tools that hand the
conversation to a person are found from their descriptions, replies, the conversations they end and the policy
(`trace_envs.trajectories.handoff`); their kind is other.

A profile covers one domain: its policy and tools. Runs of several domains (a tau2 results folder holds airline and
retail) are split with `split_by_domain` and profiled apart; `build_profile` refuses a mix (`MixedDomainsError`).
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from pathlib import Path
from typing import Any, Iterable, Literal, Mapping

from pydantic import BaseModel, Field

from trace_envs.trajectories.device_text import check_text_changes
from trace_envs.trajectories.handoff import handoff_tools
from trace_envs.trajectories.kinds import (
    KINDS,
    Behaviour,
    ToolKind,
    ToolKinds,
    definition_description,
    infer_kind_from_name,
    kind_from_definition,
    kind_from_name,
    name_words,
    stated_kind,
)
from trace_envs.trajectories.errors import TrajectoryFormatError
from trace_envs.trajectories.example_values import ExamplePool
from trace_envs.trajectories.invariants import Invariant
from trace_envs.trajectories.loaders import guess_domain
from trace_envs.trajectories.record_model import record_model
from trace_envs.trajectories.models import RESULT_STYLES, ResultStyle, Run, ToolCall
from trace_envs.trajectories.results import flatten
from trace_envs.jsontext import shared_loads

__all__ = [
    "DomainProfile",
    "MixedDomainsError",
    "OverridesError",
    "ToolProfile",
    "build_profile",
    "describe_tool",
    "infer_kind_from_name",
    "load_overrides",
    "run_domain",
    "split_by_domain",
]

KindSource = Literal["definition", "inferred", "override"]

MAX_LIST_ITEMS = 3
MAX_DICT_KEYS = 30
MAX_STRING = 300
MAX_DEPTH = 6


class OverridesError(ValueError):
    """A kinds override file that cannot be used."""


def run_domain(run: Run) -> str:
    """The domain `run` belongs to: what its loader put in `meta["domain"]` (tau2's `environment_info.domain_name`,
    a JSONL run's `domain` field, else one guess per file from its tools), as a slug (lower case, `[a-z0-9_-]`, so it
    can name a folder); `custom` when there is none."""
    name = re.sub(r"[^a-z0-9_-]+", "_", str(run.meta.get("domain") or "").lower()).strip("_-")[:41]
    return name if name[:1].isalpha() else "custom"


def split_by_domain(runs: Iterable[Run]) -> dict[str, list[Run]]:
    """`runs` grouped by `run_domain`, domains in name order, runs in their order."""
    groups: dict[str, list[Run]] = {}
    for run in runs:
        groups.setdefault(run_domain(run), []).append(run)
    return dict(sorted(groups.items()))


class MixedDomainsError(TrajectoryFormatError):
    """Runs of several domains were given where one domain's policy and tools are needed.

    One line naming each domain with its run count and files, and how to pick one."""

    def __init__(self, groups: Mapping[str, list[Run]], hint: str = "pass the files of one domain") -> None:
        """`groups`: domain name to its runs (as `split_by_domain` gives); `hint`: how the caller picks a domain."""
        self.domains = {name: len(runs) for name, runs in groups.items()}
        files = sorted({str(r.file) for runs in groups.values() for r in runs if r.file})
        parts = []
        for name, runs in groups.items():
            in_files = sorted({Path(r.file).name for r in runs if r.file})
            parts.append(f"{name} ({len(runs)} runs" + (f" in {', '.join(in_files)})" if in_files else ")"))
        message = (f"runs of {len(groups)} domains, which one profile must not merge (each has its own policy and "
                   f"tools): {'; '.join(parts)}; {hint}")
        where = files[0] if len(files) == 1 else (os.path.commonpath(files) if files else "runs")
        super().__init__(where or "runs", None, message)


class ToolProfile(BaseModel):
    """One tool as the agent used it."""

    name: str
    calls: int = 0
    kind: ToolKind = "other"
    kind_source: KindSource = "inferred"
    kind_evidence: str = Field(default="", description="Why the tool has its kind: the override, what the definition "
                               "states or describes, what the runs showed, the word of its name.")
    description: str | None = Field(
        default=None, description="From the tool definition, when there is one; else a sentence built from the name "
        "and the arguments seen (`describe_tool`)."
    )
    description_source: Literal["definition", "generated"] = "generated"
    parameters: dict[str, Any] = Field(
        default_factory=lambda: {"type": "object", "properties": {}, "required": []},
        description="JSON Schema of the arguments seen: JSON types per argument, `required` = present in every call.",
    )
    examples: dict[str, list[Any]] = Field(
        default_factory=dict,
        description="Up to 3 distinct real values per argument, none over 1,000 characters of JSON nor far longer than "
        "the argument's typical value.",
    )
    result_keys: list[str] = Field(default_factory=list, description="Keys of object results (of the items of lists).")
    result_example: Any = Field(default=None, description="The first non-error result, parsed and truncated.")
    result_examples: list[Any] = Field(
        default_factory=list, description="Distinct real records the tool returned (reads), whole: scenarios start from them."
    )
    effect: dict[str, Any] = Field(
        default_factory=dict, description="Fields every call of a write set to one value (e.g. status: cancelled)."
    )
    arg_sources: dict[str, str] = Field(
        default_factory=dict, description="Write arguments whose value is a field of the record written (arg -> path)."
    )
    error_rate: float = 0.0
    result_style: ResultStyle = Field(
        default="json", description="How the source wrote the tool's results: JSON, or the Python repr ToolSandbox "
        "prints (`[{'name': 'Fredrik'}]`, `True`, `None`), as the runs' `meta.result_style` says.")
    changes: dict[str, dict[str, list[Any]]] = Field(
        default_factory=dict,
        description="User-side tools only: record fields an agent read showed changed across the user's call, and "
        "device fields the user's own check texts showed changed (read or check tool -> dotted path -> [value "
        "before, value after], the most common pair).",
    )


class DomainProfile(BaseModel):
    """Every tool the agent used in a domain, plus the policy text."""

    domain: str
    tools: dict[str, ToolProfile] = Field(default_factory=dict)
    policy: str = ""
    runs: int = 0
    now: str | None = Field(default=None, description="The current time the policy states (ISO), if it states one.")
    invariants: dict[str, list[Invariant]] = Field(
        default_factory=dict, description="Per read tool: invariants every real record satisfied."
    )
    handoffs: dict[str, str] = Field(
        default_factory=dict, description="Tools that hand the conversation to a person, with why (their description, "
        "replies, the conversations they end, the policy); see `trace_envs.trajectories.handoff`.")
    user_tools: dict[str, ToolProfile] = Field(
        default_factory=dict,
        description="Tools only the simulated user called (tau2 `requestor: user`, e.g. toggle_airplane_mode): the "
        "agent has no such tool and must ask the user to act. Never listed in `tools`.",
    )

    @property
    def kinds(self) -> ToolKinds:
        """Tool name to read / write / other (what `ActionTrace.tool_kinds` takes), carrying the hand-offs."""
        return ToolKinds({name: t.kind for name, t in self.tools.items()}, self.handoffs)


# --------------------------------------------------------------------------------------------------------------------
# shapes


def _json_type(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    if isinstance(v, dict):
        return "object"
    return "string"


def _truncate(v: Any, depth: int = 0) -> Any:
    if isinstance(v, str):
        return v if len(v) <= MAX_STRING else v[:MAX_STRING] + "..."
    if depth >= MAX_DEPTH and isinstance(v, (list, dict)):
        return "..."
    if isinstance(v, list):
        return [_truncate(x, depth + 1) for x in v[:MAX_LIST_ITEMS]]
    if isinstance(v, dict):
        return {k: _truncate(x, depth + 1) for k, x in list(v.items())[:MAX_DICT_KEYS]}
    return v


def _parse(raw: str | None) -> tuple[bool, Any]:
    if raw is None:
        return False, None
    try:
        return True, shared_loads(raw)
    except (ValueError, RecursionError):
        return False, raw


class _Acc:
    def __init__(self, name: str) -> None:
        self.name = name
        self.calls = 0
        self.errors = 0
        self.arg_types: dict[str, set[str]] = {}
        self.arg_counts: Counter[str] = Counter()
        self._examples: dict[str, ExamplePool] = {}
        self.result_keys: dict[str, None] = {}
        self.result_example: Any = None
        self.has_example = False
        self.text_example: Any = None
        self.styles: Counter[str] = Counter()

    def add(self, call: ToolCall) -> None:
        self.calls += 1
        if call.error:
            self.errors += 1
        for arg, value in call.arguments.items():
            self.arg_types.setdefault(arg, set()).add(_json_type(value))
            self.arg_counts[arg] += 1
            self._examples.setdefault(arg, ExamplePool()).add(value)
        if call.error or call.result is None:
            return
        ok, parsed = _parse(call.result)
        if not ok:
            if self.text_example is None:
                self.text_example = _truncate(parsed)
            return
        if not self.has_example:
            self.result_example = _truncate(parsed)
            self.has_example = True
        items = parsed if isinstance(parsed, list) else [parsed]
        # One level of nesting too: a list of lists of records (e.g. one-stop flight pairs).
        items = [x for it in items for x in (it if isinstance(it, list) else [it])]
        for it in items:
            if isinstance(it, dict):
                for k in it:
                    self.result_keys.setdefault(str(k), None)

    @property
    def examples(self) -> dict[str, list[Any]]:
        """Up to MAX_EXAMPLES real values per argument, none over the size bound nor an outlier."""
        return {arg: [_truncate(v) for v in pool.chosen()] for arg, pool in self._examples.items()}

    def schema(self) -> dict[str, Any]:
        props: dict[str, Any] = {}
        for arg, types in self.arg_types.items():
            if {"integer", "number"} <= types:
                types = types - {"integer"}
            t = sorted(types)
            props[arg] = {"type": t[0] if len(t) == 1 else t}
        required = [a for a in self.arg_types if self.arg_counts[a] == self.calls]
        return {"type": "object", "properties": props, "required": required}


_KIND_CLAUSE = {"read": " It only reads; nothing changes.", "write": " It changes the records.", "other": ""}


def _argument(name: str, schema: Any) -> str:
    kind = schema.get("type") if isinstance(schema, Mapping) else None
    kinds = kind if isinstance(kind, list) else [kind] if kind else []
    return f"{name} ({' or '.join(map(str, kinds))})" if kinds else name


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def describe_tool(name: str, parameters: Mapping[str, Any], kind: str) -> str:
    """A description for a tool whose source has none: what its name says, the arguments it takes (required ones
    first, with their JSON types) and whether it reads or writes. `parameters`: the JSON Schema of its arguments;
    `kind`: read / write / other. E.g. `Cancel reservation, given reservation_id (string). It changes the records.`"""
    words = " ".join(name_words(name)) or name
    props = parameters.get("properties") if isinstance(parameters.get("properties"), Mapping) else {}
    required = [a for a in parameters.get("required", []) if a in props]
    optional = [a for a in props if a not in required]
    parts = []
    if required:
        parts.append(_and([_argument(a, props[a]) for a in required]))
    if optional:
        parts.append("optionally " + _and([_argument(a, props[a]) for a in optional]))
    given = f", given {' and '.join(parts)}." if parts else ", with no arguments."
    return words[0].upper() + words[1:] + given + _KIND_CLAUSE.get(kind, "")


def load_overrides(path: str | Path) -> dict[str, str]:
    """Read `{"tool_name": "read"|"write"|"other"}` (or `{"kinds": {...}}`) from a JSON or YAML file."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise OverridesError(f"{p}: cannot read kinds file: {getattr(exc, 'strerror', None) or exc}") from None
    import yaml  # only a kinds file needs it; mining does not

    try:
        data = yaml.safe_load(text) if p.suffix.lower() in (".yaml", ".yml") else json.loads(text)
    except json.JSONDecodeError:
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise OverridesError(f"{p}: not JSON or YAML: {str(exc).splitlines()[0]}") from None
    except yaml.YAMLError as exc:
        raise OverridesError(f"{p}: invalid YAML: {str(exc).splitlines()[0]}") from None
    return _check_overrides(data, str(p))


def _check_overrides(data: Any, where: str) -> dict[str, str]:
    if isinstance(data, Mapping) and isinstance(data.get("kinds"), Mapping):
        data = data["kinds"]
    if not isinstance(data, Mapping):
        raise OverridesError(f'{where}: expected an object {{"tool_name": "read"|"write"|"other"}}')
    out: dict[str, str] = {}
    for name, kind in data.items():
        if not isinstance(kind, str) or kind.lower() not in KINDS:
            raise OverridesError(f"{where}: tool {name!r}: expected read, write or other, got {kind!r}")
        out[str(name)] = kind.lower()
    return out


def build_profile(runs: Iterable[Run], overrides: Mapping[str, str] | str | Path | None = None) -> DomainProfile:
    """Profile the tools the agent called in `runs`, all of one domain; tools only the simulated user called go to
    `user_tools`.

    `overrides`: tool name to read / write / other, or a JSON / YAML file of them. Raises `MixedDomainsError` when the
    runs belong to several domains (`split_by_domain` them first)."""
    runs = list(runs)
    groups = split_by_domain(runs)
    if len(groups) > 1:
        raise MixedDomainsError(groups)
    if overrides is None:
        kinds_override: dict[str, str] = {}
    elif isinstance(overrides, (str, Path)):
        kinds_override = load_overrides(overrides)
    else:
        kinds_override = _check_overrides(overrides, "overrides")

    accs: dict[str, _Acc] = {}
    user_accs: dict[str, _Acc] = {}
    definitions: dict[str, Mapping[str, Any]] = {}
    for run in runs:
        for t in run.tools or []:
            fn = t.get("function") if isinstance(t.get("function"), Mapping) else t
            if isinstance(fn.get("name"), str):
                definitions.setdefault(fn["name"], t)
        style = (run.meta or {}).get("result_style")
        for call in run.tool_calls:
            into = accs if call.requestor == "agent" else user_accs
            acc = into.get(call.name)
            if acc is None:
                acc = into[call.name] = _Acc(call.name)
            acc.add(call)
            if style in RESULT_STYLES:
                acc.styles[style] += 1

    policies = Counter(r.policy for r in runs if r.policy)
    policy = policies.most_common(1)[0][0] if policies else ""
    handoffs = handoff_tools(runs, definitions, policy)
    kinds = infer_kinds(runs, list(accs), definitions, handoffs, kinds_override)

    tools: dict[str, ToolProfile] = {}
    for name in sorted(accs, key=lambda n: (-accs[n].calls, n)):
        acc = accs[name]
        kind, source, why = kinds[name]
        desc = definition_description(definitions.get(name))
        parameters = acc.schema()
        tools[name] = ToolProfile(
            name=name,
            calls=acc.calls,
            kind=kind,
            kind_source=source,
            kind_evidence=why,
            description=desc or describe_tool(name, parameters, kind),
            description_source="definition" if desc else "generated",
            parameters=parameters,
            examples=acc.examples,
            result_keys=list(acc.result_keys),
            result_example=acc.result_example if acc.has_example else acc.text_example,
            error_rate=round(acc.errors / acc.calls, 4) if acc.calls else 0.0,
            result_style=acc.styles.most_common(1)[0][0] if acc.styles else "json",
        )

    now, pools, invariants, effects, sources = record_model(runs, {n: t.kind for n, t in tools.items()}, policy)
    for name, tool in tools.items():
        tool.result_examples = pools.get(name, [])
        tool.effect = effects.get(name, {})
        tool.arg_sources = sources.get(name, {})
    named = next(iter(groups), "custom")
    domain = named if named != "custom" else guess_domain(tools)
    # A tool both sides called stays the agent's; the user's own ones keep the kind their name says.
    changes = _user_tool_changes(runs, {n: t.kind for n, t in tools.items()})
    # The device only the user reaches (tau2 telecom) shows in the user's own check texts, not in agent reads.
    checks = {n for n in user_accs if n not in tools and infer_kind_from_name(n) == "read"}
    for tool, by_check in check_text_changes(runs, checks).items():
        changes.setdefault(tool, {}).update(by_check)
    user_tools = {
        name: _user_tool(acc, changes.get(name, {}))
        for name, acc in sorted(user_accs.items(), key=lambda kv: (-kv[1].calls, kv[0])) if name not in tools
    }
    return DomainProfile(
        domain=domain, tools=tools, policy=policy, runs=len(runs), now=now, invariants=invariants,
        handoffs=handoffs, user_tools=user_tools,
    )


def infer_kinds(runs: list[Run], names: list[str], definitions: Mapping[str, Mapping[str, Any]],
                handoffs: Mapping[str, str], overrides: Mapping[str, str]) -> dict[str, tuple[str, str, str]]:
    """Per agent tool in `names`: (kind, source, why), from the strongest evidence there is, in the order
    `trace_envs.trajectories.kinds` gives: an override; a kind the definition states; a hand-off (other); the
    definition's description and schema; a record it changed; its name; weaker behaviour; else other."""
    spoken = {n: kind_from_definition(definitions.get(n)) or kind_from_name(n) for n in names}
    behaviour = Behaviour(runs, {n: (spoken[n] or ("",))[0] != "write" for n in names})
    out: dict[str, tuple[str, str, str]] = {}
    for name in names:
        definition = definitions.get(name)
        stated = stated_kind(definition) if definition else None
        described = kind_from_definition(definition)
        if name in overrides:
            out[name] = (overrides[name], "override", "the kinds file")
        elif stated is not None:
            out[name] = (stated, "definition", "the definition states it")
        elif name in handoffs:
            source = "definition" if handoffs[name].startswith("its description") else "inferred"
            out[name] = ("other", source, f"a hand-off to a person: {handoffs[name]}")
        elif described is not None and described[0] == "read" and (freed := behaviour.unblocking(name)):
            out[name] = ("write", "inferred", f"{freed[1]}, though {described[1]} reads as a read")
        elif described is not None and described[0] == "read" and (acted := behaviour.acknowledged(name)) \
                and (named := kind_from_name(name)) is not None and named[0] == "write":
            # two witnesses against one: "Get a new certificate" that `certificates.issue` answers "... issued."
            out[name] = ("write", "inferred", f'its name says "{named[1]}" and {acted[1]}, though {described[1]} '
                                              "reads as a read")
        elif described is not None:
            out[name] = (described[0], "definition", described[1])
        elif (found := behaviour.strong(name) or _named(name) or behaviour.weak(name)) is not None:
            out[name] = (found[0], "inferred", found[1])
        else:
            out[name] = ("other", "inferred", "nothing says what it does")
    return out


def _named(name: str) -> tuple[ToolKind, str] | None:
    found = kind_from_name(name)
    return (found[0], f'its name says "{found[1]}"') if found else None


def _user_tool(acc: _Acc, changes: dict[str, dict[str, list[Any]]]) -> ToolProfile:
    """A tool the simulated user called, profiled like the agent's (its kind from its name, else other), with the
    record fields it was seen to change."""
    return ToolProfile(
        name=acc.name, calls=acc.calls, kind=infer_kind_from_name(acc.name) or "other", parameters=acc.schema(),
        examples=acc.examples, result_keys=list(acc.result_keys),
        result_example=acc.result_example if acc.has_example else acc.text_example,
        error_rate=round(acc.errors / acc.calls, 4) if acc.calls else 0.0, changes=changes,
    )


def _user_tool_changes(runs: list[Run], kinds: dict[str, str]) -> dict[str, dict[str, dict[str, list[Any]]]]:
    """Per user-side tool: the fields of an agent read's record that differ between the agent's last read before the
    user's successful call and its first same read after it (read -> path -> the most common [before, after])."""
    seen: dict[str, dict[str, dict[str, Counter]]] = {}
    for run in runs:
        reads = [c for c in run.agent_calls if kinds.get(c.name) == "read" and not c.error and c.result]
        for uc in run.user_calls:
            if uc.error:
                continue
            for before in [c for c in reads if c.message_index < uc.message_index][-1:]:
                after = next((c for c in reads if c.message_index > uc.message_index and c.name == before.name
                              and c.arguments == before.arguments), None)
                ok_b, rec_b = _parse(before.result)
                ok_a, rec_a = _parse(after.result) if after is not None else (False, None)
                if not (ok_a and ok_b and isinstance(rec_a, dict) and isinstance(rec_b, dict)):
                    continue
                flat_b, flat_a = flatten(rec_b), flatten(rec_a)
                for path in flat_b.keys() & flat_a.keys():
                    if flat_b[path] != flat_a[path]:
                        pair = json.dumps([flat_b[path], flat_a[path]])
                        seen.setdefault(uc.name, {}).setdefault(before.name, {}).setdefault(path, Counter())[pair] += 1
    return {
        tool: {read: {path: json.loads(c.most_common(1)[0][0]) for path, c in sorted(paths.items())}
               for read, paths in by_read.items()}
        for tool, by_read in seen.items()
    }
