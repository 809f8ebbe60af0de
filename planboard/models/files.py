"""Files the agent produces: a session's workspace."""

from __future__ import annotations

from django.db import models

from planboard.models.sessions import AgentRun, ChatSession

# A workspace path: ASCII segments joined by "/" (see `planboard.workspace.clean_path`).
WORKSPACE_PATH_MAX = 200


class WorkspaceFile(models.Model):
    """A file in a session's workspace, written by the agent (the `workspace` toolset). Its
    bytes live in Django's default storage under `storage_name` (never derived from `path`,
    so a path can never reach outside the session's files); each write stores a new blob."""

    session = models.ForeignKey(ChatSession, on_delete=models.CASCADE, related_name="files")
    path = models.CharField(max_length=WORKSPACE_PATH_MAX)
    storage_name = models.CharField(max_length=300, unique=True)
    size = models.PositiveIntegerField(default=0)
    # The run whose agent last wrote it.
    produced_by = models.ForeignKey(
        AgentRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="files"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["session_id", "path"]
        constraints = [
            models.UniqueConstraint(fields=["session", "path"], name="unique_workspace_path")
        ]

    def __str__(self) -> str:
        return f"{self.path} (session {self.session_id})"
