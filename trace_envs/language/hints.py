"""The sentences of an expert hint: soft guidance a family writes from its spec's roles and params (what to read, what
the policy forbids, what to ask, which amount to compute), shown in the system prompt of a share of the rollouts.

The paper's trainer appends such guidance to a quarter to a half of each GRPO group's prompts so that a model that
never exercises the capability still earns some reward, then trains on the plain prompt. Every family composes its
hint from these pieces, so the wording of hints lives here with the rest of the library's phrasings."""

from __future__ import annotations

import re
from typing import Any, Iterable

_INDEX = re.compile(r"^(\d+|\*|\{[^}]*\})$")


def path_words(path: Any) -> str:
    """A record path as words: `payment_history.*.amount` -> `payment history amount`, `prices.{cabin}` -> `prices`."""
    parts = [p for p in str(path or "").split(".") if p and not _INDEX.match(p)]
    return " ".join(p.replace("_", " ") for p in parts)


def value_words(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value).replace("_", " ")


def one_of(values: Iterable[Any]) -> str:
    """`a`, `a or b`, `a, b or c`."""
    items = [value_words(v) for v in values]
    if len(items) <= 1:
        return "".join(items)
    return f"{', '.join(items[:-1])} or {items[-1]}"


def read_first(read: str, key: str | None, field: Any = None) -> str:
    what = f" with the {value_words(key)} the user gives" if key else ""
    then = f" and read its {path_words(field)}" if field else ""
    return f"Call {read}{what} first{then}."


def ask_for(label: str, read: str) -> str:
    return f"Ask the user for the {label} before calling {read}; never guess it, and call {read} only with their answer."


def forbid(field: Any, blocked: Iterable[Any], write: str | None, allowed: Iterable[Any] = (),
           handoff: str | None = None) -> str:
    what = f"call {write}" if write else "do it"
    instead = f"transfer the user with {handoff}" if handoff else "refuse and tell the user which rule forbids it"
    allowed = list(allowed)
    only = f" Only when the {path_words(field)} is {one_of(allowed)} may you {what}." if allowed else ""
    return f"If the {path_words(field)} is {one_of(blocked)}, do not {what}: {instead}.{only}"


def confirm(write: str) -> str:
    return (f"Before calling {write}, tell the user exactly what you will change and ask them to confirm; call it "
            "only after they say yes, and never after a no.")


_OPS = {"sum": "add up the {label}", "max": "find the largest {label}", "min": "find the smallest {label}",
        "count": "count the {label}"}


def compute(op: str, label: str, read: str, where: str = "") -> str:
    doing = _OPS.get(op, "compute the {label}").format(label=label)
    return f"Call {read} for every record the user named, then {doing}{where} exactly, figure by figure."


def only_items(field: Any, value: Any) -> str:
    return f" over the items whose {path_words(field)} is {value_words(value)}"


def pay_amount(arg: str, write: str) -> str:
    return f"Pass that exact amount as {arg} to {write}."


def tell_figure() -> str:
    return "Tell the user the exact figure in a sentence."


def ground(arg: str, source: Any, read: str, write: str) -> str:
    return (f"Pass {arg} to {write} exactly as {read} returned it in {path_words(source)}; never invent or reformat "
            "it.")


def every_request(write: str) -> str:
    return (f"The user makes several requests: handle each one (look each record up, call {write} for each that is "
            "allowed, explain each that is not) before you finish.")


def choose_option(search: str, criteria: Iterable[str], arg: str, write: str) -> str:
    named = one_of(criteria).replace(" or ", " and ")
    return (f"Search with {search}, compare every option's {named} with what the user asked for, and pass only the "
            f"option that meets all of it as {arg} to {write}.")


def recover(write: str, fix: str) -> str:
    return (f"If {write} returns an error, find its cause in the record, call {fix} to remove it and call {write} "
            "again; if the fix fails, tell the user why it cannot be done.")


def verify_claim(field: Any, claimed: Any, read: str, write: str) -> str:
    return (f"Do not take the user's word that the {path_words(field)} is {value_words(claimed)}: check it with "
            f"{read} and call {write} only if the record shows it; otherwise tell the user what the record shows.")


def condition(field: Any, values: Iterable[Any], write: str, other_values: Iterable[Any], alt: str) -> str:
    return (f"Call {write} if the {path_words(field)} is {one_of(values)}, or {alt} if it is "
            f"{one_of(other_values)}.")


def answer(label: str) -> str:
    return f"Then tell the user the {label} in a sentence, as the record shows it."


def user_fix(read: str, device: bool) -> str:
    check = f"ask the user to run {read} on their device and tell you what it shows" if device else f"call {read}"
    return (f"First {check}; then ask the user to do the one fix it points to, naming it, and check again before "
            "saying it works.")


def hand_off(handoff: str) -> str:
    return f"When the policy requires a human agent for the request, call {handoff} instead of refusing."


def join(parts: Iterable[str]) -> str:
    return " ".join(p for p in parts if p)


def section(hint: str) -> str:
    """The hint as the system prompt carries it, after everything else."""
    return f"# Hint\n{hint}"
