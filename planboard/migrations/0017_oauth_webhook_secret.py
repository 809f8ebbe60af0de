"""Webhook secrets encrypted at rest like toolsets' secrets (planboard/secret_fields.py): the
column becomes text and every stored secret is encrypted under the configured key."""

from typing import Any

from django.db import migrations
from django.db.models import Value

import planboard.secret_fields


def encrypt_stored(apps: Any, schema_editor: Any) -> None:
    settings_model = apps.get_model("planboard", "NotificationSettings")
    for prefs in settings_model.objects.exclude(webhook_secret="").only("pk", "webhook_secret"):
        # Read as written before (plain text passes through), saved encrypted.
        prefs.save(update_fields=["webhook_secret"])


def decrypt_stored(apps: Any, schema_editor: Any) -> None:
    settings_model = apps.get_model("planboard", "NotificationSettings")
    for prefs in settings_model.objects.exclude(webhook_secret="").only("pk", "webhook_secret"):
        # A `Value` is written as given: the plain secret, as the old column held it.
        settings_model.objects.filter(pk=prefs.pk).update(
            webhook_secret=Value(prefs.webhook_secret)
        )


class Migration(migrations.Migration):
    dependencies = [
        ("planboard", "0016_elicitation"),
    ]

    operations = [
        migrations.AlterField(
            model_name="notificationsettings",
            name="webhook_secret",
            field=planboard.secret_fields.EncryptedTextField(
                blank=True, default="", max_length=100
            ),
        ),
        migrations.RunPython(encrypt_stored, decrypt_stored),
    ]
