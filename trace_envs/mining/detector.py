"""How the miner finds a family in real runs: the detector half of a capability family, and its registry.

A detector (`trace_envs/families/<family>/detector.py`) points at a task (`Detector.task`, a registered family name,
see `trace_envs.families.task`) and says: when the offline proposer instantiates it over a domain (`propose`), how a
real run is labelled PRESENT / LACKING / NA for a candidate (`label`), how the candidate's params are read off the
runs, the policy text and the tool definitions (`infer_params`), which tools it is about (`target_tools`) and which
departures from expected actions an agent trained on its env learns to avoid (`teaches`). A task may have several
detectors. Detectors are loaded by the miner only (`all_detectors()` imports every built-in family's `detector`
module on first use): `gym.make` never imports them.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from trace_envs.checks.attribution import FREE_TEXT_ARGS
from trace_envs.checks.clauses import Check
from trace_envs.checks.run_view import RunView
from trace_envs.families.task import SLUG, FamilyError, get_task
from trace_envs.trajectories.results import ResultIndex

Label = Literal["PRESENT", "LACKING", "NA"]

MAX_TOOL_ARGS = 6


@dataclass
class Proposal:
    """One candidate capability a detector proposes over a domain: what the miner turns into a CapabilitySpec.

    `label_check` is the portable check (no `$var`) that labels real runs; `label_args` tells the detector's labeler
    what the candidate is about (e.g. `{"tool": "cancel_order"}`); `params` left out are inferred from the runs;
    `results[tool]` are real results of a tool to build scenarios from where the profile keeps none (it keeps record
    results, not the option lists a search returns)."""

    name: str
    description: str
    roles: dict[str, str]
    label_check: Check
    label_args: dict[str, Any] = field(default_factory=dict)
    params: dict[str, Any] | None = None
    extra_tools: list[str] = field(default_factory=list)
    results: dict[str, list[Any]] = field(default_factory=dict)


@dataclass
class ProposalContext:
    """What the offline proposer knows about a domain, computed once and read by every detector's `propose`.

    `pairs[(read, write, key)]` counts writes preceded by that read with the same value of `key`; `gt_counts[tool]` and
    `gt_numeric[tool][arg]` count the agent's ground-truth actions and their numeric arguments (empty without ground
    truth). `reads`, `writes` and `handoffs` are the tools worth proposing over (called at least `min_calls` times);
    `runs` are the runs themselves (the profile's sample), for detectors that read what the index does not keep."""

    profile: Any
    index: ResultIndex
    pairs: Counter
    gt_counts: Counter
    gt_numeric: dict[str, Counter]
    has_gt: bool
    reads: list[str]
    writes: list[str]
    handoffs: list[str]
    rules: Any = None
    runs: list[Any] = field(default_factory=list)

    def args(self, tool: str) -> list[str]:
        """Argument names of `tool` as the profile saw them."""
        t = self.profile.tools.get(tool)
        return list((t.parameters or {}).get("properties", {})) if t is not None else []

    def read_key(self, write: str) -> tuple[str | None, str | None]:
        """The read tool and key argument that go with `write`: the pair seen most often in the runs, else the read
        whose results held the values passed to the write (a phone number found with `search_contacts`, sent with
        `send_message_with_phone_number`: they share no argument) and its first argument, else a read sharing an
        argument with it, else the first read and its first argument."""
        best = [(cnt, r, k) for (r, w, k), cnt in self.pairs.items() if w == write]
        if best:
            _, r, k = max(best)
            return r, k
        supplied = Counter({r: sum(paths.values()) for (r, w, _), paths in self.index.arg_sources.items()
                            if w == write and r in self.reads})
        if supplied:
            r = max(supplied, key=lambda name: (supplied[name], name))
            rargs = self.args(r)
            if rargs:
                return r, rargs[0]
        wargs = self.args(write)
        for r in self.reads:
            shared = [a for a in self.args(r) if a in wargs]
            if shared:
                return r, shared[0]
        default_read = self.reads[0] if self.reads else None
        if default_read is None:
            return None, (wargs[0] if wargs else None)
        rargs = self.args(default_read)
        return default_read, (rargs[0] if rargs else (wargs[0] if wargs else None))

    def roles_for(self, write: str, **extra: str) -> dict[str, str]:
        """`{"write": write, "read": ..., "key": ...}` (read and key as `read_key` finds them) plus `extra`."""
        r, k = self.read_key(write)
        roles = {"write": write}
        if r:
            roles["read"] = r
        if k:
            roles["key"] = k
        roles.update(extra)
        return roles

    def free_text(self, tool: str, arg: str) -> bool:
        """Whether `arg` of `tool` holds prose (by name, or examples of more than three words)."""
        t = self.profile.tools.get(tool)
        examples = t.examples.get(arg, []) if t is not None else []
        return arg in FREE_TEXT_ARGS or any(isinstance(e, str) and len(e.split()) > 3 for e in examples)


class Detector:
    """Subclass and `register_detector(YourDetector())` to let the miner find a family (see
    `examples/custom_family/`).

    Class attributes:
        task: the registered family (task) whose env a kept candidate becomes.
        name: the detector's slug (default: its task's name); candidates and the mining report name it.
        generic: True for a detector whose labels restate the task's outcome (ranked after specific ones on ties).
        teaches: the departures from a source's expected actions (`trace_envs.checks.attribution.KINDS`) that an
            agent trained on the family's env learns to avoid; the mining report says which kept capability covers
            each kind of failure the runs show.
        refines: detectors whose capability this one narrows (a claim to verify is a read before a write, and a
            refusal of a write the record forbids, on the user's word): where both are eligible over the same
            tools, mining keeps this one only.
    """

    task: ClassVar[str]
    name: ClassVar[str] = ""
    generic: ClassVar[bool] = False
    teaches: ClassVar[tuple[str, ...]] = ()
    refines: ClassVar[tuple[str, ...]] = ()

    def label(self, view: RunView, check: Check, args: dict[str, Any]) -> Label:
        """PRESENT / LACKING / NA of a real run for a candidate of this family (`check` is its portable check)."""
        raise NotImplementedError

    def portable_check(self, roles: dict[str, str]) -> tuple[Check, dict[str, Any]] | None:
        """The portable check and labeler args for a candidate over `roles` (an LLM's proposal), or None when the
        roles do not give the labeler what it needs."""
        return None

    def propose(self, ctx: ProposalContext) -> list[Proposal]:
        """The candidates of this family the offline proposer instantiates over a domain."""
        return []

    def infer_params(self, roles: dict[str, str], index: ResultIndex, policy: str = "", rules: Any = None
                     ) -> tuple[dict[str, Any], str]:
        """Params for `roles`, from the domain's `rules` (a `PolicyRules`) where they say, else read off the runs and
        checked against the `policy` text; and a sentence for the description saying what they mean. Empty when
        nothing the policy supports gives them."""
        return {}, ""

    def target_tools(self, roles: dict[str, str]) -> list[str]:
        """The tools a capability of this family is about (used to map it to a known deficit); default the write."""
        return [roles["write"]] if roles.get("write") else []


_DETECTORS: dict[str, Detector] = {}
_loaded = False


def register_detector(detector: Detector) -> Detector:
    """Register a detector instance (under `detector.name`, default its task's name); returns it.

    Raises `FamilyError` when `detector` is not a `Detector` instance, its task is not registered, its name is not a
    slug or is taken."""
    if inspect.isclass(detector) and issubclass(detector, Detector):
        raise FamilyError(f"register_detector takes a Detector instance: call register_detector({detector.__name__}())")
    if not isinstance(detector, Detector):
        raise FamilyError(f"register_detector takes a Detector instance, got {type(detector).__name__}")
    task = getattr(detector, "task", None)
    if not isinstance(task, str):
        raise FamilyError(f"detector {type(detector).__name__}: task (the family it finds) is missing")
    get_task(task)  # FamilyError naming the registered ones when the task is unknown
    name = detector.name or task
    if not SLUG.fullmatch(name):
        raise FamilyError(f"detector {type(detector).__name__}: name must be a slug, got {name!r}")
    if name in _DETECTORS:
        other = type(_DETECTORS[name])
        raise FamilyError(f"detector {name!r} is already registered (by {other.__module__}.{other.__qualname__})")
    if not detector.name:
        detector.name = name  # type: ignore[misc]
    _DETECTORS[name] = detector
    return detector


def _load_builtin() -> None:
    """Import every built-in family's `detector` module (each registers its detectors)."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    import trace_envs.families as families

    for info in sorted(pkgutil.iter_modules(families.__path__), key=lambda m: m.name):
        if info.ispkg:
            try:
                importlib.import_module(f"{families.__name__}.{info.name}.detector")
            except ModuleNotFoundError as exc:
                if exc.name != f"{families.__name__}.{info.name}.detector":
                    raise


def all_detectors() -> dict[str, Detector]:
    """Every registered detector (built-in and users' own), by name in name order: the order the offline proposer
    asks them in, whatever order they were imported in."""
    _load_builtin()
    return dict(sorted(_DETECTORS.items()))


def get_detector(name: str) -> Detector:
    """The detector registered as `name`; `FamilyError` naming the registered ones otherwise."""
    _load_builtin()
    found = _DETECTORS.get(name)
    if found is None:
        raise FamilyError(f"unknown detector {name!r}; registered detectors: {', '.join(sorted(_DETECTORS)) or 'none'}")
    return found


def detector_for(family: str) -> Detector:
    """The detector of a family (task) name: the one named like it, else the first pointing at it."""
    found = all_detectors()
    if family in found and found[family].task == family:
        return found[family]
    for d in found.values():
        if d.task == family:
            return d
    get_task(family)  # an unknown family says so
    raise FamilyError(f"family {family!r} has no detector: the miner cannot find it in runs")


def unregister_detector(name: str) -> None:
    """Remove a detector (for tests and notebooks that register one and clean up)."""
    _DETECTORS.pop(name, None)
