"""Telling an owner that their schedule paused itself after failures in a row.

The session page (a template schedule's: the template page) shows it at once (the schedule's
`session.schedule` or `schedule.changed` event); owners who asked
for email notifications (`NotificationSettings.email`) also get one, through the deadline-bound
mail backend. A worker that dies between the pause's commit and this send loses the email, not
the pause: the page still shows it."""

from __future__ import annotations

import logging

from django.conf import settings
from django.core.mail import EmailMessage
from django.utils.translation import gettext as _

from planboard.models import NotificationSettings, Schedule

logger = logging.getLogger(__name__)


def send_paused_notice(schedule_id: int) -> bool:
    """Email the owner of a schedule that paused itself; True when an email went out."""
    schedule = Schedule.objects.select_related("owner").filter(pk=schedule_id).first()
    if schedule is None or schedule.enabled:
        return False
    owner = schedule.owner
    wants_email = NotificationSettings.objects.filter(user=owner, email=True).exists()
    if not (wants_email and owner.email):
        return False
    if schedule.template_id is not None:
        link = f"{settings.PLANBOARD_PUBLIC_URL}/templates/{schedule.template_id}/"
    else:
        link = f"{settings.PLANBOARD_PUBLIC_URL}/sessions/{schedule.session_id}/"
    subject = _('Schedule "%(name)s" paused') % {"name": schedule.name[:80]}
    body = _(
        'Your schedule "%(name)s" paused itself after %(count)s failed runs in a row. '
        "Look at what went wrong and resume it from its page: %(link)s"
    ) % {"name": schedule.name, "count": schedule.failures_in_a_row, "link": link}
    stamp = int(schedule.updated_at.timestamp())
    try:
        EmailMessage(
            subject=subject,
            body=body,
            from_email=settings.DEFAULT_FROM_EMAIL,
            to=[owner.email],
            headers={"Message-ID": f"<schedule-{schedule.pk}-paused-{stamp}@planboard>"},
        ).send(fail_silently=False)
    except Exception as exc:  # a mail failure must not fail the sweep
        logger.warning("schedule %s: the paused notice was not sent: %s", schedule_id, exc)
        return False
    return True
