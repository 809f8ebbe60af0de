"""Length limits shared by the models, the services, the API serializers and the tool schemas."""

from __future__ import annotations

NAME_MAX = 200
TEXT_MAX = 4000
MESSAGE_MAX = 20000
# A hard ceiling on plan size, whatever a session allows; protects every caller.
SUBTASKS_HARD_LIMIT = 1000
