"""CapabilitySpec and its JSON Schema."""
