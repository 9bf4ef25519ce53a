"""Measure the committed envs with three third-party reward-integrity tools: falsepass, rl-envdoctor, gradecheck.

Run it from its own venv (not the project's .venv), which holds trace-envs and the three tools only:

    .venv/bin/python -m venv ../tpvenv
    .venv/bin/pip freeze | grep -v -e '^-e' -e '@ file' -e trace.envs > /tmp/tp_constraints.txt
    ../tpvenv/bin/pip install -c /tmp/tp_constraints.txt -e .                # base package only: no torch
    ../tpvenv/bin/pip install -c /tmp/tp_constraints.txt openenv-core falsepass==0.11.0 rl-envdoctor==0.1.0 \
        gradecheck==0.1.0                                                     # openenv-core: `trace-envs serve`
    ../tpvenv/bin/python scripts/third_party_probes.py [--envs a,b] [--seeds 20] [--no-serve] [--search 120] [--out DIR]

It prints one table (tool/probe x env: max and mean reward over the seeds and the probe's variants), then, for every
known-bad probe that earned more than 0 on an env, its best-paid episode replayed by hand with a fresh
`gym.make(env_id)` (terminal rewards): seed, actions, reward, reward_breakdown.

None of the tools knows a multi-turn Gymnasium env, so one thin adapter maps their shapes onto an episode. It is the
same for all three tools:

- a task ("example", "case") is one seed s in 0..N-1 of the env; its prompt is the user's opening (reset's
  observation); its reference answer is the oracle episode of that seed written as a JSON object,
  {"actions": [{"name": tool, "arguments": {...}} | {"say": text}, ...]} (`env.unwrapped.oracle_actions()`);
- a completion (text) is played as an episode on that seed: text that parses as such a JSON object plays its actions
  in order (a call as '{"name": ..., "arguments": ...}', a "say" as a message to the user); any other text is ONE
  message to the user, exactly as written. A message list plays each assistant message that way, and each of its
  tool calls as a call. A falsepass `Policy` is asked for each next action with the env's messages (and tool schemas)
  so far;
- play stops when the env says terminated or truncated, or when the actions run out; the reward is the sum of the
  per-turn rewards (`reward_mode="per_turn"`), which is the check's score of the episode so far, as the project's own
  probe battery scores a script that runs out.

What each tool is given:

- falsepass 0.11.0: its runner (`python -m falsepass.runner AUDIT_DIR`, which is what `falsepass audit` runs inside a
  throw-away uv virtualenv; uv is not on this machine) on an audit folder whose adapter.py is `FalsepassEpisodes`
  below, three ways: (1) "fp" answer mode: every per-example probe on all seeds and the few-example probes (P10, P11,
  T4, T5, T8) on all seeds too (--few N); (2) "fp-tools" tool mode: T5 and T6 (policies built from the tool schemas
  alone); (3) "fp-openenv": no adapter of ours: falsepass's own OpenEnv support on a folder whose server/app.py is
  trace-envs' served app (`build_app(env_id)`), tasks.json = [{"seed": s}], one reply per task stepped into the
  env class the app serves. (1) and (2) also run over `trace-envs serve ENV --reward-mode per_turn` ("@serve": the
  adapter plays every episode through `RemoteEnv(url)`, a WebSocket session); falsepass itself never opens a
  connection (its OpenEnv support imports the app and drives the env class in process), so (3) has no served form.
- rl-envdoctor 0.1.0: `envdoctor.scan(FunctionTarget(reward_fn, cases), n_cases=N, repeats=2)` and `run_checks` (the
  library API of `envdoctor scan module::target`); reward_fn plays the completion as above.
- gradecheck 0.1.0: its completion attacks (`completion_attacks.run_all`, what `gradecheck verifiers` runs) on a
  `VerifiersEnv` built from a stand-in env object with a rubric of one reward function (plays the completion as
  above) and one dataset row per seed; no `verifiers` package is needed for that. Rewards per attack are read by
  scoring each attack's own candidates (`attack.candidates`) once more. Its file-tree mode (`gradecheck run`, a
  source tree graded by a test command) has no counterpart in a conversation env and is not run.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import gymnasium as gym

import trace_envs  # noqa: F401  (registers trace/<name>)

ROOT = Path(__file__).resolve().parent.parent
HERE = Path(__file__).resolve().parent
WRONG = "I am not sure how to approach this, so I will not give an answer."  # falsepass's wrong answer for long references
MAX_POLICY_TURNS = 40


# ---- the adapter: a completion becomes an episode ------------------------------------------------------------------

def _entry(action: str) -> dict[str, Any]:
    try:
        value = json.loads(action)
    except ValueError:
        value = None
    if isinstance(value, dict) and set(value) == {"name", "arguments"}:
        return {"name": value["name"], "arguments": value["arguments"]}
    return {"say": action}


def _action(entry: Any) -> str:
    if isinstance(entry, dict) and "name" in entry:
        return json.dumps({"name": entry["name"], "arguments": entry.get("arguments", {})})
    if isinstance(entry, dict) and "say" in entry:
        return str(entry["say"])
    return entry if isinstance(entry, str) else json.dumps(entry)


def _call(call: dict[str, Any]) -> str:
    function = call.get("function", call)
    arguments = function.get("arguments", {})
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            pass
    return json.dumps({"name": function.get("name"), "arguments": arguments})


def actions_of(completion: Any) -> list[str]:
    """The actions a completion plays (see the module's docstring)."""
    if isinstance(completion, str):
        try:
            value = json.loads(completion)
        except ValueError:
            value = None
        if isinstance(value, dict) and isinstance(value.get("actions"), list):
            return [_action(e) for e in value["actions"]]
        return [completion]
    if isinstance(completion, dict):  # one reply of a policy: {"content": ..., "tool_calls": [...]}
        out = actions_of(completion["content"]) if isinstance(completion.get("content"), str) and completion["content"] else []
        return out + [_call(c) for c in completion.get("tool_calls") or []]
    out: list[str] = []
    for message in completion or []:
        if isinstance(message, dict) and message.get("role") == "assistant":
            out += actions_of({k: message.get(k) for k in ("content", "tool_calls")})
    return out


def reference(env_id: str, seed: int) -> tuple[str, str]:
    """(the user's opening, the oracle episode as the JSON reference) of one seed."""
    env = gym.make(env_id)
    opening, _ = env.reset(seed=seed)
    ref = json.dumps({"actions": [_entry(a) for a in env.unwrapped.oracle_actions()]})
    env.close()
    return opening, ref


class Player:
    """Plays episodes of one env, in process (`gym.make(env_id, reward_mode="per_turn")`) or over `trace-envs serve`
    (`RemoteEnv(url)`, a server started with --reward-mode per_turn)."""

    def __init__(self, env_id: str, url: str | None = None):
        self.env_id, self.url = env_id, url
        if url:
            from trace_envs.serving.remote import RemoteEnv

            self.env = RemoteEnv(url)
        else:
            self.env = gym.make(env_id, reward_mode="per_turn")
        self.log: dict[tuple[int, str], dict[str, Any]] = {}  # (seed, completion key) -> the last play

    def play(self, seed: int, actions: list[str] | None = None, policy: Any = None) -> dict[str, Any]:
        _, info = self.env.reset(seed=seed)
        tools = [{"name": t["function"]["name"], "parameters": t["function"]["parameters"]} for t in info.get("tools", [])]
        messages = list(info.get("messages", []))
        total, breakdown, ended, stop, script = 0.0, {}, False, "actions ran out", []
        queue = list(actions or [])
        turns = 0
        while not ended:
            if policy is not None and not queue:
                if turns >= MAX_POLICY_TURNS:
                    stop = "policy turn cap"
                    break
                reply = policy.act(messages, tools) if policy.wants_tools else policy.act(messages)
                turns += 1
                queue = actions_of(reply) if isinstance(reply, (str, dict)) else []
                if not queue or queue == [""]:
                    stop = "policy said nothing"
                    break
            if not queue:
                break
            action = queue.pop(0)
            script.append(action)
            _, reward, terminated, truncated, info = self.env.step(action)
            total += reward
            messages = list(info.get("messages", messages))
            breakdown = info.get("reward_breakdown", breakdown)
            if terminated or truncated:
                ended, stop = True, "terminated" if terminated else "truncated"
        return {"reward": total, "breakdown": breakdown, "stop": stop, "script": script, "messages": messages,
                "turns": len(script), "tools": [t["name"] for t in tools]}

    def close(self) -> None:
        self.env.close()


def replay_by_hand(env_id: str, seed: int, actions: list[str]) -> dict[str, Any]:
    """A fresh `gym.make(env_id)` (terminal rewards), stepped through `actions`; the check's score if they run out."""
    env = gym.make(env_id)
    env.reset(seed=seed)
    reward, info, ended = 0.0, {}, False
    for action in actions:
        _, reward, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            ended = True
            break
    if not ended:
        result = env.unwrapped.score()
        reward, info = result.score, {"reward_breakdown": result.breakdown}
    env.close()
    return {"reward": float(reward), "breakdown": info.get("reward_breakdown"), "ended": ended}


# ---- falsepass -----------------------------------------------------------------------------------------------------

class FalsepassScorer:
    multi_turn = True  # falsepass then runs its multi-turn probes (T4, T5, T8) and skips T7
    concurrent_safe = False

    def __init__(self, player: Player):
        self.player = player

    @property
    def weights(self) -> dict[str, float]:
        return {}

    async def score(self, example: Any, completion: Any) -> Any:
        from falsepass.model import Policy, Score

        try:
            if isinstance(completion, Policy):
                played = self.player.play(example.raw["seed"], policy=completion)
            else:
                played = self.player.play(example.raw["seed"], actions_of(completion))
        except Exception as exc:  # noqa: BLE001 - reported by falsepass as an error row
            return Score(None, {}, [f"{type(exc).__name__}: {exc}"])
        transcript = [{"role": m.get("role"), "content": " ".join(filter(None, [str(m.get("content") or "")] + [
            _call(c) for c in m.get("tool_calls") or []]))} for m in played["messages"]]  # falsepass joins contents
        info = {"turns": played["turns"], "stop": played["stop"], "transcript": transcript,
                "script": played["script"], "tools": played["tools"]}
        metrics = {k: float(v) for k, v in (played["breakdown"] or {}).items() if isinstance(v, (int, float))}
        return Score(played["reward"], metrics, [], info)

    async def close(self) -> None:
        self.player.close()


def _falsepass_adapter_class():
    from falsepass import Adapter, Example

    class FalsepassEpisodes(Adapter):
        """falsepass's adapter: a seed is a task, the oracle episode its reference (see the module's docstring)."""

        max_reward = 1.0

        def __init__(self, env_id: str, url: str | None = None, tool_mode: bool = False):
            self.name = env_id + (" @serve" if url else "")
            self.env_id, self.url, self.tool_mode = env_id, url, tool_mode

        def load(self, n: int, seed: int):  # n seeds, 0..n-1; falsepass's sampling seed is not used
            examples = []
            for s in range(n):
                opening, ref = reference(self.env_id, s)
                examples.append(Example(f"seed-{s}", opening, ref, {"seed": s}))
            return FalsepassScorer(Player(self.env_id, self.url)), examples

        def render(self, answer: str, example: Any) -> str:
            return answer

        def wrong_answer(self, example: Any) -> str:
            return WRONG

    return FalsepassEpisodes


def FalsepassEpisodes(env_id: str, url: str | None = None, tool_mode: bool = False):  # noqa: N802 - adapter.py's ADAPTER
    return _falsepass_adapter_class()(env_id, url, tool_mode)


def run_falsepass(env_id: str, mode: str, seeds: int, out: Path, url: str | None = None,
                  search: int = 0) -> list[dict[str, Any]]:
    """One falsepass runner invocation; returns its result rows (each with `actions` of the completion it scored)."""
    audit = out / "falsepass" / (env_id.split("/")[-1] + f"-{mode}" + ("-serve" if url else ""))
    audit.mkdir(parents=True, exist_ok=True)
    if mode == "openenv":
        app_dir = audit / "app"
        (app_dir / "server").mkdir(parents=True, exist_ok=True)
        (app_dir / "server" / "app.py").write_text(
            f"from trace_envs.serving.server import build_app\n\napp = build_app({env_id!r})\n")
        (audit / "env.toml").write_text(f'[env]\nid = "{env_id}"\nframework = "openenv"\ntask = "{app_dir}"\n')
        (audit / "tasks.json").write_text(json.dumps([{"key": f"seed-{s}", "seed": s} for s in range(seeds)]))
    else:
        (audit / "env.toml").write_text(f'[env]\nid = "{env_id}"\nframework = "adapter"\n')
        (audit / "adapter.py").write_text(
            "from third_party_probes import FalsepassEpisodes\n\n"
            f"ADAPTER = FalsepassEpisodes({env_id!r}, url={url!r}, tool_mode={mode == 'tools'})\n")
    results = audit / "out"
    command = [sys.executable, "-m", "falsepass.runner", str(audit), "-n", str(seeds), "--few", str(seeds),
               "--jobs", "1", "--out", str(results)] + (["--search", str(search)] if search and mode == "episode" else [])
    environ = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(command, capture_output=True, text=True, env=environ, cwd=str(audit))
    (audit / "runner.log").write_text(done.stdout + "\n" + done.stderr)
    if not (results / "probe-results.json").is_file():
        raise RuntimeError(f"falsepass runner wrote no results (exit {done.returncode}): {done.stderr[-600:]}")
    payload = json.loads((results / "probe-results.json").read_text())
    stored = json.loads((results / "completions.json").read_text())
    rows = []
    for r in payload["results"]:
        if r["probe"] == "P12":  # dataset hygiene: no reward
            continue
        completion = stored.get(r.get("completion_id") or "")
        actions = completion["script"] if isinstance(completion, dict) else actions_of(completion) if completion is not None else None
        seed = int(r["example"].split("-")[-1]) if r["example"].split("-")[-1].isdigit() else None
        rows.append({"probe": f"{r['probe']} {r['name']}", "variant": r["variant"], "seed": seed, "score": r["score"],
                     "expected": r["expected"], "errors": r.get("errors") or [], "actions": actions,
                     "answer_free": r.get("answer_free", False)})
    return rows


# ---- rl-envdoctor --------------------------------------------------------------------------------------------------

def run_envdoctor(env_id: str, seeds: int) -> list[dict[str, Any]]:
    from envdoctor import FunctionTarget, run_checks, scan
    from envdoctor.types import Case

    player = Player(env_id)
    cases = []
    for s in range(seeds):
        opening, ref = reference(env_id, s)
        cases.append(Case(id=f"seed-{s}", prompt=opening, answer=ref, info={"seed": s}))

    def reward_fn(completion: str, case: Any) -> float:
        return player.play(case.info["seed"], actions_of(completion))["reward"]

    report = run_checks(scan(FunctionTarget(reward_fn, cases, name=env_id), n_cases=seeds, seed=0, repeats=2))
    kinds = {p["policy"]: p["kind"] for p in report.stats.get("policies", [])}
    player.close()
    rows = [{"probe": t.policy, "variant": "", "seed": int(t.case_id.split("-")[-1]), "score": t.score.reward,
             "expected": {"exploit": "zero", "probe": "zero"}.get(kinds.get(t.policy, ""), "full"
                                                                    if t.policy.startswith("oracle") else "baseline"),
             "errors": [t.score.error] if t.score.error else [], "actions": actions_of(t.completion)}
            for t in report.trials]
    findings = [f"{f.severity}: {f.check}: {f.title}" for f in report.sorted_findings()]
    return rows, findings


# ---- gradecheck ----------------------------------------------------------------------------------------------------

def run_gradecheck(env_id: str, seeds: int) -> list[dict[str, Any]]:
    from gradecheck import completion_attacks as ca
    from gradecheck.verifiers_env import VerifiersEnv

    player = Player(env_id)
    rows_data = []
    for s in range(seeds):
        opening, ref = reference(env_id, s)
        rows_data.append({"prompt": [{"role": "user", "content": opening}], "answer": ref, "info": {"seed": s}})

    def reward(completion: Any, info: dict[str, Any], **_: Any) -> float:
        return player.play(info["seed"], actions_of(completion))["reward"]

    class Rubric:
        funcs, weights = [reward], [1.0]

    class StandIn:  # what VerifiersEnv reads of a verifiers environment
        rubric, parser, message_type = Rubric(), None, "chat"

        def get_dataset(self):
            return rows_data

    env = VerifiersEnv(StandIn(), sample=seeds)
    findings = [f"{f.verdict}: {f.attack}: {f.summary}" for f in ca.run_all(env)]
    rows = []
    for ex in env.examples:  # the gold answer, as run_all's baseline scores it
        gold = env.formatted_gold(ex.answer)
        rows.append({"probe": "baseline gold", "variant": "", "seed": ex.index, "score": env.score(ex, gold),
                     "expected": "full", "errors": [], "actions": actions_of(gold)})
    for attack in ca._ATTACKS:  # noqa: SLF001 - the attack objects run_all plays; read for per-attack rewards
        for ex in env.examples:
            for label, completion in attack.candidates(ex, env):
                rows.append({"probe": attack.id, "variant": label, "seed": ex.index, "score": env.score(ex, completion),
                             "expected": "zero", "errors": [], "actions": actions_of(completion)})
    player.close()
    return rows, findings


# ---- serving -------------------------------------------------------------------------------------------------------

class Served:
    """`trace-envs serve ENV --port P --reward-mode per_turn`, started and stopped around a block."""

    def __init__(self, env_id: str):
        self.env_id = env_id

    def __enter__(self) -> str:
        from trace_envs.serving.health import free_port, wait_for_server

        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        exe = Path(sys.executable).with_name("trace-envs")
        self.process = subprocess.Popen([str(exe), "serve", self.env_id, "--port", str(port), "--reward-mode", "per_turn"],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for_server(self.url, timeout_s=120, process=self.process)
        return self.url

    def __exit__(self, *exc: Any) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


# ---- the table -----------------------------------------------------------------------------------------------------

BAD = {"zero", "below_reference", "lazy"}


def _cell(scores: list[float]) -> str:
    if not scores:
        return "-"
    top, mean = max(scores), statistics.fmean(scores)
    return "0" if top == 0 else f"{top:.2f}/{mean:.2f}"


def print_table(envs: list[str], cells: dict[tuple[str, str], list[dict[str, Any]]]) -> None:
    keys = sorted({k for k, _ in cells}, key=lambda k: (k.split(":")[0], k))
    print("\nEnvs (columns):")
    for i, env in enumerate(envs, 1):
        print(f"  e{i:<2} {env}")
    print("\nCell: max/mean reward over the seeds (and the probe's variants); 0 where every episode earned 0.0; "
          "'-' not run.\nexpect: what a sound reward gives it (zero, below_ref[erence], lazy = a fixed strategy's mean, "
          "full, stable = same score every time, baseline = not judged).")
    width = max(len(k) for k in keys) + 2
    head = f"{'tool/probe':<{width}}{'expect':<11}" + "".join(f"{'e' + str(i):>10}" for i in range(1, len(envs) + 1))
    print("\n" + head)
    print("-" * len(head))
    for key in keys:
        expected = sorted({r["expected"] for env in envs for r in cells.get((key, env), [])})
        label = ",".join(e.replace("below_reference", "below_ref") for e in expected)
        line = f"{key:<{width}}{label:<11}"
        for env in envs:
            scores = [r["score"] for r in cells.get((key, env), []) if isinstance(r["score"], (int, float))
                      and not math.isnan(r["score"])]
            line += f"{_cell(scores):>10}"
        print(line)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--envs", default="", help="comma-separated dirnames of generated/ (default: all)")
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--no-serve", action="store_true", help="skip falsepass over `trace-envs serve`")
    parser.add_argument("--out", type=Path, default=Path("/tmp/third_party_probes"))
    parser.add_argument("--tools", default="fp,fp-tools,fp-openenv,envdoctor,gradecheck,serve")
    parser.add_argument("--search", type=int, default=0, metavar="CALLS",
                        help="also falsepass's mutation search (S1-S3) in process: scorer calls per direction and "
                             "example, on its first 3 seeds (falsepass's --search; 0 = off)")
    args = parser.parse_args(argv)
    names = [n for n in args.envs.split(",") if n] or sorted(p.name for p in (ROOT / "generated").iterdir() if p.is_dir())
    envs = [f"trace/{n}" for n in names]
    tools = set(args.tools.split(","))
    if args.no_serve:
        tools.discard("serve")
    args.out.mkdir(parents=True, exist_ok=True)
    from importlib import metadata

    print("versions: " + ", ".join(f"{p} {metadata.version(p)}" for p in
                                   ["trace-envs", "falsepass", "rl-envdoctor", "gradecheck", "openenv-core", "gymnasium"]))
    cells: dict[tuple[str, str], list[dict[str, Any]]] = {}
    findings: dict[str, list[str]] = {}
    errors: dict[str, set] = {}  # scoring errors: what happened -> the (env, seed) pairs it happened on

    def add(tool: str, env_id: str, rows: list[dict[str, Any]]) -> None:
        for r in rows:
            cells.setdefault((f"{tool}:{r['probe']}", env_id), []).append(r)
            if r["score"] is None or r["errors"]:
                cause = " ".join(" ".join(map(str, r["errors"])).split())[:160]
                key = f"{tool} {r['probe']}/{r['variant']}: score {r['score']}: {cause}"
                errors[key] = errors.get(key, set()) | {(env_id, r["seed"])}

    steps = [("fp", lambda e: run_falsepass(e, "episode", args.seeds, args.out, search=args.search)),
             ("fp-tools", lambda e: run_falsepass(e, "tools", args.seeds, args.out)),
             ("fp-openenv", lambda e: run_falsepass(e, "openenv", args.seeds, args.out)),
             ("envdoctor", lambda e: run_envdoctor(e, args.seeds)),
             ("gradecheck", lambda e: run_gradecheck(e, args.seeds))]
    for tool, fn in steps:
        if tool not in tools:
            continue
        started = time.monotonic()
        for env_id in envs:
            try:
                got = fn(env_id)
            except Exception as exc:  # noqa: BLE001 - a tool that cannot run on an env is reported, the rest go on
                errors[f"{tool}: did not run: {type(exc).__name__}: {str(exc)[:300]}"] = {(env_id, None)}
                continue
            rows, found = got if isinstance(got, tuple) else (got, None)
            add(tool, env_id, rows)
            if found is not None:
                findings[f"{tool} {env_id}"] = found
        print(f"[{tool}] {len(envs)} envs x {args.seeds} seeds: {time.monotonic() - started:.1f} s", flush=True)
    if "serve" in tools:
        started = time.monotonic()
        for env_id in envs:
            try:
                with Served(env_id) as url:
                    add("fp@serve", env_id, run_falsepass(env_id, "episode", args.seeds, args.out, url))
                    add("fp-tools@serve", env_id, run_falsepass(env_id, "tools", args.seeds, args.out, url))
            except Exception as exc:  # noqa: BLE001
                errors[f"serve: did not run: {type(exc).__name__}: {str(exc)[:300]}"] = {(env_id, None)}
        print(f"[fp over trace-envs serve] {len(envs)} envs x {args.seeds} seeds: {time.monotonic() - started:.1f} s",
              flush=True)

    print_table(envs, cells)

    print("\nFindings the tools report (envdoctor's checks, gradecheck's verdicts), those not 'resisted'/'info':")
    for where, found in findings.items():
        shown = [f for f in found if not f.startswith(("resisted", "info"))]
        print(f"  {where}: " + ("none" if not shown else "; ".join(shown)))

    print("\nScoring errors (score None, or an error the tool recorded), with the envs and episodes they hit:",
          "none" if not errors else "")
    for what, where in sorted(errors.items()):
        hit = sorted({env for env, _ in where})
        print(f"  {what}\n    on {len(where)} episodes of {len(hit)} envs" + (f" ({', '.join(hit)})" if len(hit) < 4 else ""))

    print("\nKnown-bad probes that earned more than 0, best-paid seed replayed with a fresh gym.make (terminal rewards):")
    any_paid = False
    for (key, env_id), rows in sorted(cells.items()):
        bad = [r for r in rows if r["expected"] in BAD and isinstance(r["score"], (int, float)) and r["score"] > 0
               and r["seed"] is not None and r["actions"] is not None]
        if not bad:
            continue
        any_paid = True
        best = max(bad, key=lambda r: r["score"])
        by_hand = replay_by_hand(env_id, best["seed"], best["actions"])
        print(f"\n  {env_id}  {key}/{best['variant'] or '-'}  ({len(bad)} paid episodes of {len(rows)}; expect "
              f"{best['expected']})\n    tool's reward {best['score']:.4f}; by hand: seed {best['seed']}, reward "
              f"{by_hand['reward']:.4f}, ended {by_hand['ended']}, reward_breakdown {by_hand['breakdown']}")
        for action in best["actions"]:
            print("      " + (action if len(action) <= 240 else action[:200] + f" ... [{len(action)} chars]"))
    if not any_paid:
        print("  none")
    return 0


if __name__ == "__main__":
    sys.exit(main())
