"""Reading spec files from anywhere (the miner, a colleague, the internet): untrusted until proven otherwise.

A file is size-checked, parsed with a nesting limit, validated against the JSON Schema with every error listed (path
and reason), then loaded into `CapabilitySpec`. Names are slugs, so nothing in a spec can reach outside an output folder.
"""

from __future__ import annotations

import difflib
import json
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any

import jsonschema
from pydantic import BaseModel, ValidationError

from trace_envs.spec.model import CapabilitySpec

MAX_SPEC_FILE_BYTES = 5_000_000
MAX_DEPTH = 32
SCHEMA_PATH = Path(__file__).with_name("capability_spec.schema.json")


class SpecError(ValueError):
    """A spec file is not a valid CapabilitySpec (or list of them); `errors` lists each problem as 'path: reason'."""

    def __init__(self, source: str, errors: list[str]):
        self.source = source
        self.errors = errors
        shown = "\n".join(f"  - {e}" for e in errors[:50])
        more = f"\n  ... and {len(errors) - 50} more" if len(errors) > 50 else ""
        super().__init__(f"{source}: invalid capability spec ({len(errors)} error(s)):\n{shown}{more}")


def json_schema() -> dict[str, Any]:
    """The JSON Schema of one CapabilitySpec, as pydantic derives it."""
    from trace_envs.families import all_tasks

    schema = CapabilitySpec.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "https://trace-envs.dev/schemas/capability_spec.schema.json"
    families = all_tasks()
    schema["properties"]["family"]["enum"] = list(families)
    # Per family: the roles it must bind and the schema of its params.
    schema["allOf"] = [
        {
            "if": {"properties": {"family": {"const": name}}, "required": ["family"]},
            "then": {
                "properties": {
                    "roles": {"required": list(fam.roles)},
                    "params": _inline(fam.params.model_json_schema()),
                },
                "description": fam.summary,
            },
        }
        for name, fam in families.items()
    ]
    return schema


def _inline(schema: dict[str, Any]) -> dict[str, Any]:
    """A params model's schema without its own `$defs`/`title`, usable inside the spec's schema."""
    return {k: v for k, v in schema.items() if k not in ("$defs", "title")}


def _validator() -> jsonschema.Draft202012Validator:
    """A validator for the schema as the registry stands now (a user's own family is valid once registered)."""
    from trace_envs.families.task import all_tasks, registered_tasks

    # With only built-in families registered, the schema is the committed file (tests/test_registry_and_sync.py keeps
    # it equal to json_schema() over every built-in family), and no family need be imported: building it from the
    # models, every family imported, cost every process's first gym.make about 0.2 s.
    if all(type(t).__module__.startswith("trace_envs.families.") for t in registered_tasks().values()):
        validator = _committed_validator()
        if set(registered_tasks()) <= set(validator.schema["properties"]["family"]["enum"]):
            return validator
    return _validator_for(tuple(all_tasks()))


@lru_cache(maxsize=1)
def _committed_validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(json.loads(SCHEMA_PATH.read_text(encoding="utf-8")))


@lru_cache(maxsize=4)
def _validator_for(families: tuple[str, ...]) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(json_schema())


def _depth(value: Any, limit: int) -> int:
    stack = [(value, 1)]
    deepest = 0
    while stack:
        node, d = stack.pop()
        deepest = max(deepest, d)
        if deepest > limit:
            return deepest
        if isinstance(node, dict):
            stack.extend((v, d + 1) for v in node.values())
        elif isinstance(node, list):
            stack.extend((v, d + 1) for v in node)
    return deepest


MAX_MESSAGE = 300


def _path(err: jsonschema.ValidationError, prefix: str) -> str:
    return prefix + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err.absolute_path) or "(root)"


