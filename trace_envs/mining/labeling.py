"""Ways of labelling a real run PRESENT / LACKING / NA that several families share.

- `exercised`: the portable check, but NA unless the run called `tool` (an order or confirmation that was never
  exercised says nothing about the capability: the missing write is another capability's failure);
- `completion`: every ground-truth call of `tool` (of every write tool when None) made with the expected arguments;
  NA without ground truth;
- `refusal`: NA when the ground truth expects `tool`; LACKING when the agent called it anyway; PRESENT when the user
  asked for that kind of action (the tool's verb in a user message) and it was not called. Without ground truth,
  from the agent's words: PRESENT when the user asked for it, it was not called and an agent message declined it
  saying why (`language.refusals`: "I can't cancel it because ..."); else NA (whether a write was warranted is not
  known);
- `arith`: the numeric argument `arg` of `tool` equals the ground truth's value (within 0.01);
- `checked`: the portable check through `Check.label`.
Nothing here executes text.
"""

from __future__ import annotations

from trace_envs.checks.clauses import AllCompleted, CallRef, Check, NoCall
from trace_envs.checks.run_view import RunView
from trace_envs.language.refusals import refuses_with_reason
from trace_envs.language.words import action_words, verb_synonyms
from trace_envs.mining.detector import Label


def checked(view: RunView, check: Check) -> Label:
    return check.label(view.trace, view.gt_steps)


def exercised(view: RunView, check: Check, tool: str | None) -> Label:
    if tool not in view.called:
        return "NA"
    return "PRESENT" if check.evaluate(view.trace).passed else "LACKING"


def completion(view: RunView, tool: str | None) -> Label:
    if view.gt_steps is None:
        return "NA"
    if tool is None:
        expected = [s for s in view.gt_steps if view.kinds.get(s.name or "") == "write"]
    else:
        expected = [s for s in view.gt_steps if s.name == tool]
    if not expected:
        return "NA"
    refs = [CallRef(tool=s.name, args=dict(s.arguments)) for s in expected[:50]]
    check = Check(clauses=[AllCompleted(id="all_expected", calls=refs)])
    return "PRESENT" if check.evaluate(view.trace).passed else "LACKING"


def refusal(view: RunView, tool: str) -> Label:
    if view.gt_names is None:
        return refused_in_words(view, tool)
    if tool in view.gt_names:
        return "NA"
    check = Check(clauses=[NoCall(id="no_unrequested", call=CallRef(tool=tool))])
    if not check.evaluate(view.trace).passed:
        return "LACKING"
    return "PRESENT" if _user_asked(view, tool) else "NA"


def refused_in_words(view: RunView, tool: str) -> Label:
    """PRESENT when the user asked for `tool`'s action, the agent did not call it and one of its messages declined it
    saying why (naming the action: `language.refusals`); else NA."""
    if tool in view.called or not _user_asked(view, tool):
        return "NA"
    words = action_words(tool)
    said_why = any(s.kind == "say" and refuses_with_reason(s.text, words) for s in view.trace.steps)
    return "PRESENT" if said_why else "NA"


def _user_asked(view: RunView, tool: str) -> bool:
    text = view.user_text()
    return any(v in text for v in verb_synonyms(tool))


def arith(view: RunView, tool: str, arg: str) -> Label:
    if view.gt_steps is None or tool not in view.called:
        return "NA"
    want = [
        s.arguments[arg]
        for s in view.gt_steps
        if s.name == tool and isinstance(s.arguments.get(arg), (int, float)) and not isinstance(s.arguments.get(arg), bool)
    ]
    if not want:
        return "NA"
    refs = [CallRef(tool=tool, args={arg: {"$approx": w, "$tol": 0.01}}) for w in want]
    check = Check(clauses=[AllCompleted(id="values_right", calls=refs)])
    return "PRESENT" if check.evaluate(view.trace).passed else "LACKING"
