"""Device state as the user's own check tools print it, read into fields and written back.

In tau2 telecom the device is reachable only through the user's tools, whose results are plain text:

    Airplane Mode: ON                       ("Label: value" lines: check_network_status)
    SIM Card Status: missing
    Data Roaming Enabled: No
    Wi-Fi Calling is currently turned ON.   (sentences: check_wifi_calling_status, and what a toggle says it did:
    Airplane Mode is now OFF.                toggle_airplane_mode)

`parse_device_text` reads such text into `{field: value}`: the field a slug of the label without a trailing
"enabled" / "status" / "radio" (so "Data Roaming Enabled: No" and "Data Roaming is now ON." name one field,
`data_roaming`), yes / no / on / off / enabled / disabled read as "on" or "off" (one vocabulary for both styles),
other values as printed. A value that lists several things ("Status Bar: ✈️ Airplane Mode | 🔋 80%") is no field.
`render_device_text` writes a real text back with the fields' current values, each in the style the text printed it
("No", "OFF"). Nothing here runs text.
"""

from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache
from typing import Any

_LINE = re.compile(r"^\s*([A-Za-z][A-Za-z0-9 ()/\-]{0,40}?)\s*:\s*(\S[^\n]{0,60}?)\s*$")
_SENTENCE = re.compile(
    r"\b([A-Z][A-Za-z0-9\-]*(?: [A-Za-z0-9\-]+){0,3}?) (?:is|are) (?:now |currently )?(?:turned )?"
    r"(ON|OFF|on|off|enabled|disabled)\b"
)
_ON, _OFF = frozenset({"yes", "on", "enabled", "true"}), frozenset({"no", "off", "disabled", "false"})
_SUFFIXES = ("_enabled", "_status", "_radio")


def field_name(label: str) -> str:
    """"Data Roaming Enabled" -> "data_roaming", "SIM Card Status" -> "sim_card", "Wi-Fi Calling" -> "wi_fi_calling"."""
    slug = re.sub(r"[^a-z0-9]+", "_", label.lower()).strip("_")
    for suffix in _SUFFIXES:
        if slug.endswith(suffix) and len(slug) > len(suffix):
            return slug[: -len(suffix)]
    return slug


def canonical(value: str) -> str:
    v = value.strip().rstrip(".").strip()
    low = v.lower()
    return "on" if low in _ON else "off" if low in _OFF else v


def _fields(text: str) -> tuple[tuple[str, str, str, int, int], ...]:
    """(field, label, printed value, start, end of the value in `text`) for every field `text` shows."""
    return _read_fields(text) if len(text) <= 5_000 else _read_fields.__wrapped__(text)


@lru_cache(maxsize=1024)  # a scenario reads its few real check texts again on every reset
def _read_fields(text: str) -> tuple[tuple[str, str, str, int, int], ...]:
    out: list[tuple[str, str, str, int, int]] = []
    offset = 0
    for line in text.splitlines(keepends=True):
        m = _LINE.match(line.rstrip("\r\n"))
        if m and "|" not in m.group(2) and not m.group(2).startswith("//"):
            out.append((field_name(m.group(1)), m.group(1), m.group(2), offset + m.start(2), offset + m.end(2)))
        else:
            for s in _SENTENCE.finditer(line):
                out.append((field_name(s.group(1)), s.group(1), s.group(2), offset + s.start(2), offset + s.end(2)))
        offset += len(line)
    return tuple(out)


def parse_device_text(text: Any) -> dict[str, str]:
    """The fields a check tool's text shows (the first value of a field that appears twice), {} for other text."""
    if not isinstance(text, str) or len(text) > 5_000:
        return {}
    out: dict[str, str] = {}
    for name, _, value, _, _ in _fields(text):
        if name:
            out.setdefault(name, canonical(value))
    return out