def _short(value: Any) -> str:
    """A value named in a message without printing all of it."""
    if isinstance(value, dict):
        keys = ", ".join(map(str, list(value)[:6])) + (", ..." if len(value) > 6 else "")
        return f"an object with keys {keys}" if value else "an empty object"
    if isinstance(value, list):
        return f"a list of {len(value)} items"
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _one_of(items: list[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def _describe(err: jsonschema.ValidationError, prefix: str) -> list[str]:
    """Each problem of a schema error as `path: sentence`. A tagged union (the check's clauses, tagged by `type`)
    reports an unknown tag with the valid ones, and a known tag with the problems of that one branch, instead of
    jsonschema's "<the whole clause> is not valid under any of the given schemas"; an enum miss names the closest
    value; no message is cut short."""
    path = _path(err, prefix)
    schema = err.schema if isinstance(err.schema, dict) else {}
    tag = schema.get("discriminator") if err.validator == "oneOf" else None
    if isinstance(tag, dict) and isinstance(err.instance, dict):
        field, mapping = tag.get("propertyName", "type"), tag.get("mapping", {})
        value = err.instance.get(field)
        valid = sorted(mapping)
        what = "clause type" if ".clauses[" in path else f"`{field}` value"
        if not isinstance(value, str) or value not in mapping:
            close = difflib.get_close_matches(str(value), valid, n=1) if isinstance(value, str) else []
            hint = f" (did you mean {close[0]}?)" if close else ""
            got = f"no {what} given" if value is None else f"{_short(value)} is not a {what}"
            return [f"{path}.{field}: {got}; the valid {what}s are {_one_of(valid)}{hint}."]
        branch = [e for e in err.context
                  if e.relative_schema_path and schema["oneOf"][e.relative_schema_path[0]].get("$ref") == mapping[value]]
        if branch:
            return [line for e in branch for line in _describe(e, prefix)]
    message = err.message
    if len(message) > MAX_MESSAGE:
        message = message.replace(repr(err.instance), _short(err.instance))
    if err.validator == "enum" and isinstance(err.instance, str):
        close = difflib.get_close_matches(err.instance, [str(v) for v in err.validator_value], n=1)
        message += f" (did you mean {close[0]}?)" if close else ""
    # A short enum (the families, a kind) is worth listing whole: it is what the user must pick from.
    listable = err.validator == "enum" and len(err.validator_value) <= 30
    if len(message) > MAX_MESSAGE and not listable:
        message = f"{_short(err.instance)} fails the schema's {err.validator!r} rule"
    return [f"{path}: {message}"]


def _clause_types() -> list[str]:
    items = json_schema()["$defs"].get("Check", {}).get("properties", {}).get("clauses", {}).get("items", {})
    return sorted(items.get("discriminator", {}).get("mapping", {}))


def _pydantic_problem(e: dict[str, Any], prefix: str) -> str:
    """One pydantic error as `path: sentence`, the path written like jsonschema's (`.check.clauses[1].ask_pattern`:
    pydantic's loc also holds the clause's tag after its index, which is no field); a clause without a usable `type`
    names the valid clause types."""
    loc, types = list(e["loc"]), set(_clause_types())
    loc = [p for i, p in enumerate(loc)
           if not (i >= 2 and loc[i - 2] == "clauses" and isinstance(loc[i - 1], int) and p in types)]
    path = prefix + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc)
    if e["type"] in ("union_tag_not_found", "union_tag_invalid") and "clauses" in e["loc"]:
        field = e.get("ctx", {}).get("discriminator", "type").strip("'")
        valid = _clause_types()
        return f"{path}.{field}: no valid clause type given; the valid clause types are {_one_of(valid)}."
    return f"{path}: {e['msg']}"


def parse_specs(data: Any, source: str = "<spec>") -> list[CapabilitySpec]:
    """Validate already-parsed JSON (one spec or a list) and return the specs, each with its hash set."""
    if _depth(data, MAX_DEPTH) > MAX_DEPTH:
        raise SpecError(source, [f"(root): nesting deeper than {MAX_DEPTH} levels"])
    items = data if isinstance(data, list) else [data]
    errors: list[str] = []
    for i, item in enumerate(items):
        prefix = f"[{i}]" if isinstance(data, list) else ""
        for err in sorted(_validator().iter_errors(item), key=lambda e: list(e.absolute_path)):
            errors += _describe(err, prefix)
    if errors:
        raise SpecError(source, errors)
    specs: list[CapabilitySpec] = []
    for i, item in enumerate(items):
        try:
            spec = CapabilitySpec.model_validate(item)
        except ValidationError as exc:
            prefix = f"[{i}]" if isinstance(data, list) else ""
            raise SpecError(source, [_pydantic_problem(e, prefix) for e in exc.errors()]) from None
        specs.append(spec.with_hash())
    names = [s.name for s in specs]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise SpecError(source, [f"duplicate spec name(s): {', '.join(dupes)}"])
    return specs


def load_specs(path: str | Path) -> list[CapabilitySpec]:
    """Read one spec file (a spec object or a list of them, e.g. the miner's capabilities.json)."""
    p = Path(path)
    try:
        size = p.stat().st_size
    except OSError as exc:
        raise SpecError(str(p), [f"cannot read file: {exc.strerror}"]) from None
    if size > MAX_SPEC_FILE_BYTES:
        raise SpecError(str(p), [f"file is {size} bytes; the limit is {MAX_SPEC_FILE_BYTES}"])
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise SpecError(str(p), ["file is not UTF-8 text"]) from None
    try:
        data = json.loads(text, parse_int=_parse_int)
    except RecursionError:
        raise SpecError(str(p), [f"nesting deeper than {MAX_DEPTH} levels"]) from None
    except json.JSONDecodeError as exc:
        raise SpecError(str(p), [f"line {exc.lineno} column {exc.colno}: invalid JSON: {exc.msg}"]) from None
    huge = [f"{path or '(root)'}: an integer of {node.digits} digits; the limit is {sys.get_int_max_str_digits()} digits"
            for path, node in _nodes(data) if isinstance(node, _HugeInt)]
    if huge:
        raise SpecError(str(p), huge)
    return parse_specs(data, str(p))


class _HugeInt:
    """Stands in for an integer literal with more digits than Python converts (4300 by default), so that the error
    names its field instead of json's position-less ValueError."""

    def __init__(self, digits: int) -> None:
        self.digits = digits


def _parse_int(text: str) -> int | _HugeInt:
    try:
        return int(text)
    except ValueError:
        return _HugeInt(len(text.lstrip("-")))


def _nodes(value: Any) -> Any:
    """Every value in parsed JSON with its path written like jsonschema's (`[0].knobs.entities`)."""
    stack = [("", value)]
    while stack:
        path, node = stack.pop()
        yield path, node
        if isinstance(node, dict):
            stack.extend((f"{path}.{k}", v) for k, v in reversed(node.items()))
        elif isinstance(node, list):
            stack.extend((f"{path}[{i}]", v) for i, v in reversed(list(enumerate(node))))


def write_schema(path: Path = SCHEMA_PATH) -> Path:
    path.write_text(json.dumps(json_schema(), indent=2, sort_keys=True) + "\n")
    return path


def spec_beside(module_file: str, **readable: Any) -> CapabilitySpec:
    """The spec in `spec.json` beside a generated env module, checked against the module's readable copies of its
    fields (`policy`, `knobs`, `check`, ...), so an env module and its spec cannot drift apart unnoticed."""
    path = Path(module_file).with_name("spec.json")
    specs = load_specs(path)
    if len(specs) != 1:
        raise SpecError(str(path), [f"expected one spec beside {Path(module_file).name}, found {len(specs)}"])
    spec = specs[0]
    problems = []
    for field, value in readable.items():
        current = getattr(spec, field)
        shown = type(current).model_validate(value) if isinstance(current, BaseModel) else value
        if shown != current:
            problems.append(f"{field}: {Path(module_file).name} and spec.json disagree; regenerate the env")
    if spec.spec_hash is not None and spec.spec_hash != spec.compute_hash():
        problems.append("spec_hash does not match the spec's content (edited by hand?); regenerate the env")
    if problems:
        raise SpecError(str(path), problems)
    return spec
