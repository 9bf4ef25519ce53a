"""A target tool as a ToolSpec, from the DomainProfile inferred from real runs: same name, argument schema (types,
required, example values), kind and a real result example, so what an env teaches transfers back to the target."""

from __future__ import annotations

import re
from typing import Any

from trace_envs.spec.model import ARG_NAME_PATTERN, ToolSpec
from trace_envs.trajectories.example_values import MAX_EXAMPLES, within_bound


def tool_spec(profile: Any, name: str, *, description: str | None = None, result_example: Any = None) -> ToolSpec:
    """The profile's tool `name` (an agent tool, else a user-side one) as a ToolSpec; `description` and
    `result_example` override the profile's."""
    t = (profile.tools.get(name) or getattr(profile, "user_tools", {}).get(name)) if profile is not None else None
    if t is None:
        return ToolSpec(name=name, description=description or "")
    params = t.parameters if isinstance(t.parameters, dict) else {}
    props: dict[str, Any] = {}
    for arg, schema in dict(params.get("properties", {})).items():
        if not re.fullmatch(ARG_NAME_PATTERN, arg):
            continue
        schema = dict(schema) if isinstance(schema, dict) else {}
        # Envs build their ids and default arguments from these: size-bounded again, as a profile may come from
        # anywhere (outliers are the profile's to drop: it saw more of the argument's values than these few).
        examples = within_bound(getattr(t, "examples", {}).get(arg) or [])[:MAX_EXAMPLES]
        if examples:
            schema.setdefault("examples", examples)
            first = examples[0]
            if schema.get("type") == "array" and isinstance(first, list) and first and "items" not in schema:
                schema["items"] = {"type": _json_type(first[0])}
        props[arg] = schema
    required = [r for r in params.get("required", []) if r in props]
    return ToolSpec(
        name=name,
        description=(description if description is not None else getattr(t, "description", None) or "")[:4000],
        kind=t.kind,
        parameters={"type": "object", "properties": props, "required": required},
        result_example=t.result_example if result_example is None else result_example,
        result_examples=list(getattr(t, "result_examples", []) or [])[:50],
        effect=dict(getattr(t, "effect", {}) or {}),
        arg_sources=dict(getattr(t, "arg_sources", {}) or {}),
        result_style=getattr(t, "result_style", "json"),
    )


def _json_type(value: Any) -> str:
    for kind, types in (("boolean", bool), ("integer", int), ("number", float), ("string", str), ("array", list)):
        if isinstance(value, types):
            return kind
    return "object" if isinstance(value, dict) else "null"
