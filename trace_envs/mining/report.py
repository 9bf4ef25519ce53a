"""Mining outputs, written atomically: capabilities.json, candidates.json, report.md, report.png.

The set is built in a hidden sibling folder and swapped in whole (see `write_outputs`), so a kill leaves the old
complete set or the new one, never a half-written file or a mix.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

from trace_envs.atomic import staging_dir, swap_in, write_bytes_atomic

from trace_envs.mining.pipeline import MineResult


def candidates_doc(result: MineResult) -> dict[str, Any]:
    o = result.options
    return {
        "mode": result.mode,
        "runs": result.n_runs,
        "failed": result.n_failed,
        "passed": result.n_runs - result.n_failed,
        "thresholds": {"rho": o.rho, "delta": o.delta, "k": o.k, "n": o.n, "seed": o.seed,
                       "dup_agreement": o.dup_agreement},
        "contrast": result.contrast,
        "llm_usage": result.usage,
        "warnings": result.warnings,
        "failures": result.failures,
        "candidates": result.rows,
        "attribution": result.diagnosis.as_dict(),
    }


def render_markdown(result: MineResult, png_note: str | None = None) -> str:
    o = result.options
    lines = [
        "# Capability mining report",
        "",
        f"- runs: {result.n_runs} ({result.n_runs - result.n_failed} passed, {result.n_failed} failed)",
        f"- proposer: {result.mode}; candidates: {len(result.candidates)}; kept: {len(result.capabilities)}",
        f"- thresholds: Cov >= {o.rho}, Delta >= {o.delta}, in >= {o.k} of {o.n} bootstrap resamples (seed {o.seed})",
        f"- contrast groups: {result.contrast.get('groups', 0)} ({result.contrast.get('contrasting_groups', 0)} with "
        "both a pass and a failure)",
    ]
    if result.usage:
        u = result.usage
        cost = "unknown" if u.get("cost_usd") is None else f"${u['cost_usd']:.4f}"
        lines.append(f"- LLM: {u['requests']} requests, {u['cache_hits']} cache hits, {u['input_tokens']} input / "
                     f"{u['output_tokens']} output tokens, cost {cost}")
    lines += diagnosis_markdown(result)
    lines += ["", "## Capabilities the agent lacks", ""]
    if not result.capabilities:
        lines.append(f"None kept: {result.none_kept_reason()}.")
        lines += ["", *(f"- to keep something: {line}" for line in result.what_to_add())]
    for rank, spec in enumerate(result.capabilities, 1):
        ev = spec.evidence
        lines += [
            f"### {rank}. `{spec.name}` ({spec.family})",
            "",
            spec.description,
            "",
            f"- Cov {ev.cov:.2f}, Delta {ev.delta:.2f} (ER- {ev.er_minus:.2f}, ER+ {ev.er_plus:.2f}), passed "
            f"{ev.passes}/{ev.resamples} resamples",
            f"- tools: {', '.join(t.name for t in spec.tools)}; roles: "
            + ", ".join(f"{k}={v}" for k, v in spec.roles.items()),
            f"- failed runs lacking it: {', '.join(ev.lacking_failed[:8]) or '-'}",
            f"- passed runs exercising it: {', '.join(ev.present_passed[:8]) or '-'}",
            "",
        ]
    lines += ["## All candidates", "", "| candidate | family | Cov | Delta | ER- | ER+ | passes | status |",
              "|---|---|---|---|---|---|---|---|"]
    for r in sorted(result.rows, key=lambda r: (not r["kept"], -r["delta"])):
        status = r["status"] + ("; restates the outcome" if r.get("restates_outcome") else "")
        lines.append(f"| {r['name']} | {r['family']} | {r['cov']:.2f} | {r['delta']:.2f} | {r['er_minus']:.2f} | "
                     f"{r['er_plus']:.2f} | {r['passes']}/{r['resamples']} | {status} |")
    if result.warnings or result.failures:
        lines += ["", "## Warnings and failures", ""] + [f"- {w}" for w in result.warnings + result.failures]
    if png_note:
        lines += ["", f"_{png_note}_"]
    else:
        lines += ["", "![Cov and Delta per candidate](report.png)"]
    return "\n".join(lines) + "\n"


def diagnosis_markdown(result: MineResult, runs: int = 12) -> list[str]:
    """The report's "why the failed runs failed" section: the departure table, what the agent did instead of a
    missing write, and the first failed runs' departures with the two calls side by side."""
    d = result.diagnosis
    if not d.runs_with_gt:
        return ["", "## Why the failed runs failed", "",
                "The runs carry no expected actions, so failures are not attributed; each family labels from its "
                "own predicates."]
    lines = ["", "## Why the failed runs failed", "",
             f"{d.failed_with_gt} failed runs carry expected actions; a run can depart from them in several ways. "
             "Kinds marked **major** (share >= 0.15, at least 5 runs) should each be covered by a kept capability "
             "whose family teaches it.", "",
             "| departure | runs | share | tools | covered by |", "|---|---|---|---|---|"]
    for row in d.table():
        tools = ", ".join(f"{t} {n}" for t, n in list(row["tools"].items())[:4]) or "-"
        covered = ", ".join(f"`{n}`" for n in row["covered_by"]) or ("**none**" if row["major"] else "-")
        name = f"**{row['text']}**" if row["major"] else row["text"]
        lines.append(f"| {name} | {row['runs']} | {row['share']:.2f} | {tools} | {covered} |")
    if d.instead:
        lines += ["", "Instead of a missing write the agent: " + ", ".join(
            f"{k.replace('_', ' ')} {n}" for k, n in d.instead.most_common()) + "."]
    shown = [a for a in d.failed.values() if a.departures][:runs]
    if shown:
        lines += ["", f"### The first {len(shown)} failed runs (`trace-envs diagnose RUNS --run ID` for any run)", ""]
        for a in shown:
            counted = Counter(departure_line(dep) for dep in a.departures)
            lines.append(f"- `{a.run_id}`: " + "; ".join(
                line + (f" (x{n})" if n > 1 else "") for line, n in counted.items()))
    return lines


