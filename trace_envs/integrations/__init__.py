"""Bridges from registered `trace/<name>` envs to training frameworks (TRL). Import the submodule you need:
`from trace_envs.integrations.trl import make_env_factory, build_dataset`; it needs the `train` extra."""
