"""Render a CapabilitySpec through its family's jinja2 template into a short, readable env module.

The module reads like a hand-written env for the capability: its policy excerpt, knobs and check as Python literals,
over the family's env class (which holds the scenario builder). Every value reaches the module through an escaping
filter, and the environment refuses to print any value that did not go through one: spec text can only ever become
the content of a Python literal, never code.
"""

from __future__ import annotations

import keyword
import re
from functools import lru_cache
from typing import Any

import jinja2

from trace_envs.checks.clauses import Check
from trace_envs.families import get_task
from trace_envs.generate.literal import pyliteral
from trace_envs.paths import templates_dir
from trace_envs.spec.model import CapabilitySpec

class Escaped(str):
    """A value an escaping filter produced; the only kind the template environment will print."""


class UnescapedValueError(jinja2.TemplateError):
    pass


def _pystr(value: object) -> Escaped:
    # repr() of a str is always a valid, inert Python string literal, whatever the text holds.
    return Escaped(repr(str(value)))


def _pyliteral(value: Any, column: int = 0) -> Escaped:
    return Escaped(pyliteral(value, column=column))


def _identifier(value: object) -> Escaped:
    text = str(value)
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,80}", text) or keyword.iskeyword(text):
        raise UnescapedValueError(f"{text!r} is not a safe Python identifier")
    return Escaped(text)


def _module_path(value: object) -> Escaped:
    parts = str(value).split(".")
    return Escaped(".".join(_identifier(p) for p in parts))


def _comment(value: object) -> Escaped:
    return Escaped(re.sub(r"[^A-Za-z0-9 _.,:/-]", "_", str(value))[:200])


def _md(value: object) -> Escaped:
    """Inline markdown text: one line, markdown's code, emphasis, link, html and table characters escaped."""
    if value is None or value == "" or value == []:
        return Escaped("-")
    text = ", ".join(map(str, value)) if isinstance(value, list) else str(value)
    text = re.sub(r"\s+", " ", text).strip()
    return Escaped(re.sub(r"([\\`*_{}\[\]<>|#])", r"\\\1", text))


def _code(value: object) -> Escaped:
    """An inline code span (no escapes apply inside one: its fence is longer than any run of backticks it holds)."""
    text = re.sub(r"\s+", " ", str(value)).strip() or "-"
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return Escaped(f"{fence}{pad}{text}{pad}{fence}")


def _block(value: object) -> Escaped:
    """A fenced block whose fence is longer than any run of backticks in the text (which cannot close it)."""
    text = str(value).rstrip()
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return Escaped(f"{fence}text\n{text}\n{fence}")


def _finalize(value: object) -> object:
    if isinstance(value, Escaped):
        return value
    raise UnescapedValueError(f"template printed a value without an escaping filter: {str(value)[:60]!r}")


@lru_cache(maxsize=4)
def environment(root: str | None = None) -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(root or str(templates_dir())),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
        finalize=_finalize,
    )
    env.filters.update(
        pystr=_pystr, pyliteral=_pyliteral, identifier=_identifier, module_path=_module_path, comment=_comment,
        md=_md, code=_code, block=_block,
    )
    return env


def class_name(spec_name: str) -> str:
    return "".join(part.capitalize() for part in spec_name.split("_")) + "Env"


def readable_check(check: Check) -> dict[str, Any]:
    """The check as plain data without default values, each clause led by its id and type (what an env module shows)."""
    clauses = [
        {"id": c.id, "type": c.type, **c.model_dump(mode="json", exclude_defaults=True, exclude={"id", "type"})}
        for c in check.clauses
    ]
    out: dict[str, Any] = {"clauses": clauses}
    if check.applies_if:
        out["applies_if"] = [ref.model_dump(mode="json", exclude_defaults=True) for ref in check.applies_if]
    return out


def render_module(spec: CapabilitySpec) -> str:
    """The env module's source for `spec` (which must carry its hash)."""
    family = get_task(spec.family)
    try:
        template = environment().get_template(family.template)
    except jinja2.TemplateNotFound as exc:
        raise ValueError(f"no template for family {spec.family!r} (looked for templates/{family.template})") from exc
    docstring = f"trace/{spec.name}: {spec.description}\n\nFamily: {spec.family} ({family.summary})\n"
    return template.render(
        spec=spec,
        docstring=docstring,
        env_module=family.env_module,
        env_class=family.env_class.__name__,
        class_name=class_name(spec.name),
        knobs=spec.knobs.model_dump(mode="json", exclude_defaults=True),
        check=readable_check(spec.check),
    )

