"""Toolsets' env, headers and URL encrypted at rest (planboard/secret_fields.py): the columns
become text and every stored value is encrypted under the configured key."""

import json
from typing import Any

from django.db import migrations
from django.db.models import Value

import planboard.secret_fields

SECRET_FIELDS = ("env", "headers", "url")


def encrypt_stored(apps: Any, schema_editor: Any) -> None:
    toolset_model = apps.get_model("planboard", "Toolset")
    for toolset in toolset_model.objects.only("pk", *SECRET_FIELDS):
        # Read as written before (plain text passes through), saved encrypted.
        toolset.save(update_fields=list(SECRET_FIELDS))


def decrypt_stored(apps: Any, schema_editor: Any) -> None:
    toolset_model = apps.get_model("planboard", "Toolset")
    for toolset in toolset_model.objects.only("pk", *SECRET_FIELDS):
        # A `Value` is written as given: plain JSON text, plain URL, as the old columns held.
        toolset_model.objects.filter(pk=toolset.pk).update(
            env=Value(json.dumps(toolset.env or {})),
            headers=Value(json.dumps(toolset.headers or {})),
            url=Value(toolset.url or ""),
        )


class Migration(migrations.Migration):
    dependencies = [
        ("planboard", "0010_toolset_discovery"),
    ]

    operations = [
        migrations.AlterField(
            model_name="toolset",
            name="env",
            field=planboard.secret_fields.EncryptedJSONField(blank=True, default=dict),
        ),
        migrations.AlterField(
            model_name="toolset",
            name="headers",
            field=planboard.secret_fields.EncryptedJSONField(blank=True, default=dict),
        ),
        migrations.AlterField(
            model_name="toolset",
            name="url",
            field=planboard.secret_fields.EncryptedTextField(
                blank=True, default="", max_length=500
            ),
        ),
        migrations.RunPython(encrypt_stored, decrypt_stored),
    ]
