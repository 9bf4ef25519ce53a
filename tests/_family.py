"""Shared by the per-family tests: publish a committed example spec into a temporary folder and import its env."""

from __future__ import annotations

from pathlib import Path

from trace_envs.generate.publish import MODULE_FILE, GenerateResult, generate_one
from trace_envs.generate.validate import env_class, import_module_from
from trace_envs.runtime import TraceEnv
from trace_envs.spec.io import load_specs
from trace_envs.spec.model import CapabilitySpec

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "specs"


def publish_example(name: str, out: Path) -> tuple[CapabilitySpec, GenerateResult, type[TraceEnv]]:
    """Generate (with full validation) the example spec `name` into `out`; return the spec, the result and Env."""
    spec = load_specs(EXAMPLES / f"{name}.json")[0]
    result = generate_one(spec, out)
    assert result.published, result.error
    return spec, result, env_class(import_module_from(out / name / MODULE_FILE))
