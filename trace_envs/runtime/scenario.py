"""What a family's generator builds at reset: world state, check bindings, the user's script and the oracle."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from trace_envs.language.words import request_words
from trace_envs.runtime.phrases import user_phrase


RESULT = "{result}"  # in a `UserAction.report`: where the user reads out its tool's result


class ToolError(Exception):
    """Raised by a tool implementation for a bad request; the agent sees `{"error": message}`."""


@dataclass(kw_only=True)
class UserRequest:
    """One thing the scripted user wants done.

    kind: "write" (a change the agent makes with `tool`), "handoff" (a transfer with `tool`), "info" (something
        the user wants to know; done once the agent has read a record and then tells the user something) or "act"
        (a problem only the user can fix on its side, with one of the scenario's `UserAction`s; done once the user
        has performed one and the agent then tells it something; `tool` may be None).
    tool: the tool whose successful call fulfils the request (for "info", the read that answers it; None: any read).
    target: the key value the request is about (e.g. "QZ7Y2K"), or None; a call fulfils the request only when one of
        its argument values equals it, and a confirmation question must mention it.
    phrase: how the user names the request, as a verb phrase ("cancel reservation QZ7Y2K").
    action_words: words that name the action in the agent's messages ("cancel"); default
        `language.words.request_words(tool)`.
    decline: the user answers no when asked to confirm this request (default False: yes).
    """

    kind: Literal["write", "info", "handoff", "act"]
    phrase: str
    tool: str | None = None
    target: str | None = None
    action_words: tuple[str, ...] = ()
    decline: bool = False

    def __post_init__(self) -> None:
        if self.kind not in ("write", "info", "handoff", "act"):
            raise ValueError(f"UserRequest.kind must be write, info, handoff or act, got {self.kind!r}")
        if self.kind in ("write", "handoff") and not self.tool:
            raise ValueError(f"a {self.kind} request needs the tool that fulfils it")
        if not self.action_words and self.tool:
            self.action_words = request_words(self.tool)
        self.action_words = tuple(w.lower() for w in self.action_words if w.strip())

    @classmethod
    def write(cls, tool: str, key: str, target: str, decline: bool = False) -> "UserRequest":
        """The user's request for `tool` on the record whose argument `key` is `target` ("cancel reservation QZ7Y2K");
        `decline`: the user says no when asked to confirm it."""
        return cls(kind="write", tool=tool, target=target, phrase=user_phrase(tool, key, target), decline=decline)


@dataclass(kw_only=True)
class UserAction:
    """Something only the user can do on its own side (toggle airplane mode, turn on an app's notifications), with a
    tool of the target that the agent is never offered.

    tool / arguments: the user-side tool the env runs when the user does it. verbs: phrasings of the action's verb
        ("turn on", "enable"); objects: of what it acts on ("notifications"). The user does it when, and only when,
        one sentence of an agent message names a verb and an object (see `ScriptedUser`), and at most once.
    report: what the user says once it has done it ("I turned on notifications for the app."); a `RESULT` in it is
        replaced with the tool's result text, as a user reads out what its phone shows ("It shows: Airplane Mode: ON").
    repeat: the user does it every time it is told to (a check of its phone), not once; a repeated action is no fix,
        so it never resolves the user's request.
    """

    tool: str
    verbs: tuple[str, ...]
    objects: tuple[str, ...]
    report: str
    arguments: dict[str, Any] = field(default_factory=dict)
    repeat: bool = False

    def __post_init__(self) -> None:
        self.verbs = tuple(v.strip().lower() for v in self.verbs if v.strip())
        self.objects = tuple(o.strip().lower() for o in self.objects if o.strip())
        if not self.verbs or not self.objects:
            raise ValueError(f"user action {self.tool}: needs at least one verb and one object that name it")


@dataclass
class Scenario:
    """One episode's world and script.

    state: the world the tools act on. bindings: values the check's `$var`s refer to (never shown to the user).
    opening: the user's first message. facts: label -> value the user knows and gives when asked ("user id" ->
    "omar_davis_3817"); aliases: more phrasings per label. requests: what the user wants, in order. oracle: the
    actions of a correct agent; mutants: named wrong variants of it. klass: the scenario's class ("allowed",
    "blocked", "declined", ...; default "default"), which validation balances. user_actions: what the user can do on
    its own side when the agent tells it to (default none).
    """

    state: dict[str, Any]
    bindings: dict[str, Any]
    opening: str
    facts: dict[str, str] = field(default_factory=dict)
    aliases: dict[str, list[str]] = field(default_factory=dict)
    requests: list[UserRequest] = field(default_factory=list)
    oracle: list[str] = field(default_factory=list)
    mutants: dict[str, list[str]] = field(default_factory=dict)
    klass: str = "default"
    user_actions: list[UserAction] = field(default_factory=list)
