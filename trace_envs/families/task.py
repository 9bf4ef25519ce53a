"""What a family's env is: the task half of a capability family, and the registry `gym.make` reads.

A family is one kind of capability an agent can lack (check a precondition before a write, finish every request,
...). It has two halves, side by side in its package under `trace_envs/families/<family>/`, as verifiers splits a
Taskset from a Harness:

- the **task** (`task.py`, this contract): the roles it binds to the target's tools and arguments, its params (a
  pydantic model), the env class whose `build_scenario` makes its episodes (records that obey the domain's
  invariants, the user's opening, the oracle and its mutants) and the check a generated env scores episodes with;
- its **detectors** (`detector.py`, see `trace_envs.mining.detector`): how a real run is labelled, when the offline
  proposer instantiates the family, how its params are read off real runs, and which failures it teaches.

`gym.make` and every generated env load tasks only: nothing here, in the runtime or in the checks imports mining. A
task registers itself (`register_task(MyTask())`); nothing else lists family names.
"""

from __future__ import annotations

import importlib
import inspect
import re
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, ValidationError

from trace_envs.checks.clauses import Check
from trace_envs.language import hints

SLUG = re.compile(r"^[a-z][a-z0-9_]{1,62}$")


class NoParams(BaseModel):
    """A family without params."""

    model_config = ConfigDict(extra="forbid")


class FamilyError(ValueError):
    """A task or detector that cannot be registered, or a name nothing is registered under."""


class Task:
    """Subclass and `register_task(YourTask())` to add a family's env (see `examples/custom_family/`).

    Class attributes:
        name: the family's slug, as specs name it (`family: <name>`).
        summary: one sentence on the capability.
        roles: the roles every spec of the family must bind (`read`, `write`, `key`, `arg`, `handoff`, ...); a role
            names a tool, except `key` and `arg`, which name arguments.
        params: the pydantic model of the family's params (validated when a spec is loaded).
        env_class: the `TraceEnv` subclass whose `build_scenario` makes the family's episodes; a generated env
            subclasses it and sets `SPEC`.
        template: the jinja2 template a spec of the family renders through.
    """

    name: ClassVar[str]
    summary: ClassVar[str]
    roles: ClassVar[tuple[str, ...]]
    params: ClassVar[type[BaseModel]] = NoParams
    env_class: ClassVar[type]
    template: ClassVar[str] = "env.py.j2"

    def check(self, roles: dict[str, str], params: dict[str, Any], requests: int = 2) -> Check:
        """The check a generated env scores episodes with; `$var`s refer to the scenario's bindings."""
        raise NotImplementedError

    def problems(self, spec: Any) -> list[str]:
        """What is wrong with a spec's roles and params for this family (empty when it is fine)."""
        roles, tools = spec.roles, {t.name for t in spec.tools}
        out = [f"roles.{r} is missing" for r in self.roles if r not in roles]
        out += [
            f"roles.{role} names {tool!r}, which is not in tools"
            for role, tool in roles.items()
            if role not in ("key", "arg") and tool not in tools
        ]
        try:
            self.params.model_validate(spec.params)
        except ValidationError as exc:
            for err in exc.errors():
                where = ".".join(str(p) for p in err["loc"])
                out.append(f"params.{where}: {err['msg']}" if where else f"params: {err['msg']}")
        return out

    def hint(self, spec: Any) -> str:
        """Expert guidance for the spec's episodes, written from its roles and params: what to read, what the policy
        forbids, what to ask. A trainer shows it on a share of each GRPO group's rollouts (the loss still sees the
        plain prompt); a family whose capability needs more (an amount to compute, a key to ask for) says so."""
        roles, params = spec.roles, spec.params
        parts = []
        if roles.get("read"):
            parts.append(hints.read_first(roles["read"], roles.get("key"), params.get("field")))
        if params.get("field") and params.get("blocked"):
            parts.append(hints.forbid(params["field"], params["blocked"], roles.get("write"), params.get("allowed") or [],
                                      roles.get("handoff")))
        if roles.get("write") and spec.rules.confirm_writes:
            parts.append(hints.confirm(roles["write"]))
        return hints.join(parts)

    def params_of(self, params: dict[str, Any]) -> BaseModel:
        """The spec's params as this family's params model."""
        return self.params.model_validate(params)

    @property
    def env_module(self) -> str:
        """The module a generated env imports `env_class` from: the family's package when it exports the class
        (`trace_envs.families.option_selection`), else the module that defines it."""
        module = self.env_class.__module__
        package = module.rpartition(".")[0]
        if module.endswith(".task") and getattr(importlib.import_module(package), self.env_class.__name__, None) \
                is self.env_class:
            return package
        return module


