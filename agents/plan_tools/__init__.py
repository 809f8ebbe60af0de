"""The ten plan tools' parts; `agents.tools` is the door the runtime uses."""
