from typing import Any

from django.db import migrations, models
from django.db.models import F, Q


def revoke_grants_of_others(apps: Any, schema_editor: Any) -> None:
    """Grants of "always allow" made by anyone but the session's owner (answerers could,
    before it became the owner's and staff's to give) stop letting calls run without asking;
    staff may give theirs again. The calls keep who decided them."""
    ToolCall = apps.get_model("planboard", "ToolCall")
    ToolCall.objects.filter(always_allow=True).filter(
        Q(decided_by__isnull=True) | ~Q(decided_by_id=F("session__owner_id"))
    ).update(always_allow=False)


class Migration(migrations.Migration):
    dependencies = [
        ("planboard", "0017_oauth_webhook_secret"),
    ]

    operations = [
        migrations.AddField(
            model_name="notificationsettings",
            name="named_by",
            field=models.CharField(
                choices=[
                    ("anyone", "Anyone"),
                    ("team", "People who share a team with me"),
                    ("nobody", "Nobody"),
                ],
                default="team",
                max_length=10,
            ),
        ),
        migrations.RunPython(revoke_grants_of_others, migrations.RunPython.noop),
    ]