def field_labels(text: str) -> dict[str, str]:
    """Field -> the label the text prints for it ("data_roaming" -> "Data Roaming Enabled")."""
    out: dict[str, str] = {}
    for name, label, _, _, _ in _fields(text):
        out.setdefault(name, label)
    return out


def styled(value: Any, printed: str) -> str:
    """`value` ("on" / "off" or another) in the style `printed` shows ("Yes", "ON", "enabled")."""
    v = str(value)
    return _styled(v, printed) if v in ("on", "off") else v


@lru_cache(maxsize=1024)  # every device read of every step restyles the same few printed values
def _styled(v: str, printed: str) -> str:
    low = printed.lower()
    pair = next((p for p in (("yes", "no"), ("on", "off"), ("enabled", "disabled"), ("true", "false"))
                 if low in p), ("on", "off"))
    word = pair[0] if v == "on" else pair[1]
    if printed.isupper():
        return word.upper()
    return word.capitalize() if printed[:1].isupper() else word


def render_device_text(text: str, values: dict[str, Any]) -> str:
    """`text` with each field it shows set to `values[field]` (fields not in `values` stay as printed)."""
    fields = _fields(text)
    # each value with its type: True and 1 are equal keys, and are written "True" and "1"
    shown = tuple((name, type(values[name]), values[name]) for name, *_ in fields if name in values)
    try:
        return _rendered(text, shown)
    except TypeError:  # a value that is no hashable scalar: rendered afresh
        return _render(text, {name: value for name, _, value in shown})


@lru_cache(maxsize=1024)  # a device's check text is rendered again on every read, mostly with the same few values
def _rendered(text: str, shown: tuple[tuple[str, type, Any], ...]) -> str:
    return _render(text, {name: value for name, _, value in shown})


def _render(text: str, values: dict[str, Any]) -> str:
    out, last = [], 0
    for name, _, printed, start, end in _fields(text):
        if name in values:
            out += [text[last:start], styled(values[name], printed)]
            last = end
    return "".join(out) + text[last:]


def check_text_changes(runs: list[Any], checks: set[str]) -> dict[str, dict[str, dict[str, list[Any]]]]:
    """Per user-side action: the device fields the user's own `checks` (the user tools that only show the device,
    check_*) show it changed (check tool -> field -> the most common [before, after] over the runs, each run
    counted once).

    Before is the field's value in the last text of that check before the action; after is what the action's own
    reply says it set ("Airplane Mode is now OFF."), else the value in the next text of the same check, when the
    action is the only one between the two texts or its own reply names the field."""
    seen: dict[str, dict[str, dict[str, Counter]]] = {}
    for run in runs:
        calls = [c for c in run.user_calls if not c.error and c.result]
        shown = [parse_device_text(c.result) if c.name in checks else {} for c in calls]
        pairs: dict[tuple[str, str, str], tuple[str, str]] = {}
        for i, action in enumerate(calls):
            if action.name in checks:
                continue
            own = parse_device_text(action.result)
            for j in range(i - 1, -1, -1):
                check, before = calls[j], shown[j]
                if not before or any(c.name == check.name for c in calls[j + 1:i]):
                    continue  # a later text of this check is the one before the action
                k = next((k for k in range(i + 1, len(calls)) if calls[k].name == check.name
                          and calls[k].arguments == check.arguments), None)
                after = shown[k] if k is not None else {}
                alone = k is not None and sum(c.name not in checks for c in calls[j + 1:k]) == 1
                for path, was in before.items():
                    now = own[path] if path in own else after.get(path) if alone else None
                    if now is not None and now != was:
                        pairs.setdefault((action.name, check.name, path), (was, now))
        for (tool, check, path), pair in pairs.items():
            seen.setdefault(tool, {}).setdefault(check, {}).setdefault(path, Counter())[pair] += 1
    return {
        tool: {check: {path: list(c.most_common(1)[0][0]) for path, c in sorted(paths.items())}
               for check, paths in by_check.items()}
        for tool, by_check in seen.items()
    }
