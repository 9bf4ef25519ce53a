"""Reading spec files from anywhere (the miner, a colleague, the internet): untrusted until proven otherwise.

A file is size-checked, parsed with a nesting limit, validated against the JSON Schema with every error listed (path
and reason), then loaded into `CapabilitySpec`. Names are slugs, so nothing in a spec can reach outside an output folder.
"""

from __future__ import annotations

import json
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
    from trace_envs.families import all_families

    schema = CapabilitySpec.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "https://trace-envs.dev/schemas/capability_spec.schema.json"
    families = all_families()
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
    from trace_envs.families import all_families

    return _validator_for(tuple(all_families()))


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


def parse_specs(data: Any, source: str = "<spec>") -> list[CapabilitySpec]:
    """Validate already-parsed JSON (one spec or a list) and return the specs, each with its hash set."""
    if _depth(data, MAX_DEPTH) > MAX_DEPTH:
        raise SpecError(source, [f"(root): nesting deeper than {MAX_DEPTH} levels"])
    items = data if isinstance(data, list) else [data]
    errors: list[str] = []
    for i, item in enumerate(items):
        prefix = f"[{i}]" if isinstance(data, list) else ""
        for err in sorted(_validator().iter_errors(item), key=lambda e: list(e.absolute_path)):
            path = prefix + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err.absolute_path)
            errors.append(f"{path or '(root)'}: {err.message[:300]}")
    if errors:
        raise SpecError(source, errors)
    specs: list[CapabilitySpec] = []
    for i, item in enumerate(items):
        try:
            spec = CapabilitySpec.model_validate(item)
        except ValidationError as exc:
            prefix = f"[{i}]" if isinstance(data, list) else ""
            raise SpecError(
                source,
                [f"{prefix}.{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()],
            ) from None
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
        data = json.loads(text)
    except RecursionError:
        raise SpecError(str(p), [f"nesting deeper than {MAX_DEPTH} levels"]) from None
    except json.JSONDecodeError as exc:
        raise SpecError(str(p), [f"line {exc.lineno} column {exc.colno}: invalid JSON: {exc.msg}"]) from None
    return parse_specs(data, str(p))


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
