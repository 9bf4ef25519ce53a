"""Invariants that every real record of a read tool satisfies, learned from the runs; generated records must too.

Four kinds, each checked on a record (a parsed tool result) against the domain's current time when it needs one:

- `order`: every date at `before` comes no later than every date at `after` (`created_at` before `flights.*.date`;
  `$now` stands for the current time: `created_at` never lies in the future);
- `sorted`: the dates at a list path are in order (`flights.*.date`: legs in date order);
- `sum`: the number at `total` (or the sum of the numbers there) equals the sum of the numbers at `parts`
  (an order's `total` is the sum of `items.*.price`);
- `owner`: records read in one conversation share the value at `path` (one `user_id` per request);
- `status_time`: where a list item has a status and a date, each status value lies on one side of the current time
  (`flights.*.status` `landed` only in the past, `available` only in the future).

Paths are dotted; `*` stands for every item of a list.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from functools import lru_cache
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

MIN_SUPPORT = 5
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2})?)?")
NOW = "$now"


class Invariant(BaseModel):
    """One learned invariant of a read tool's records (see the module docstring for the kinds)."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["order", "sorted", "sum", "owner", "status_time"]
    before: str | None = None
    after: str | None = None
    path: str | None = None
    total: str | None = None
    parts: str | None = None
    status: str | None = None
    date: str | None = None
    past: list[str] = Field(default_factory=list)
    future: list[str] = Field(default_factory=list)
    support: int = Field(default=0, description="How many real records (or runs) it was learned from.")

    def describe(self) -> str:
        if self.kind == "order":
            return f"{self.before} <= {self.after}"
        if self.kind == "sorted":
            return f"{self.path} in date order"
        if self.kind == "sum":
            return f"{self.total} = sum of {self.parts}"
        if self.kind == "owner":
            return f"one {self.path} for the records of one request"
        return f"{self.status} {'/'.join(self.past)} only before now, {'/'.join(self.future)} only after"


def values_at(record: Any, path: str) -> list[Any]:
    """Every value at a dotted path, `*` expanding list items (and dict values)."""
    nodes = [record]
    for part in path.split("."):
        nxt = []
        for node in nodes:
            if part == "*":
                if isinstance(node, list):
                    nxt.extend(node)
                elif isinstance(node, dict):
                    nxt.extend(node.values())
            elif isinstance(node, dict) and part in node:
                nxt.append(node[part])
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                nxt.append(node[int(part)])
        nodes = nxt
    return nodes


def is_date(value: Any) -> bool:
    return isinstance(value, str) and _DATE.match(value) is not None


def date_key(value: str) -> str:
    """A sortable key for an ISO date or date-time ('2024-05-15' sorts before '2024-05-15T08:00')."""
    return value.replace(" ", "T")


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def leaf_paths(record: Any, prefix: str = "", depth: int = 0) -> dict[str, list[Any]]:
    """Path patterns (`*` for list items) to the scalar values found there."""
    out: dict[str, list[Any]] = defaultdict(list)
    _walk_leaves(record, prefix, depth, out)
    return out


def _walk_leaves(node: Any, prefix: str, depth: int, out: dict[str, list[Any]]) -> None:
    # one dict for the whole walk: merging each level's paths into its parent's was most of a scenario's build
    if depth > 5:
        return
    if isinstance(node, dict):
        for k, v in node.items():
            if isinstance(k, str) and _plain_key(k):
                _walk_leaves(v, f"{prefix}{k}.", depth + 1, out)
    elif isinstance(node, list):
        for item in node[:50]:
            _walk_leaves(item, f"{prefix}*.", depth + 1, out)
    elif prefix and node is not None and not isinstance(node, bool):
        out[prefix[:-1]].append(node)


@lru_cache(maxsize=4096)
def _plain_key(key: str) -> bool:
    return key.replace("_", "").replace(" ", "").isalnum()


def violations(record: Any, invariants: Iterable[Invariant], now: str | None = None) -> list[str]:
    """The invariants `record` breaks (owner invariants concern several records: see `owner_violations`)."""
    out = []
    for inv in invariants:
        if inv.kind == "order":
            if not _in_order(_dates(record, inv.before, now), _dates(record, inv.after, now)):
                out.append(inv.describe())
        elif inv.kind == "sorted":
            dates = [date_key(v) for v in values_at(record, inv.path or "") if is_date(v)]
            if dates != sorted(dates):
                out.append(inv.describe())
        elif inv.kind == "sum":
            total = [n for n in map(_number, values_at(record, inv.total or "")) if n is not None]
            parts = [n for n in map(_number, values_at(record, inv.parts or "")) if n is not None]
            if total and parts and abs(sum(total) - sum(parts)) > 0.011:
                out.append(inv.describe())
        elif inv.kind == "status_time" and now is not None:
            for item in values_at(record, (inv.status or "").rsplit(".", 1)[0]):
                status = values_at(item, (inv.status or "").rsplit(".", 1)[-1])
                date = values_at(item, (inv.date or "").rsplit(".", 1)[-1])
                if status and date and is_date(date[0]):
                    past = date_key(date[0])[:10] < date_key(now)[:10]
                    if (status[0] in inv.past and not past) or (status[0] in inv.future and past):
                        out.append(inv.describe())
                        break
    return out


def owner_violations(records: list[Any], invariants: Iterable[Invariant]) -> list[str]:
    """The owner invariants a set of records read in one request breaks."""
    out = []
    for inv in invariants:
        if inv.kind == "owner":
            owners = {str(v) for r in records for v in values_at(r, inv.path or "")}
            if len(owners) > 1:
                out.append(inv.describe())
    return out


