"""The detector half of `refund_destination`: where runs cancel without telling the user where the refund goes.

It proposes the family over every write whose record (read before it with the same key) holds a payment method
field, and labels a run that made the write PRESENT when an agent message after it states the method the record
holds, LACKING when none does, NA when the run never made the write. Register it before mining:

    import refund_destination.detector   # trace-envs mine then proposes and labels refund_destination
"""

from __future__ import annotations

import json
from typing import Any

from refund_destination.task import RefundDestination
from trace_envs.checks.clauses import CallMade, CallRef, Check
from trace_envs.language.values import text_mentions
from trace_envs.mining.detector import Detector, Label, Proposal, ProposalContext, register_detector
from trace_envs.trajectories.results import ResultIndex


class RefundDestinationDetector(Detector):
    task = RefundDestination.name

    def propose(self, ctx: ProposalContext) -> list[Proposal]:
        out = []
        for write in ctx.writes:
            read, key = ctx.read_key(write)
            field = _payment_field(ctx.index, read) if read else None
            if not (read and key and field):
                continue
            out.append(Proposal(
                name=f"tell_refund_destination_after_{write}",
                description=f"After {write}, tell the user which payment method the refund goes to ({field} of the "
                "record).",
                roles={"read": read, "write": write, "key": key},
                label_check=_write_made(write),
                label_args={"tool": write, "read": read, "field": field},
                params={"field": field},
            ))
        return out

    def label(self, view, check: Check, args: dict[str, Any]) -> Label:
        tool, read, field = args["tool"], args["read"], args["field"]
        if tool not in view.called:
            return "NA"
        method, wrote = None, False
        for step in view.trace.steps:
            if step.kind == "call" and not step.error and step.name == read:
                method = _field(step.result, field) or method
            elif step.kind == "call" and not step.error and step.name == tool:
                wrote = True
            elif step.kind == "say" and wrote and method and text_mentions(method, step.text or ""):
                return "PRESENT"
        return "LACKING" if method else "NA"

    def infer_params(self, roles: dict[str, str], index: ResultIndex, policy: str = "", rules: Any = None
                     ) -> tuple[dict[str, Any], str]:
        field = _payment_field(index, roles.get("read", ""))
        return ({"field": field}, f" The refund goes to the record's {field}.") if field else ({}, "")


def _payment_field(index: ResultIndex, read: str) -> str | None:
    """The top-level field of `read`'s records that names a payment method, by its name."""
    return next((f for f in sorted(index.fields.get(read, {})) if "payment" in f and "." not in f), None)


def _field(result: Any, field: str) -> Any:
    try:
        record = json.loads(result) if isinstance(result, str) else result
    except ValueError:
        return None
    return record.get(field) if isinstance(record, dict) else None


def _write_made(write: str) -> Check:
    return Check(applies_if=[CallRef(tool=write)], clauses=[CallMade(id="write_made", call=CallRef(tool=write))])


register_detector(RefundDestinationDetector())
