"""A domain policy's conditions as data: when each write is allowed, when it needs a human, and the procedure the
policy asks for (confirm writes, identify the user, facts to obtain first).

Specs carry the rules that govern their tools, so a generated env can hold every condition but the checked one
neutral (a cabin-rule scenario is booked more than 24 hours ago, not flown, with no covered reason): a record is used
for a scenario class only when the rules decide it that way, and would decide it the other way were the checked field
flipped. Rules come from a spec's author, or from a rules file given to `trace-envs mine --rules` (see
`examples/rules/`); without them an env decides by its gate field alone and says so.

A condition's `path` is a dotted record path (`*` for list items: any item, or every item with `every: true`), or
`fact:<label>` for a fact the user holds (the reason they give). Times: `now`, `now-24h`, `now+7d` or an ISO date.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_serializer

from trace_envs.spec.tool_names import TOOL_NAME_PATTERN
from trace_envs.trajectories.invariants import date_key, is_date, values_at

Decision = Literal["allowed", "blocked", "handoff"]
_TIME = re.compile(r"^now(?:([+-])(\d+)([hd]))?$")


class Condition(BaseModel):
    """A predicate on a record (or on a fact the user holds)."""

    model_config = ConfigDict(extra="forbid")

    path: str = Field(min_length=1, max_length=200, description="Dotted record path, or fact:<label>.")
    op: Literal["in", "not_in", "before", "after"]
    value: Any = Field(description="A list of values (in, not_in) or a time: now, now-24h, now+7d, an ISO date.")
    every: bool = Field(default=False, description="With `*` in the path: every item must satisfy it (else any).")
    also: list["Condition"] = Field(default_factory=list, description="Conditions that must hold too (and).")
    words: str = Field(default="", max_length=300, description="The condition in words, for explanations.")

    @field_validator("value")
    @classmethod
    def _value_fits(cls, value: Any, info: Any) -> Any:
        op = info.data.get("op")
        if op in ("in", "not_in") and not isinstance(value, list):
            raise ValueError(f"{op} needs a list of values")
        if op in ("before", "after") and not (isinstance(value, str) and (_TIME.match(value) or is_date(value))):
            raise ValueError("before/after need now, now-<n>h, now+<n>d or an ISO date")
        return value

    def holds(self, record: Any, facts: dict[str, str], now: str | None) -> bool:
        if self.path.startswith("fact:"):
            found = [facts[self.path[5:]]] if self.path[5:] in facts else []
        else:
            found = values_at(record, self.path)
        if not found:
            return False if self.op in ("in", "before", "after") else True
        tests = [self._test(v, now) for v in found]
        ok = all(tests) if self.every else any(tests)
        return ok and all(c.holds(record, facts, now) for c in self.also)

    def _test(self, value: Any, now: str | None) -> bool:
        if self.op == "in":
            return value in self.value
        if self.op == "not_in":
            return value not in self.value
        if not is_date(value):
            return False
        limit = resolve_time(self.value, now)
        if limit is None:
            return False
        got, limit = date_key(value), date_key(limit)
        if len(got) == 10 or len(limit) == 10:  # a day against a time: compare by day
            got, limit = got[:10], limit[:10]
            return got < limit if self.op == "before" else got > limit
        return got < limit if self.op == "before" else got > limit


@lru_cache(maxsize=1024)  # a scenario's draw tests every record against the same few limits
def resolve_time(expr: str, now: str | None) -> str | None:
    """`now`, `now-24h`, `now+7d` against the current time; ISO dates as they are."""
    m = _TIME.match(expr)
    if not m:
        return expr
    if now is None:
        return None
    base = datetime.fromisoformat(now)
    if m.group(1):
        delta = timedelta(hours=int(m.group(2))) if m.group(3) == "h" else timedelta(days=int(m.group(2)))
        base = base + delta if m.group(1) == "+" else base - delta
    return base.isoformat(timespec="seconds")


class WriteRule(BaseModel):
    """When a write is allowed: every `requires` holds and, when `allows` lists any, one of them holds; when any
    `handoff` condition holds, only a human may handle it. `ask` lists facts to obtain from the user first."""

    model_config = ConfigDict(extra="forbid")

    tool: str = Field(pattern=TOOL_NAME_PATTERN)
    requires: list[Condition] = Field(default_factory=list)
    allows: list[Condition] = Field(default_factory=list)
    handoff: list[Condition] = Field(default_factory=list)
    ask: list[str] = Field(default_factory=list, description="Labels of facts the agent must obtain first.")

    def decide(self, record: Any, facts: dict[str, str], now: str | None) -> Decision:
        if any(c.holds(record, facts, now) for c in self.handoff):
            return "handoff"
        if not all(c.holds(record, facts, now) for c in self.requires):
            return "blocked"
        if self.allows and not any(c.holds(record, facts, now) for c in self.allows):
            return "blocked"
        return "allowed"


class PolicyRules(BaseModel):
    """The policy's conditions and procedure for the tools of one spec (see the module docstring)."""

    model_config = ConfigDict(extra="forbid")

    now: str | None = Field(default=None, description="The current time the policy is read at (ISO).")
    confirm_writes: bool = Field(default=False, description="List the action's details and get a yes before a write.")
    identify_user: str | None = Field(
        default=None, description="Record field holding the owner; the user gives their id and the agent must match it."
    )
    user_facts: dict[str, str] = Field(default_factory=dict, description="Facts the user holds (label -> value).")
    user_example: str | None = Field(
        default=None, description="An id of the kind users give for `identify_user` (`AC482913`), for scenarios whose "
        "records do not hold it (a bill has no account id): the user still says who they are."
    )
    user_examples: list[str] = Field(
        default_factory=list, max_length=50,
        description="More ids of that kind, as different users of the runs gave them: a scenario draws its user's id "
        "after one of them (else after `user_example`), so the users are not all one name.")
    writes: list[WriteRule] = Field(default_factory=list)

    @model_serializer(mode="wrap")
    def _leave_unset_example_out(self, handler: Any) -> dict[str, Any]:
        # Added later: unset, they are left out, so earlier specs (their files and hashes) stay as they were.
        data = handler(self)
        if data.get("user_example") is None:
            data.pop("user_example", None)
        if not data.get("user_examples"):
            data.pop("user_examples", None)
        return data

    def rule(self, tool: str) -> WriteRule | None:
        return next((r for r in self.writes if r.tool == tool), None)

    def decide(self, tool: str, record: Any, facts: dict[str, str] | None = None) -> Decision:
        """What the policy says about `tool` on `record` (allowed when no rule names the tool)."""
        rule = self.rule(tool)
        return rule.decide(record, {**self.user_facts, **(facts or {})}, self.now) if rule else "allowed"


class RulesError(ValueError):
    """A rules file that cannot be used; the message names the file and the field."""


def load_rules(path: str | Path) -> PolicyRules:
    """A `PolicyRules` from a YAML or JSON file (see `examples/rules/`), with every problem named by field."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise RulesError(f"{p}: cannot read rules file: {getattr(exc, 'strerror', None) or exc}") from None
    import yaml  # only a rules file in YAML needs it

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise RulesError(f"{p}: not YAML or JSON: {str(exc).splitlines()[0]}") from None
    try:
        return PolicyRules.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or '(top)'}: {e['msg']}" for e in exc.errors()[:20])
        raise RulesError(f"{p}: invalid rules: {problems}") from None
