"""The agent: tools, hints, the litellm boundary and the loop. Depends on `planboard` only."""