def departure_line(dep: Any) -> str:
    """One departure in a line: its kind, the tool and argument, and what differs (or what the agent did instead)."""
    where = dep.tool + (f".{dep.arg}" if dep.arg else "") if dep.tool else ""
    head = f"{dep.kind}" + (f" {where}" if where else "")
    if dep.arg:
        return f"{head}: {dep.evidence}"
    if dep.instead:
        return f"{head} (instead: {dep.instead.replace('_', ' ')})"
    return head


def render_png(result: MineResult) -> bytes | None:
    """Cov and Delta per candidate with the threshold lines; None when matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except Exception:
        return None
    import io

    rows = sorted(result.rows, key=lambda r: r["delta"])
    names = [r["name"][:48] for r in rows]
    colors = ["tab:green" if r["kept"] else "tab:gray" for r in rows]
    h = max(3.0, 0.28 * len(rows) + 1.2)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(13, h), sharey=True)
    ax1.barh(names, [r["cov"] for r in rows], color=colors)
    ax1.axvline(result.options.rho, color="tab:red", linestyle="--", label=f"rho = {result.options.rho}")
    ax1.set_xlabel("Cov = LF / failed runs")
    ax1.legend(loc="lower right")
    ax2.barh(names, [r["delta"] for r in rows], color=colors)
    ax2.axvline(result.options.delta, color="tab:red", linestyle="--", label=f"delta = {result.options.delta}")
    ax2.axvline(0, color="black", linewidth=0.5)
    ax2.set_xlabel("Delta = ER- - ER+")
    ax2.legend(loc="lower right")
    fig.suptitle(f"Candidates ({len(result.capabilities)} kept, green) over {result.n_runs} runs")
    ax1.tick_params(axis="y", labelsize=7)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)
    plt.close(fig)
    return buf.getvalue()


OUTPUT_FILES = ("capabilities.json", "candidates.json", "report.md", "report.png")


def write_outputs(result: MineResult, out_dir: str | Path) -> dict[str, Path]:
    """Write the outputs into `out_dir` so that a crash leaves the previous complete set or the new one.

    The set is built in a hidden sibling folder and swapped in whole when `out_dir` holds nothing but mining outputs;
    in a folder that also holds other files, each file is replaced atomically on its own (and the other files kept).
    """
    out = Path(out_dir)
    png = render_png(result)
    note = None if png is not None else "report.png skipped: matplotlib is not installed (pip install matplotlib)"
    caps = [c.model_dump(mode="json") for c in result.capabilities]
    files = {
        "capabilities.json": json.dumps(caps, indent=2, ensure_ascii=False).encode(),
        "candidates.json": json.dumps(candidates_doc(result), indent=2, ensure_ascii=False).encode(),
        "report.md": render_markdown(result, note).encode(),
    }
    if png is not None:
        files["report.png"] = png
    others = [p for p in out.iterdir() if p.name not in OUTPUT_FILES and not p.name.startswith(".")] if out.is_dir() else []
    if others:
        for name, data in files.items():
            write_bytes_atomic(out / name, data)
    else:
        staging = staging_dir(out)
        try:
            for name, data in files.items():
                (staging / name).write_bytes(data)
            swap_in(staging, out)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return {name: out / name for name in files}
