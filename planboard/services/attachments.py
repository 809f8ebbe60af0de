"""Resources attached to a person's message: the references checked against what the session's
toolsets offer, and what the run read of each stored in the transcript."""

from __future__ import annotations

from typing import Any

from django.db import IntegrityError, transaction

from planboard import selectors
from planboard.exceptions import PlanError
from planboard.models import Message
from planboard.pgtext import without_nul
from planboard.services.runs import _publish_message

ATTACHMENTS_MAX = 5
URI_MAX = 2000


def _clean_resource_refs(value: Any) -> list[tuple[int, str]]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise PlanError("'resources' must be a list of {toolset_id, uri} objects.")
    if len(value) > ATTACHMENTS_MAX:
        raise PlanError(f"At most {ATTACHMENTS_MAX} resources can be attached to a message.")
    refs: list[tuple[int, str]] = []
    for item in value:
        toolset_id = item.get("toolset_id") if isinstance(item, dict) else None
        uri = item.get("uri") if isinstance(item, dict) else None
        if (
            not isinstance(toolset_id, int)
            or isinstance(toolset_id, bool)
            or not isinstance(uri, str)
            or not uri
            or len(uri) > URI_MAX
        ):
            raise PlanError("Each attached resource needs a 'toolset_id' (number) and a 'uri'.")
        if (toolset_id, uri) not in refs:
            refs.append((toolset_id, uri))
    return refs


def _attachments_of(session_id: int, refs: list[tuple[int, str]]) -> list[dict[str, Any]]:
    """The attached resources as the message stores them; `PlanError` when one is not
    offered by a toolset the session uses now."""
    attachments = []
    for toolset_id, uri in refs:
        found = selectors.session_resource(session_id=session_id, toolset_id=toolset_id, uri=uri)
        if found is None:
            raise PlanError(
                f"Toolset {toolset_id} offers no resource {uri[:200]!r} in this session (it is "
                "not enabled here, or its server does not list that resource).",
                code="unknown_resource",
            )
        attachments.append(
            {
                "toolset_id": toolset_id,
                "toolset": found["toolset"],
                "uri": uri,
                "name": found.get("title") or found.get("name") or "",
            }
        )
    return attachments


def attachment_call_id(message_id: int, index: int) -> str:
    return f"attach:{message_id}:{index}"


def message_record_attachment(
    *,
    session_id: int,
    run_id: int,
    message_id: int,
    index: int,
    content: str,
    ok: bool,
    fence: str,
) -> Message:
    """Store what the run read of the `index`th resource attached to a person's message
    (`ok` False: why it could not be read), once (`PlanError(code="duplicate_tool_call")`
    when it is stored already)."""
    with transaction.atomic():
        person = Message.objects.filter(pk=message_id, session_id=session_id).first()
        attached = (person.attachments or []) if person is not None else []
        if index >= len(attached):
            raise PlanError("No such attachment.", code="not_found")
        ref = attached[index]
        message = Message(
            session_id=session_id,
            run_id=run_id,
            role=Message.Role.USER,
            content=without_nul(content),
            tool_call_id=attachment_call_id(message_id, index),
            attachment={**ref, "of_message": message_id, "ok": ok, "fence": fence},
        )
        try:
            with transaction.atomic():
                message.save()
        except IntegrityError:
            raise PlanError(
                "That attachment was read already.", code="duplicate_tool_call"
            ) from None
        _publish_message(message)
    return message
