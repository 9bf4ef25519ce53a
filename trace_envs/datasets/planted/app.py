"""Planted task kind `app` (family user_side_action): the store's app runs on the user's phone, and only the user can
turn its notifications on or update it. The agent reads the app's status, tells the user the one fix the status shows,
reads again to check, then says it works. Deficit `vague_user_instruction`: the agent gives vague advice instead, so
the user never acts and the run fails."""

from __future__ import annotations

import json
import random
import re
from typing import Any

from trace_envs.datasets.planted.agent import Step
from trace_envs.datasets.planted.core import CLOSING, PlantedKind, Scenario, builder, finish, register_kind, user_record
from trace_envs.datasets.sim import STR, PlantedDeficit, fn_schema
from trace_envs.trajectories.models import GroundTruthAction, Run

APP_READ, APP_NOTIFY, APP_UPDATE = "get_app_status", "enable_app_notifications", "update_app"
LATEST_APP, OLD_APPS = "5.4.0", ("5.1.0", "5.2.3", "4.9.1")
APP_SYMPTOM = "I'm not getting any delivery notifications from your app anymore."
_APP_FIXES = {  # user tool -> (status field, value before, value after, instruction, what the user says)
    APP_NOTIFY: ("notifications", "off", "on", "turn on notifications for the store app",
                 "OK, I turned on notifications for the store app."),
    APP_UPDATE: ("app_version", None, LATEST_APP, "update the store app to the latest version",
                 "OK, I updated the store app."),
}


def _simulate_app(run_idx: int, rng: random.Random, sc: Scenario, flags: dict[str, bool], noise_rate: float
                  ) -> tuple[Run, dict[str, Any]]:
    fix = rng.choice(sorted(_APP_FIXES))
    field_, before, after, instruction, report = _APP_FIXES[fix]
    status = {"user_id": sc.user_id, "device": rng.choice(["Pixel 7", "iPhone 14", "Galaxy S23", "iPhone 12"]),
              "app_version": LATEST_APP, "latest_version": LATEST_APP, "notifications": "on"}
    status[field_] = before if before is not None else rng.choice(OLD_APPS)
    b = builder(rng)
    opening = f"Hi, I'm {sc.name}, user id {sc.user_id}. {APP_SYMPTOM}"
    b.user(opening)
    b.call("get_user_details", {"user_id": sc.user_id}, user_record(sc))
    b.call(APP_READ, {"user_id": sc.user_id}, status)
    shown = flags["vague_user_instruction"]
    if shown:
        b.say("Please check the settings on your phone and try again; that usually helps.")
        b.user("I looked, but I don't know what to change.")
        b.say("I'm sorry, I can't see anything else to do. You're welcome to try again later.")
    else:
        what = "notifications are off" if fix == APP_NOTIFY else f"the app is on version {status['app_version']}"
        b.say(f"Your app status shows that {what}. Only you can change that on your phone: please {instruction}, "
              "and tell me when it's done.")
        fixed = {**status, field_: after}
        b.user_call(fix, {}, {field_: after}, report)
        b.call(APP_READ, {"user_id": sc.user_id}, fixed)
        b.say(f"Thanks, I checked again: your app's {field_.replace('_', ' ')} is now {after}, so delivery "
              "notifications will reach you again.")
        b.user("Thanks, that's all.")
        b.say(CLOSING)
    return finish(run_idx, rng, b, "app", ["vague_user_instruction"] if shown else [], noise_rate, False, ["app"],
                  [GroundTruthAction(name=fix, arguments={}, requestor="user")], opening)


def _app_status(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for m in messages:
        if m.get("role") == "tool" and isinstance(m.get("content"), str) and '"notifications"' in m["content"]:
            try:
                out.append(json.loads(m["content"]))
            except ValueError:
                continue
    return out


def _app_step(step: Step, state: dict[str, Any], flags: dict[str, bool], messages: list[dict[str, Any]]) -> str:
    """The planted agent on an app task: read the status, ask for the one fix it shows (or, with the deficit, give
    vague advice), read again, say it works."""
    read = json.dumps({"name": APP_READ, "arguments": {"user_id": state["user"]}})
    seen = _app_status(messages)
    if step.stage == "start":
        step.stage = "read"
        return read
    if step.stage == "read" and seen:
        if flags["vague_user_instruction"]:
            step.stage = "done"
            state["handled"] += 1
            return "Please check the settings on your phone and try again; that usually helps."
        step.stage = "asked"
        first = seen[0]
        if first.get("notifications") == "off":
            return "Notifications are off in your app. Please turn on notifications for the store app on your phone."
        return "Your app is out of date. Please update the store app to the latest version."
    if step.stage == "asked":
        step.stage = "verify"
        return read
    step.stage = "done"
    state["handled"] += 1
    field_ = "notifications" if seen and seen[0].get("notifications") == "off" else "app_version"
    value = seen[-1].get(field_) if seen else ""
    return (f"Thanks, I checked again: your app's {field_.replace('_', ' ')} is now {value}, so delivery notifications "
            "will reach you again.")


register_kind(PlantedKind(
    name="app",
    order=2,
    # The app task's share comes out of the multi-request tasks, whose deficit has the most coverage to spare: the
    # other deficits keep the share of failed runs (Cov) the miner needs to find them.
    share=0.12,
    share_from="multi",
    exposure=frozenset({"vague_user_instruction"}),
    policy="""- The store app runs on the user's phone, which only the user can change. If the user gets no notifications,
  look up the app's status with get_app_status: when notifications are off, ask the user to turn on notifications
  for the app (enable_app_notifications, on their side); when the app version is older than the latest version, ask
  the user to update the app (update_app, on their side). Ask only for the fix the status shows, then look the status
  up again to check it before telling the user it works.
""",
    tools=(("read", fn_schema(APP_READ, "Get the status of the store app on the user's phone: version, latest version "
                              "and notifications.", {"user_id": STR}, ["user_id"])),),
    deficits=(PlantedDeficit(
        "vague_user_instruction", "user_side_action", (APP_READ, APP_NOTIFY, APP_UPDATE), 0.8,
        "gives vague advice instead of telling the user the one fix on their side, which the user then never does"),),
    simulate=_simulate_app,
    wants=lambda opening: re.search(r"\bapp\b", opening.lower()) is not None,
    step=_app_step,
))
