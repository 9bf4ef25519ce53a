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

import math
import re
from collections.abc import Iterable
from typing import Any

import jsonschema

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
    return {v for _, v in leaves(value, "") if isinstance(v, str)}


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
