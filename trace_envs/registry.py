"""Registration of generated envs as `trace/<name>`: filled in by the envs issue."""


def register_all() -> list[str]:
    return []
