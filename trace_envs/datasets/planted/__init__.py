"""Planted-deficit data: a small simulated retail customer-service domain with scripted agents.

Each run's agent carries known deficits, sampled at known rates; a deficit that shows in the run makes it fail
(reward 0), as a real evaluator would. Noise failures (a fully correct run marked failed) and a DECOY behaviour (an
optional read the agents skip equally often in passed and failed runs) are mixed in. This is the miner's ground truth:
a miner should recover every deficit in `PLANTED_DEFICITS` and never report a decoy or the noise.

Runs are built directly as `Run` models (`source="planted"`) with realistic OpenAI chat messages, and can be written to
OpenAI-messages JSONL (`write_jsonl`) that `trace_envs.trajectories.loaders.load_runs` reads back.

Layout: `core` holds the domain (base policy, tools, deficits, scenario, rules), the built-in task kinds (cancel,
refund, address, multi, forbidden, handoff) and the simulator; `agent` the planted agent as a policy for generated envs
(`planted_policy`); every other module is one task kind, imported here automatically (in name order).

Adding a task kind is adding one module here, say `claim.py`, that ends with one call::

    register_kind(PlantedKind(
        name="claim",                  # the module's name: the package checks they agree
        order=3,                       # its pieces come after those of kinds with a lower order
        share=0.1,                     # its share of runs (share_from="multi" takes it out of another kind's)
        exposure=frozenset({"my_deficit"}),
        policy="- The policy sentence(s) for it, ending in a newline.\\n",
        tools=(("read", fn_schema(...)), ("write", fn_schema(...))),
        deficits=(PlantedDeficit("my_deficit", "my_family", ("tool", ...), 0.5, "what the agent does wrong"),),
        rules=(WriteRule(...),),       # its writes' conditions, as data, for the miner
        task=ExtraTask(...),           # played by the built-in simulator among the other requests, or
        simulate=..., wants=..., step=...,  # its own simulator, and the planted agent's step in generated envs
    ))

A kind with its own simulator builds its run with `core.builder(rng)` (a `sim.Builder` opening with the whole policy)
and ends it with `core.finish(...)`; see `app.py`. One played by the built-in simulator gives an `ExtraTask`; see
`exchange.py`.

`register_kind` adds the pieces to the shared tables (`POLICY`, `TOOLS`, `TOOL_KINDS`, `PLANTED_DEFICITS`, `TASK_MIX`,
`REQUEST_EXPOSURE`, `PLANTED_RULES`, `EXTRA_TASKS`, `FAMILY_TASKS`, `FAMILY_STEPS`); no shared module changes. What
every planted domain shares (the run builder, tool schemas, JSONL writing, scoring) is `trace_envs.datasets.sim`.
"""

from __future__ import annotations

import importlib
import pkgutil

from trace_envs.datasets.planted import core
from trace_envs.datasets.planted.agent import planted_policy
from trace_envs.datasets.planted.core import (
    CLOSING,
    DECOYS,
    EXTRA_TASKS,
    FAMILY_STEPS,
    FAMILY_TASKS,
    HANDOFF_TOOL,
    KINDS,
    NOISE_RATE,
    PLANTED_DEFICITS,
    PLANTED_RULES,
    READ_TOOLS,
    REQUEST_EXPOSURE,
    TASK_MIX,
    TOOL_KINDS,
    TOOLS,
    WRITE_TOOLS,
    ExtraTask,
    PlantedKind,
    exposed_deficits,
    generate_planted,
    iter_planted,
    match_deficit,
    planted_file,
    register_kind,
    score_recovery,
)
from trace_envs.datasets.sim import PlantedDeficit, run_to_record, write_jsonl

SHARED_MODULES = ("agent", "core")  # every other module of this package is one task kind
KIND_MODULES: list[str] = []
for _module in sorted(m.name for m in pkgutil.iter_modules(__path__)):
    if _module in SHARED_MODULES:
        continue
    importlib.import_module(f"{__name__}.{_module}")
    if _module not in KINDS:
        raise ImportError(f"{__name__}.{_module} registers no planted task kind named {_module!r}: a task-kind module "
                          f"ends with register_kind(PlantedKind(name={_module!r}, ...))")
    KIND_MODULES.append(_module)

# Each kind's registration appended its policy piece; the string is bound only now that every kind is in.
POLICY = core.POLICY

# The exchange and app kinds' names, kept for the importers of the single module this package replaced.
from trace_envs.datasets.planted.app import (  # noqa: E402
    APP_NOTIFY,
    APP_READ,
    APP_SYMPTOM,
    APP_UPDATE,
    LATEST_APP,
    OLD_APPS,
)
from trace_envs.datasets.planted.exchange import EXCHANGE_TOOL, SEARCH_VARIANTS  # noqa: E402

__all__ = [
    "APP_NOTIFY", "APP_READ", "APP_SYMPTOM", "APP_UPDATE", "CLOSING", "DECOYS", "EXCHANGE_TOOL", "EXTRA_TASKS",
    "FAMILY_STEPS", "FAMILY_TASKS", "HANDOFF_TOOL", "KINDS", "KIND_MODULES", "LATEST_APP", "NOISE_RATE", "OLD_APPS",
    "PLANTED_DEFICITS", "PLANTED_RULES", "POLICY", "READ_TOOLS", "REQUEST_EXPOSURE", "SEARCH_VARIANTS", "TASK_MIX",
    "TOOLS", "TOOL_KINDS", "WRITE_TOOLS", "ExtraTask", "PlantedDeficit", "PlantedKind", "exposed_deficits",
    "generate_planted", "iter_planted", "match_deficit", "planted_file", "planted_policy", "register_kind",
    "run_to_record", "score_recovery", "write_jsonl",
]
