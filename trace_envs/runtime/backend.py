"""What a real backend refuses in a write's arguments, before the write touches the world.

A generated env's tools act on scenario records; without this, a write whose key id is right took any other argument
(an invented payment method, -1 bags, a date "nan-nan-nan", roaming "banana") and succeeded, and a check binding the
key alone paid it. A backend refuses such a call and changes nothing; so does this module, with the error text a
backend gives (`trace_envs.language.errors`):

- the JSON Schema of the tool's parameters, nested values included (types, `enum`, `minimum` / `maximum`);
- numbers that are not finite, and negative numbers where neither the schema nor the examples allow one;
- an id the world does not hold (an argument or nested field named `*_id`, `*_ids`, `*_no`, `*_number`, `id`): the
  ids are those of the scenario's records, those the user's own request supplies, and those earlier tool results
  showed, as a backend knows every id it issued;
- a date that does not parse (a field named `date`, `*_date`, `dob`, or whose schema says `format: date`);
- a value outside the closed set a record field of the same name holds across the target's real records (roaming
  `on` / `off`, a cabin class), when that set is small and lower-case, as an enum the backend declares;
- placeholder values (`nan`, `null`, `made_up`, ...) where an id or a date belongs.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from typing import Any

from trace_envs.checks.clauses import ArgumentsBound, CallRef, Check, Confirmation
from trace_envs.language.errors import (
    PLACEHOLDER_VALUES,
    REFUSED_DATE,
    REFUSED_NEGATIVE,
    REFUSED_NOT_FINITE,
    REFUSED_NOT_ONE_OF,
    REFUSED_PLACEHOLDER,
    REFUSED_RANGE,
    REFUSED_TYPE,
    REFUSED_UNKNOWN_ID,
)
from trace_envs.language.values import iso_date
from trace_envs.spec.model import CapabilitySpec, ToolSpec

_ID_NAME = re.compile(r"(?:^|_)(?:id|ids|no|number|numbers)$")
_DATE_NAME = re.compile(r"(?:^|_)(?:date|dob)$")
_CLOSED_VALUE = re.compile(r"^[a-z][a-z0-9_ ]{0,30}$")
MAX_CLOSED_SET = 8
MIN_OCCURRENCES = 5


def is_id_name(name: str) -> bool:
    return bool(_ID_NAME.search(name))


def is_date_name(name: str) -> bool:
    return bool(_DATE_NAME.search(name))


def leaves(value: Any, name: str) -> Iterable[tuple[str, Any]]:
    """(field name, scalar) for every scalar inside `value`, a list's items named by the list's field."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from leaves(v, str(k))
    elif isinstance(value, list):
        for v in value:
            yield from leaves(v, name)
    else:
        yield name, value


def string_leaves(value: Any) -> set[str]:
    """Every string inside `value` (iterative: `leaves`' generators were a fifth of a reset)."""
    out: set[str] = set()
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, str):
            out.add(node)
    return out


_CLOSED: dict[tuple[str, str], dict[str, frozenset[str]]] = {}


def _closed_sets(spec: CapabilitySpec) -> dict[str, frozenset[str]]:
    """Field name -> the small set of lower-case words the read tools' real records hold under it (at any depth)."""
    cached = _CLOSED.get((spec.name, spec.spec_hash))
    if cached is not None:
        return cached
    seen: dict[str, list[Any]] = {}
    for tool in spec.tools:
        if tool.kind != "read":
            continue
        for example in [*tool.result_examples, tool.result_example]:
            for name, value in leaves(example, ""):
                seen.setdefault(name, []).append(value)
    out = {}
    for name, values in seen.items():
        # a field the records fill again and again from a few lower-case words (one value seen is a set too: the
        # write's own examples name the others, roaming "on" where every record read "off")
        if name and len(values) >= MIN_OCCURRENCES and len(set(map(str, values))) <= MAX_CLOSED_SET and all(
                isinstance(v, str) and _CLOSED_VALUE.match(v) for v in values):
            out[name] = frozenset(values)
    _CLOSED[(spec.name, spec.spec_hash)] = out
    return out


def closed_set(spec: CapabilitySpec, tool: ToolSpec, arg: str) -> frozenset[str] | None:
    """The values a string argument of a write may take, when the records hold a closed set under its name (the
    argument's own examples join it); None when the argument is open."""
    schema = tool.properties.get(arg)
    if not isinstance(schema, dict) or schema.get("type") != "string" or schema.get("enum"):
        return None
    values = _closed_sets(spec).get(arg)
    if values is None:
        return None
    examples = [e for e in schema.get("examples") or [] if isinstance(e, str)]
    if not all(_CLOSED_VALUE.match(e) for e in examples):
        return None
    options = values | frozenset(examples)
    return options if len(options) >= 2 else None


