"""A session's workspace files."""

from __future__ import annotations

from rest_framework import serializers


class WorkspaceFileSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    path = serializers.CharField(help_text="Relative path, like 'notes/day-1.md'.")
    size = serializers.IntegerField(help_text="Bytes.")
    produced_by_run_id = serializers.IntegerField(
        allow_null=True, help_text="The run whose agent last wrote it."
    )
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    url = serializers.CharField(help_text="Downloads it (GET, same access as the session).")
    download_url = serializers.CharField(help_text="The same download for the web pages.")


class WorkspaceFilesSerializer(serializers.Serializer):
    results = WorkspaceFileSerializer(many=True)
