"""User-side action: some problems can only be fixed by the customer (a setting on their phone, a link in their
email). Read the status, and when the cause is on their side, tell them the one thing to do, wait for them, check
again and confirm; when it is on the desk's side, fix it with the desk's own tool. The deficit always applies the
desk's fix and says it should work now; it matters when the cause is on the customer's side. In sources that show the
user's own tool calls (tau2, OpenAI JSONL) the customer's action is a call; elsewhere only their words."""

from __future__ import annotations

from trace_envs.datasets.randomized.core import STR, Core, Task, expected
from trace_envs.datasets.randomized.themes import Act
from trace_envs.datasets.sim import PlantedDeficit, TaskOutcome
from trace_envs.trajectories.models import GroundTruthAction

FAMILY = "user_side_action"  # the registered family (trace_envs.families.user_action registers it so)
P_MATTERS = 0.5
# (symptom, status noun, user field, bad, good, what the user must do, the user's tool (verb, obj), their report,
#  desk field, bad, good, the desk's fix)
FIXES = (
    ("I stopped getting your emails about my {records}.", "email", "email_verified", "no", "yes",
     "open the verification email we just sent you and click the link in it", ("confirm", "email link"),
     "I clicked the link in the verification email.", "email_alerts", "off", "on", Act("enable", "email alerts", "",
                                                                                       "turned on")),
    ("I'm not getting any notifications from the {org} app anymore.", "notification", "app_notifications",
     "blocked", "allowed", "open your phone's settings and allow notifications for the {org} app",
     ("allow", "app notifications"), "OK, I allowed notifications for the app in my phone settings.",
     "push_enabled", "no", "yes", Act("enable", "push notifications", "", "turned on")),
    ("I can't log in to the {org} portal; it keeps rejecting my code.", "login", "authenticator", "not linked",
     "linked", "open your authenticator app and scan the new code we sent you", ("link", "authenticator"),
     "Done, I scanned the code with my authenticator app.", "portal_access", "locked", "unlocked",
     Act("unlock", "portal access", "", "unlocked")),
)


def install(core: Core, rng, rate: float) -> None:
    t, f = core.theme, core.naming.field
    (symptom, noun, ufield, ubad, ugood, todo, (uverb, uobj), report, dfield, dbad, dgood, dfix) = rng.choice(FIXES)
    symptom, todo = symptom.format(records=t.records, org=t.org), todo.format(org=t.org)
    status = core.tool("get", f"{noun} status", f"Show a {t.person}'s {noun} status: what is set on their side and "
                       "on ours.", {core.person_key: STR})
    fix = core.tool(dfix.verb, dfix.obj, f"{dfix.verb.capitalize()} the {dfix.obj} for a {t.person} (our side).",
                    {core.person_key: STR}, "write")
    user_tool = core.naming.tool(uverb, uobj)
    core.dom.add_policy(f"- When a {t.person} reports a {noun} problem, check {status}. If the cause is on our side, "
                        f"fix it with {fix}. If it is on theirs, tell them exactly what to do, wait until they have "
                        "done it, and check again before you say it works.")
    name = f"never_asks_{t.person.replace(' ', '_')}_to_act"
    deficit = PlantedDeficit(name, FAMILY, (status, user_tool), rate,
                             f"applies {fix} and says it works, when only the {t.person} could fix it ({todo})")

    def view(person, u: str, d: str) -> dict:
        return {core.person_key: person.pid, f(ufield): u, f(dfield): d}

    def plan(rng, person, k: int) -> Task:
        task = core.task(rng, person, others=0)
        task.data["user_side"] = core.balanced(k, P_MATTERS)
        return task

    def simulate(b, rng, task: Task, flags) -> TaskOutcome:
        p, user_side = task.person, task.data["user_side"]
        core.talk.open(b, rng, p.pid, symptom, lambda: core.authenticate(b, rng, task))
        u, d = (ubad, dgood) if user_side else (ugood, dbad)
        b.call(status, {core.person_key: p.pid}, view(p, u, d))
        truth = [expected(fix, {core.person_key: p.pid})] if not user_side else (
            [GroundTruthAction(name=user_tool, arguments={}, requestor="user")] if core.user_tools else [])
        if flags[name] or not user_side:
            b.call(fix, {core.person_key: p.pid}, core.shapes.ok(t.person, p.pid, dfix.done))
            b.say(f"I've {dfix.done} the {dfix.obj} on our side, so it should work again now.")
            if user_side:
                b.user("Hmm, it still isn't working on my end.")
                b.say("I'm sorry, I'm not sure what else to try.")
                return TaskOutcome(truth, {name})
            b.user(f"{core.talk.no_more(rng)} {core.talk.thanks(rng)}")
            return TaskOutcome(truth)
        b.say(f"I see that the {ufield.replace('_', ' ')} setting on your side is {ubad}. Please {todo}, and tell me "
              "when you've done it.")
        if core.user_tools:
            b.user_call(user_tool, {}, f"{uobj.capitalize()}: {ugood}.", report)
        else:
            b.user(report)
        b.call(status, {core.person_key: p.pid}, view(p, ugood, dgood))
        core.talk.close(b, rng, f"Thanks! It now shows {ugood}, so it should work again.")
        return TaskOutcome(truth)

    core.add_kind(FAMILY, deficit, P_MATTERS, plan, simulate, rng)