def _negatives_allowed(schema: Any) -> bool:
    if not isinstance(schema, dict):
        return True
    if isinstance(schema.get("minimum"), (int, float)):
        return schema["minimum"] < 0
    examples = [*(schema.get("examples") or []), *(schema.get("enum") or [])]
    return any(isinstance(n, (int, float)) and not isinstance(n, bool) and n < 0 for _, n in leaves(examples, ""))


def _words(name: str) -> str:
    return name.replace("_", " ")


def _show(value: Any) -> str:
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def refusal(spec: CapabilitySpec, tool: ToolSpec, args: dict[str, Any], known_ids: set[str]) -> str | None:
    """The error a backend answers a write of `tool` with these `args`, or None when it takes the call. `known_ids`:
    every id the world holds (see the module docstring)."""
    for name, value in args.items():
        schema = tool.properties.get(name)
        problem = _value_problem(spec, tool, name, value, schema if isinstance(schema, dict) else {}, known_ids)
        if problem:
            return problem
    return None


def _value_problem(spec: CapabilitySpec, tool: ToolSpec, name: str, value: Any, schema: dict[str, Any],
                   known_ids: set[str]) -> str | None:
    what = _words(name)
    for field, leaf in leaves(value, name):
        if isinstance(leaf, float) and not math.isfinite(leaf):
            return REFUSED_NOT_FINITE.format(what=_words(field), value=_show(leaf))
        if isinstance(leaf, str) and (is_id_name(field) or is_date_name(field)) and \
                leaf.strip().lower() in PLACEHOLDER_VALUES:
            return REFUSED_PLACEHOLDER.format(what=_words(field), value=_show(leaf) or "''")
    problem = _schema_problem(schema, value, what)
    if problem:
        return problem
    for field, leaf in leaves(value, name):
        if isinstance(leaf, (int, float)) and not isinstance(leaf, bool) and leaf < 0 and \
                not _negatives_allowed(schema):
            return REFUSED_NEGATIVE.format(what=_words(field), value=_show(leaf))
        if not isinstance(leaf, str):
            continue
        if is_date_name(field) or (field == name and schema.get("format") == "date"):
            if iso_date(leaf) is None or not re.fullmatch(r"\d{4}-\d{2}-\d{2}(?:[T ][\d:.+\-Z]{5,})?", leaf):
                return REFUSED_DATE.format(what=_words(field), value=_show(leaf), example="2024-05-15")
        elif is_id_name(field) and leaf not in known_ids:
            return REFUSED_UNKNOWN_ID.format(what=_words(field).removesuffix(" ids").removesuffix(" id"),
                                             value=_show(leaf))
    options = closed_set(spec, tool, name)
    if options is not None and isinstance(value, str) and value not in options:
        return REFUSED_NOT_ONE_OF.format(what=what, value=_show(value), options=", ".join(sorted(options)))
    return None


def _schema_problem(schema: dict[str, Any], value: Any, what: str) -> str | None:
    """The first JSON Schema violation of `value` (nested items included) as a backend's error."""
    if not schema:
        return None
    import jsonschema  # here, not at the top: a tenth of `import trace_envs`, and most steps never get here

    try:
        validator = jsonschema.Draft202012Validator(schema)
        errors = sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path))
    except (jsonschema.SchemaError, TypeError, ValueError):
        return None  # a learned schema the validator cannot read: the top-level type check already ran
    if not errors:
        return None
    error = errors[0]
    field = next((str(p) for p in reversed(list(error.absolute_path)) if isinstance(p, str)), None)
    label = _words(field) if field else what
    shown = _show(error.instance)
    if error.validator == "enum":
        return REFUSED_NOT_ONE_OF.format(what=label, value=shown, options=", ".join(map(str, error.validator_value)))
    if error.validator in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        low = error.schema.get("minimum", error.schema.get("exclusiveMinimum", "-inf"))
        high = error.schema.get("maximum", error.schema.get("exclusiveMaximum", "inf"))
        return REFUSED_RANGE.format(what=label, value=shown, low=low, high=high)
    if error.validator == "type":
        kinds = error.validator_value if isinstance(error.validator_value, list) else [error.validator_value]
        return REFUSED_TYPE.format(what=label, value=shown, kind=" or ".join(map(str, kinds)))
    return None  # other keywords (patterns, lengths) learned from a few examples are no backend's rule


