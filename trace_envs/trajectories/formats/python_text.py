"""Reading the Python text ToolSandbox logs, as data only: tool calls written as code and tool results as reprs.

Nothing here runs what it reads. A tool call is parsed with `ast.parse` and accepted only in two shapes, with every
argument a literal (`ast.literal_eval` on its node):

- one call, `search_contacts(name='Fredrik')` (keyword or positional literal arguments);
- the three lines ToolSandbox writes for an OpenAI-style call:
  `call_x_parameters = {'name': 'Fredrik'}` / `call_x_response = search_contacts(**call_x_parameters)` /
  `print(repr(call_x_response))`.

Anything else (names, attribute access, nested calls, several statements, `**other`) is refused with a reason. A result
is a repr (`"[{'name': 'Fredrik', ...}]"`, `"True"`, `"None"`) read with `ast.literal_eval`, or an exception line
(`ConnectionError: Cellular service is not enabled`, a `Traceback ...`) that names the exception type and message.
"""

from __future__ import annotations

import ast
import json
import math
from typing import Any

from trace_envs.trajectories.tool_errors import exception_in

MAX_CODE_CHARS = 100_000
"""Longer code or results are not parsed (a real tool call is a few hundred characters)."""



class NotACall(ValueError):
    """Tool-call code outside the accepted shapes; the message says why."""


def _literal(node: ast.AST, what: str) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
        raise NotACall(f"{what} is not a literal") from None


def _call_parts(call: ast.Call, params: dict[str, Any] | None, params_name: str | None) -> tuple[str, dict[str, Any]]:
    if not isinstance(call.func, ast.Name):
        raise NotACall("the called thing is not a plain tool name")
    arguments: dict[str, Any] = {}
    for i, arg in enumerate(call.args):
        if isinstance(arg, ast.Starred):
            raise NotACall("*arguments are not literals")
        arguments[f"arg_{i}"] = _literal(arg, f"positional argument {i}")
    for kw in call.keywords:
        if kw.arg is None:
            if params is None or not (isinstance(kw.value, ast.Name) and kw.value.id == params_name):
                raise NotACall("**arguments are not literals")
            arguments.update(params)
        else:
            arguments[kw.arg] = _literal(kw.value, f"argument {kw.arg!r}")
    return call.func.id, arguments


def _is_print_repr(stmt: ast.stmt, name: str) -> bool:
    """`print(repr(<name>))`."""
    if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)):
        return False
    outer = stmt.value
    if not (isinstance(outer.func, ast.Name) and outer.func.id == "print" and len(outer.args) == 1):
        return False
    inner = outer.args[0]
    return (
        isinstance(inner, ast.Call) and isinstance(inner.func, ast.Name) and inner.func.id == "repr"
        and len(inner.args) == 1 and isinstance(inner.args[0], ast.Name) and inner.args[0].id == name
    )


def parse_tool_call(code: str) -> tuple[str, dict[str, Any]]:
    """`(tool name, arguments)` of a tool call written as code; `NotACall` for anything else."""
    if not isinstance(code, str) or not code.strip():
        raise NotACall("no code")
    if len(code) > MAX_CODE_CHARS:
        raise NotACall(f"code longer than {MAX_CODE_CHARS} characters")
    try:
        body = ast.parse(code, mode="exec").body
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise NotACall(f"not valid Python ({type(exc).__name__})") from None
    if len(body) == 1 and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Call):
        return _call_parts(body[0].value, None, None)
    if len(body) == 3 and all(isinstance(s, ast.Assign) and len(s.targets) == 1 for s in body[:2]):
        (t1,), (t2,) = body[0].targets, body[1].targets
        if isinstance(t1, ast.Name) and isinstance(t2, ast.Name) and isinstance(body[1].value, ast.Call):
            params = _literal(body[0].value, "the parameters")
            if not isinstance(params, dict) or not all(isinstance(k, str) for k in params):
                raise NotACall("the parameters are not a dict with string keys")
            if not _is_print_repr(body[2], t2.id):
                raise NotACall("the third line is not print(repr(<response>))")
            return _call_parts(body[1].value, params, t1.id)
    raise NotACall("not a single tool call")


def _jsonable(value: Any) -> Any:
    """A literal as JSON data (tuples and sets as lists); ValueError when it holds bytes, complex numbers or
    non-finite floats."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError("non-finite float")
        return value
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((_jsonable(v) for v in value), key=lambda v: json.dumps(v, sort_keys=True))
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    raise ValueError(type(value).__name__)


def read_result(text: str | None) -> tuple[str | None, tuple[str, str] | None]:
    """A tool result as `(JSON text or the text as it was, exception or None)`.

    A repr literal becomes its JSON text (`"[{'name': 'Fredrik'}]"` -> `[{"name": "Fredrik"}]`, `"None"` -> `null`), so
    that record shapes read the same as other sources'; an exception line is kept as text and reported."""
    if text is None:
        return None, None
    if len(text) <= MAX_CODE_CHARS:
        try:
            value = ast.literal_eval(text.strip())
        except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
            pass
        else:
            try:
                return json.dumps(_jsonable(value), ensure_ascii=False), None
            except (ValueError, RecursionError):
                return text, None
    return text, exception_in(text)
