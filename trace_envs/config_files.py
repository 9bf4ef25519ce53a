"""Reading a YAML or JSON options file (a `run --config`, a `train --config`) into a mapping."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def read_mapping(path: str | Path) -> dict[str, Any]:
    """The mapping a `.json` file (else YAML) holds; an empty file is an empty mapping. Raises ValueError when the file
    holds something else (a list, a scalar)."""
    text = Path(path).read_text(encoding="utf-8")
    if str(path).endswith(".json"):
        data = json.loads(text)
    else:
        import yaml

        data = yaml.safe_load(text)
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ValueError(f"{path}: a config file must hold a mapping")
    return data
