from django.apps import AppConfig


class AgentsConfig(AppConfig):
    name = "agents"
    verbose_name = "Agent runtime"
    default_auto_field = "django.db.models.BigAutoField"
