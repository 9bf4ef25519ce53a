"""What a tool's name may be in a spec: identifiers, and the dotted and dashed names of MCP-style and REST-style tools
(`holds.cancel`, `order-cancel`) as agents' tool sets spell them; the TRL bridge maps the latter to Python names
(`trace_envs.integrations.trl.method_name`)."""

TOOL_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_.\-]{0,63}$"
