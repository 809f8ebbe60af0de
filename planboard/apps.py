from django.apps import AppConfig


class PlanboardConfig(AppConfig):
    name = "planboard"
    verbose_name = "Planboard"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from planboard import access_events

        access_events.connect()
