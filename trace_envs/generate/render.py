"""Render a CapabilitySpec through its family's jinja2 template into a self-contained env module.

Every value reaches the module through an escaping filter, and the environment refuses to print any value that did
not go through one: spec text can only ever become the content of a Python string literal, never code.
"""

from __future__ import annotations

import keyword
import re
from functools import lru_cache
from pathlib import Path

import jinja2

from trace_envs.paths import templates_dir
from trace_envs.spec.model import CapabilitySpec

GENERATOR_VERSION = "1"


class Escaped(str):
    """A value an escaping filter produced; the only kind the template environment will print."""


class UnescapedValueError(jinja2.TemplateError):
    pass


def _pystr(value: object) -> Escaped:
    # repr() of a str is always a valid, inert Python string literal, whatever the text holds.
    return Escaped(repr(str(value)))


def _identifier(value: object) -> Escaped:
    text = str(value)
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,80}", text) or keyword.iskeyword(text):
        raise UnescapedValueError(f"{text!r} is not a safe Python identifier")
    return Escaped(text)


def _comment(value: object) -> Escaped:
    return Escaped(re.sub(r"[^A-Za-z0-9 _.,:/-]", "_", str(value))[:200])


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
    env.filters.update(pystr=_pystr, identifier=_identifier, comment=_comment)
    return env


def class_name(spec_name: str) -> str:
    return "".join(part.capitalize() for part in spec_name.split("_")) + "Env"


def spec_json(spec: CapabilitySpec) -> str:
    return spec.model_dump_json(indent=None, exclude_none=False)


def render_module(spec: CapabilitySpec) -> str:
    """The env module's source for `spec` (which must carry its hash)."""
    template_name = f"{spec.family}.py.j2"
    try:
        template = environment().get_template(template_name)
    except jinja2.TemplateNotFound as exc:
        raise ValueError(f"no template for family {spec.family!r} (looked for templates/{template_name})") from exc
    return template.render(spec=spec, spec_json=spec_json(spec), class_name=class_name(spec.name))


def template_path(family: str) -> Path:
    return templates_dir() / f"{family}.py.j2"
