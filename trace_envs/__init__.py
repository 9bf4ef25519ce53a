"""trace-envs: turn an agent's recurring failures into targeted Gymnasium training environments.

Importing the package registers every generated env it can find as `trace/<name>` (see `trace_envs.registry`).
"""

__version__ = "0.1.0"

from trace_envs.registry import register_all as _register_all

_register_all()