_TASKS: dict[str, Task] = {}


def register_task(task: Task) -> Task:
    """Register a task instance under `task.name`; returns it (so a module can write `X = register_task(X())`).

    Raises `FamilyError` when `task` is not a `Task` instance, its name is not a slug, a task of that name is already
    registered, or one of `summary`, `roles`, `params`, `env_class` is missing or of the wrong type."""
    if inspect.isclass(task) and issubclass(task, Task):
        raise FamilyError(f"register_task takes a Task instance: call register_task({task.__name__}())")
    if not isinstance(task, Task):
        raise FamilyError(f"register_task takes a Task instance, got {type(task).__name__}")
    name = getattr(task, "name", None)
    if not isinstance(name, str) or not SLUG.fullmatch(name):
        raise FamilyError(
            f"task {type(task).__name__}: name must be a slug (lower-case letters, digits, _; 2-63 chars), got {name!r}"
        )
    if name in _TASKS:
        other = type(_TASKS[name])
        raise FamilyError(
            f"family {name!r} is already registered (by {other.__module__}.{other.__qualname__}); pick another name"
        )
    problems = []
    if not isinstance(getattr(task, "summary", None), str) or not task.summary.strip():
        problems.append("summary (a sentence) is missing")
    roles = getattr(task, "roles", None)
    if not isinstance(roles, tuple) or not all(isinstance(r, str) for r in roles):
        problems.append("roles must be a tuple of role names")
    if not (inspect.isclass(task.params) and issubclass(task.params, BaseModel)):
        problems.append("params must be a pydantic model class")
    from trace_envs.runtime.base import TraceEnv  # the runtime imports the spec, which validates through this registry

    env_class = getattr(task, "env_class", None)
    if not (inspect.isclass(env_class) and issubclass(env_class, TraceEnv)):
        problems.append("env_class must be a TraceEnv subclass")
    if problems:
        raise FamilyError(f"family {name!r}: " + "; ".join(problems))
    _TASKS[name] = task
    return task


def _load_built_in() -> None:
    """Import every built-in family's package (each registers its tasks). `gym.make` imports only its env's family:
    importing all of them cost every process about a tenth of a second."""
    import pkgutil

    import trace_envs.families as families

    for info in sorted(pkgutil.iter_modules(families.__path__), key=lambda m: m.name):
        if info.ispkg:
            importlib.import_module(f"{families.__name__}.{info.name}")


def get_task(name: str) -> Task:
    """The task registered as `name`; `FamilyError` naming the registered ones otherwise."""
    task = _TASKS.get(name)
    if task is None:
        _load_built_in()
        task = _TASKS.get(name)
    if task is None:
        known = ", ".join(sorted(_TASKS)) or "none"
        raise FamilyError(f"unknown family {name!r}; registered families: {known}")
    return task


def hint_of(spec: Any) -> str:
    """The spec's own hint when its author wrote one, else the one its family writes from its params; none for a
    hand-built spec that does not fill the roles its family's hint names (its author can still write one)."""
    if spec.hint:
        return spec.hint
    task = get_task(spec.family)
    if not set(task.roles) <= set(spec.roles or {}):
        return ""
    return task.hint(spec)


def all_tasks() -> dict[str, Task]:
    """Every registered task by name, in name order (whatever order they were imported in)."""
    _load_built_in()
    return dict(sorted(_TASKS.items()))


def registered_tasks() -> dict[str, Task]:
    """The tasks registered so far, loading no family (built-in families not yet imported are missing)."""
    return dict(_TASKS)


def unregister_task(name: str) -> None:
    """Remove a task (for tests and notebooks that register one and clean up)."""
    _TASKS.pop(name, None)