# ---- what a write's arguments are paid for --------------------------------------------------------------------------
FREE_TEXT_CHARS = 500


def is_text_argument(spec: CapabilitySpec, tool: ToolSpec, arg: str) -> bool:
    """An argument a person fills in words (a reason, a note): a string that is no id, no date, no enum and no member
    of a closed set."""
    schema = tool.properties.get(arg)
    return (isinstance(schema, dict) and schema.get("type") == "string" and not schema.get("enum")
            and schema.get("format") != "date" and not is_id_name(arg) and not is_date_name(arg)
            and closed_set(spec, tool, arg) is None)


def _bound_elsewhere(check: Check, writes: set[str], key: str | None) -> dict[str, list[str]]:
    """Write tool -> the arguments some clause of `check` already binds with its own matcher."""
    out: dict[str, set[str]] = {}

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("tool") in writes and isinstance(node.get("args"), dict):
                out.setdefault(node["tool"], set()).update(a for a in node["args"] if a != key)
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(check.model_dump(mode="json"))
    return {t: sorted(a) for t, a in sorted(out.items()) if a}


def argument_binding(spec: CapabilitySpec, tools: list[ToolSpec]) -> ArgumentsBound | None:
    """The clause that binds every argument of the writes in `tools` (see `ArgumentsBound`), or None without writes."""
    writes = [t for t in tools if t.kind == "write"]
    if not writes:
        return None
    key = spec.roles.get("key")
    text = sorted({a for t in writes for a in t.properties if a != key and is_text_argument(spec, t, a)})
    free = {t.name: {a: FREE_TEXT_CHARS for a in t.properties if a not in t.required and a != key
                     and is_text_argument(spec, t, a)} for t in writes}
    return ArgumentsBound(
        id="arguments_bound", key=key, text=text, free={t: f for t, f in free.items() if f},
        skip=_bound_elsewhere(spec.check, {t.name for t in writes}, key),
        description="every other argument of a write on the expected record is the one the scenario determines "
                    "(stated by the user, held by the record, dictated by the policy, the option chosen, the sum "
                    "computed); only free text arguments may be added",
    )


def bound_check(spec: CapabilitySpec, tools: list[ToolSpec]) -> Check:
    """The spec's check with the argument binding added, unless it already binds arguments so, and with a
    confirmation penalty when the policy requires a yes before every write and the check pays no confirmation of its
    own (without it, an agent that never asks scores what the careful one does)."""
    check = spec.check
    clause = argument_binding(spec, tools)
    if clause is not None and not any(c.type == "arguments_bound" or c.id == clause.id for c in check.clauses):
        # a confirmation confirms the write only when the question stated the values the write then passes
        clauses = [c.model_copy(update={"state_arguments": True}) if c.type == "confirmation" else c
                   for c in check.clauses]
        check = check.model_copy(update={"clauses": [*clauses, clause]})
    confirm = policy_confirmation(spec, tools)
    if confirm is not None and not any(c.type == "confirmation" or c.id == confirm.id for c in check.clauses):
        check = check.model_copy(update={"clauses": [*check.clauses, confirm]})
    return check


def policy_confirmation(spec: CapabilitySpec, tools: list[ToolSpec]) -> Confirmation | None:
    """The penalty a policy that requires confirmation (`rules.confirm_writes`) puts on every write: before it, a
    question naming its action, and the user's yes. No values are required of the question: of the successful runs
    with a write in the five tau-bench and tau2-bench result files, the agent asked so before every write in 97 of
    102, restated the record's id in 69 of the 89 whose writes name a reservation or an order, and stated every
    argument in 21 of 102. A penalty that most careful agents fail would teach something no good agent does."""
    if not spec.rules.confirm_writes or not any(t.kind == "write" for t in tools):
        return None
    return Confirmation(
        id="confirmed_writes", penalty=True, call=CallRef(kind="write"),
        description="the policy asks for a yes before every write: each write comes after a question that names its "
                    "action, and the user's yes",
    )


