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
from pydantic import ValidationError

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
    schema = CapabilitySpec.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "https://trace-envs.dev/schemas/capability_spec.schema.json"
    return schema


@lru_cache(maxsize=1)
def _validator() -> jsonschema.Draft202012Validator:
    schema = json.loads(SCHEMA_PATH.read_text()) if SCHEMA_PATH.exists() else json_schema()
    return jsonschema.Draft202012Validator(schema)


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
