"""Agent-side records (filled in by the agent runtime)."""