def argument_roles(spec: CapabilitySpec, tool: ToolSpec, clause: ArgumentsBound | None) -> dict[str, str]:
    """Argument -> in words what the check pays it for (for the env's README)."""
    out = {}
    skip = set(clause.skip.get(tool.name, [])) if clause else set()
    free = clause.free.get(tool.name, {}) if clause else {}
    for arg in tool.properties:
        if arg == spec.roles.get("key"):
            out[arg] = "the record the request is about (key)"
        elif arg in skip:
            out[arg] = "bound by the check's own clauses"
        elif clause is None:
            out[arg] = "not checked"
        elif arg in free:
            out[arg] = f"the scenario's value when it sets one, else free text of at most {free[arg]} characters"
        elif clause and arg in clause.text:
            out[arg] = "the scenario's value, as text (case and punctuation aside)"
        elif arg in tool.arg_sources:
            out[arg] = f"the value the record holds at {tool.arg_sources[arg]}, exactly"
        else:
            out[arg] = "the value the user states (or the scenario computes or selects), exactly"
    return out


# ---- wrong-argument mutants -------------------------------------------------------------------------------------------
NAN_TEXT = "nan"


def _invented(value: str) -> str:
    """An id shaped like `value` that no world holds: each digit and letter shifted by one."""
    def shift(ch: str) -> str:
        if ch.isdigit():
            return str((int(ch) + 1) % 10)
        if ch.isalpha() and ch.isascii():
            base = ord("a") if ch.islower() else ord("A")
            return chr(base + (ord(ch) - base + 1) % 26)
        return ch
    out = "".join(shift(c) for c in value)
    return out if out != value else value + "9"


def _first_string(value: Any, new: Any) -> tuple[Any, bool]:
    """`value` with its first string leaf replaced by `new` (a callable of the old leaf), and whether one was."""
    if isinstance(value, str):
        return new(value), True
    if isinstance(value, list):
        for i, v in enumerate(value):
            changed, done = _first_string(v, new)
            if done:
                return [*value[:i], changed, *value[i + 1:]], True
    if isinstance(value, dict):
        for k, v in value.items():
            changed, done = _first_string(v, new)
            if done:
                return {**value, k: changed}, True
    return value, False


def wrong_values(spec: CapabilitySpec, tool: ToolSpec, arg: str, value: Any) -> dict[str, Any]:
    """Wrong values for a determined argument: a well-typed other value, an invented id, -1, 0, a NaN-like string."""
    out: dict[str, Any] = {}
    if isinstance(value, bool):
        out["flipped"] = not value
    elif isinstance(value, (int, float)):
        out.update(other=value + 1, negative=-1, zero=0, nan=NAN_TEXT)
    elif isinstance(value, str):
        options = closed_set(spec, tool, arg) or (tool.properties.get(arg) or {}).get("enum") or []
        others = sorted(str(o) for o in options if o != value)
        if others:
            out["other_member"] = others[0]
        elif is_id_name(arg):
            out["invented_id"] = _invented(value)
        elif iso_date(value) is not None:
            out["other_date"] = _invented(value)[:4] + value[4:]
        else:
            out["other_text"] = "something else entirely"
        out["nan"] = NAN_TEXT
    elif isinstance(value, (list, dict)):
        if value:
            out["empty"] = type(value)()
        invented, found = _first_string(value, _invented)
        if found:
            out["invented_leaf"] = invented
            out["nan_leaf"] = _first_string(value, lambda s: "nan-nan-nan" if iso_date(s) else NAN_TEXT)[0]
    return {k: v for k, v in out.items() if not (type(v) is type(value) and v == value)}


def argument_mutants(spec: CapabilitySpec, tools: dict[str, ToolSpec], oracle: list[str],
                     parse: Any) -> dict[str, list[str]]:
    """One mutant of the oracle per (write tool, non-key argument, wrong value): every oracle call of that tool passes
    the wrong value instead, nothing else changes. Named `<tool>.<argument>=<kind>`."""
    key = spec.roles.get("key")
    calls: dict[int, tuple[str, dict[str, Any]]] = {}
    for i, action in enumerate(oracle):
        parsed = parse(action).calls
        if len(parsed) == 1 and parsed[0].name in tools and tools[parsed[0].name].kind == "write":
            calls[i] = (parsed[0].name, dict(parsed[0].arguments))
    variants: dict[str, dict[str, Any]] = {}
    for name, args in calls.values():
        for arg, value in args.items():
            if arg == key:
                continue
            for kind, wrong in wrong_values(spec, tools[name], arg, value).items():
                variants.setdefault(f"{name}.{arg}={kind}", {"tool": name, "arg": arg, "value": wrong})
    out = {}
    for label, v in variants.items():
        actions = list(oracle)
        for i, (name, args) in calls.items():
            if name == v["tool"] and v["arg"] in args:
                actions[i] = json.dumps({"name": name, "arguments": {**args, v["arg"]: v["value"]}}, sort_keys=True)
        out[label] = actions
    return out