def _in_order(before: list[str], after: list[str]) -> bool:
    """Every date of `before` no later than every date of `after`, compared by day when either side has no time."""
    if not before or not after:
        return True
    a, b = max(before), min(after)
    return (a[:10] <= b[:10]) if (len(a) == 10 or len(b) == 10) else a <= b


def _dates(record: Any, path: str | None, now: str | None) -> list[str]:
    if path == NOW:
        return [date_key(now)] if now else []
    return [date_key(v) for v in values_at(record, path or "") if is_date(v)]


def learn_invariants(records: list[dict[str, Any]], runs_records: list[list[dict[str, Any]]],
                     now: str | None = None) -> list[Invariant]:
    """The invariants every one of `records` (distinct real results of one read tool) satisfies, with at least
    `MIN_SUPPORT` records behind each; `runs_records` groups the records read within each run (for `owner`)."""
    if len(records) < MIN_SUPPORT:
        return []
    per_record = [leaf_paths(r) for r in records]
    date_paths = sorted({p for lp in per_record for p, vals in lp.items() if vals and all(is_date(v) for v in vals)})
    out: list[Invariant] = []
    for a in date_paths:
        for b in [*date_paths, NOW] if now else date_paths:
            if a == b:
                continue
            support, ok = _order_support(records, a, b, now)
            if ok and support >= MIN_SUPPORT and not _implied(out, a, b):
                out.append(Invariant(kind="order", before=a, after=b, support=support))
        if now:
            support, ok = _order_support(records, NOW, a, now)
            if ok and support >= MIN_SUPPORT:
                out.append(Invariant(kind="order", before=NOW, after=a, support=support))
        if "*" in a:
            support, ok = _sorted_support(records, a)
            if ok and support >= MIN_SUPPORT:
                out.append(Invariant(kind="sorted", path=a, support=support))
    out += _sums(records, per_record)
    out += _owners(runs_records)
    if now:
        out += _status_times(records, per_record, now)
    return out


def _order_support(records: list[Any], a: str, b: str, now: str | None) -> tuple[int, bool]:
    support = 0
    for r in records:
        before, after = _dates(r, a, now), _dates(r, b, now)
        if before and after:
            if not _in_order(before, after):
                return support, False
            support += 1
    return support, True


def _implied(found: list[Invariant], a: str, b: str) -> bool:
    """a <= b already follows from a <= x and x <= b."""
    firsts = {i.after for i in found if i.kind == "order" and i.before == a}
    return any(i.kind == "order" and i.before in firsts and i.after == b for i in found)


def _sorted_support(records: list[Any], path: str) -> tuple[int, bool]:
    support = 0
    for r in records:
        dates = [date_key(v) for v in values_at(r, path) if is_date(v)]
        if len(dates) >= 2:
            if dates != sorted(dates):
                return support, False
            support += 1
    return support, True


def _sums(records: list[Any], per_record: list[dict[str, list[Any]]]) -> list[Invariant]:
    numeric = sorted({p for lp in per_record for p, vals in lp.items() if vals and all(_number(v) is not None for v in vals)})
    lists = [p for p in numeric if "*" in p]
    out = []
    for parts in lists:
        for total in numeric:
            if total == parts or total.startswith(parts.rsplit("*", 1)[0]):
                continue
            support, ok = 0, True
            for r in records:
                t = [n for n in map(_number, values_at(r, total)) if n is not None]
                p = [n for n in map(_number, values_at(r, parts)) if n is not None]
                if not t or not p:
                    continue
                if abs(sum(t) - sum(p)) > 0.011 or len(p) < 1:
                    ok = False
                    break
                support += 1
            if ok and support >= MIN_SUPPORT and any(len(values_at(r, parts)) > 1 for r in records):
                out.append(Invariant(kind="sum", total=total, parts=parts, support=support))
    return out


def _owners(runs_records: list[list[dict[str, Any]]]) -> list[Invariant]:
    """Top-level string fields whose value is shared by the records of every run that read several, and that
    differs between runs (a field every record shares, like a constant status, is no owner)."""
    groups = [g for g in runs_records if len({id(r) for r in g}) >= 2]
    if len(groups) < 3:
        return []
    candidates = None
    for g in groups:
        fields = {k for k, v in g[0].items() if isinstance(v, str) and all(r.get(k) == v for r in g)}
        candidates = fields if candidates is None else candidates & fields
    out = []
    for field in sorted(candidates or ()):
        values = {g[0].get(field) for g in groups}
        if len(values) >= 2:
            out.append(Invariant(kind="owner", path=field, support=len(groups)))
    return out


def _status_times(records: list[Any], per_record: list[dict[str, list[Any]]], now: str) -> list[Invariant]:
    out = []
    paths = {p for lp in per_record for p in lp if "*" in p}
    for status in sorted(paths):
        head = status.rsplit(".", 1)[0]
        for date in sorted(p for p in paths if p.rsplit(".", 1)[0] == head and p != status):
            sides: dict[str, set[bool]] = defaultdict(set)
            for r in records:
                for item in values_at(r, head):
                    s, d = values_at(item, status.rsplit(".", 1)[-1]), values_at(item, date.rsplit(".", 1)[-1])
                    if s and d and isinstance(s[0], str) and is_date(d[0]):
                        sides[s[0]].add(date_key(d[0])[:10] < date_key(now)[:10])
            if 2 <= len(sides) <= 8:
                past = sorted(v for v, s in sides.items() if s == {True})
                future = sorted(v for v, s in sides.items() if s == {False})
                if past and future:
                    out.append(Invariant(kind="status_time", status=status, date=date, past=past, future=future,
                                         support=len(records)))
    return out
