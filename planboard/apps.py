from django.apps import AppConfig


class PlanboardConfig(AppConfig):
    name = "planboard"
    verbose_name = "Planboard"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.db.models.signals import post_delete

        from planboard import access_events, checks  # noqa: F401 (registers the checks)
        from planboard.api import schema  # noqa: F401 (registers the schema extensions)
        from planboard.models import WorkspaceFile
        from planboard.services.workspace import forget_blob_of_deleted_row

        access_events.connect()
        # However a file row goes (its service, a session's deletion), its blob goes too.
        post_delete.connect(
            forget_blob_of_deleted_row, sender=WorkspaceFile, dispatch_uid="workspace-blob"
        )
