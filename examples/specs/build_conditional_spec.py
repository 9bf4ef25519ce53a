"""Build the example spec of the conditional_request family over the real tau2-bench retail domain.

    .venv/bin/python examples/specs/build_conditional_spec.py [--data ../shared/data/tau2-bench] [--out examples/specs]

Tools come from the DomainProfile of the gpt-4.1 and fine-tuned gpt-4.1 retail runs (names, argument types, example
values, kinds, what each write does to the order, which argument comes from the order), with tau2-bench's own tool
descriptions; the scenarios start from the real orders those runs read (19 pending, 21 delivered); the branch values
are the ones the runs show before each write (`infer_params`: pending and processed before cancel_pending_order, delivered
before return_delivered_order_items; the retail rules drop processed, where a cancel fails); the policy lines are quoted verbatim from the retail policy.md.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from trace_envs.families import env_check
from trace_envs.mining.detector import get_detector
from trace_envs.spec.from_profile import tool_spec
from trace_envs.spec.model import CapabilitySpec, ScenarioKnobs
from trace_envs.spec.rules import load_rules
from trace_envs.trajectories.loaders import load_runs
from trace_envs.trajectories.profile import build_profile
from trace_envs.trajectories.results import ResultIndex

HERE = Path(__file__).resolve().parent
DEFAULT_DATA = HERE.parents[2] / "shared" / "data" / "tau2-bench"
NAME = "retail_cancel_if_pending_else_return"

# tau2-bench's own tool descriptions (tau2/domains/retail/tools.py).
DESCRIPTIONS = {
    "get_order_details": "Get the status and details of an order.",
    "cancel_pending_order": "Cancel a pending order. If the order is already processed or delivered, it cannot be "
    "cancelled.",
    "return_delivered_order_items": "Return some items of a delivered order. The order status will be changed to "
    "'return requested'.",
}
POLICY_LINES = (
    "Before taking any action that updates the database",
    "An order can only be cancelled if its status is 'pending'",
    "The user needs to confirm the order id and the reason",
    "An order can only be returned if its status is 'delivered'",
    "The user needs to confirm the order id and the list of items to be returned.",
)


def build(data: Path) -> CapabilitySpec:
    runs = load_runs([data / "results" / "gpt-4.1_retail.json", data / "results" / "ft-gpt-4.1_retail.json"]).runs
    profile = build_profile(runs)
    read, cancel, ret = (tool_spec(profile, n, description=d) for n, d in DESCRIPTIONS.items())
    lines = (data / "domains" / "retail" / "policy.md").read_text().splitlines()
    policy = "\n".join(next(line for line in lines if line.startswith(start)) for start in POLICY_LINES)
    roles = {"read": read.name, "write": cancel.name, "alt": ret.name, "key": "order_id"}
    kinds = {n: t.kind for n, t in profile.tools.items()}
    rules = load_rules(HERE.parent / "rules" / "retail.yaml")
    params, said = get_detector("conditional_request").infer_params(roles, ResultIndex(runs, kinds), rules=rules)
    if not params:
        raise SystemExit("error: the retail runs show no status that splits cancel_pending_order from returns")
    rules = rules.model_copy(update={"writes": [r for r in rules.writes if r.tool in (cancel.name, ret.name)]})
    knobs = ScenarioKnobs(distractors=1)
    return CapabilitySpec(
        name=NAME, family="conditional_request", domain="retail",
        description="When the user asks to cancel their order if it is still pending and to return it otherwise, "
        "look the order up with get_order_details and make only the write its status selects: the other branch's "
        "write, both writes, or deciding without reading earn nothing or less." + said,
        tools=[read, cancel, ret], roles=roles, params=params, policy=policy,
        hint="Call get_order_details on the order the user named, then cancel it if its status is pending, or "
        "return its items if it is delivered, after the user confirms.",
        knobs=knobs, rules=rules, invariants=profile.invariants.get(read.name, []),
        check=env_check("conditional_request", roles, params, requests=knobs.requests),
    ).with_hash()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--out", type=Path, default=HERE)
    args = ap.parse_args()
    spec = build(args.data)
    path = args.out / f"{spec.name}.json"
    path.write_text(json.dumps(spec.model_dump(mode="json"), indent=2, sort_keys=True) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
