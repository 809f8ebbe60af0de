"""Routes under `/api/`. Ids in paths are 1 to 18 digits: anything else is a JSON 404."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.urls import path, re_path, register_converter
from drf_spectacular.views import (
    SpectacularAPIView,
    SpectacularSwaggerSplitView,
)

from planboard.api.views import (
    auth,
    base,
    elicitations,
    files,
    inbox,
    plans,
    profiles,
    schedules,
    sessions,
    templates,
    toolsets,
)


class IdConverter:
    # 18 digits always fit a signed 64-bit column, so no id can overflow a query.
    regex = "[0-9]{1,18}"

    def to_python(self, value: str) -> int:
        return int(value)

    def to_url(self, value: int) -> str:
        return str(value)


register_converter(IdConverter, "api_id")

urlpatterns = [
    path("auth/token/", auth.TokenView.as_view(), name="api-token"),
    path("sessions/", sessions.SessionListView.as_view(), name="api-sessions"),
    path("sessions/<api_id:session_id>/", sessions.SessionDetailView.as_view(), name="api-session"),
    path(
        "sessions/<api_id:session_id>/messages/",
        sessions.SessionMessagesView.as_view(),
        name="api-session-messages",
    ),
    path(
        "sessions/<api_id:session_id>/cancel/",
        sessions.SessionCancelView.as_view(),
        name="api-session-cancel",
    ),
    path(
        "sessions/<api_id:session_id>/tool-calls/",
        toolsets.SessionToolCallsView.as_view(),
        name="api-session-tool-calls",
    ),
    path(
        "sessions/<api_id:session_id>/tool-calls/<str:call_id>/decision/",
        toolsets.ToolCallDecisionView.as_view(),
        name="api-tool-call-decision",
    ),
    path(
        "sessions/<api_id:session_id>/elicitations/",
        elicitations.SessionElicitationsView.as_view(),
        name="api-session-elicitations",
    ),
    path(
        "elicitations/<api_id:elicitation_id>/answer/",
        elicitations.ElicitationAnswerView.as_view(),
        name="api-elicitation-answer",
    ),
    path(
        "sessions/<api_id:session_id>/resources/",
        toolsets.SessionResourcesView.as_view(),
        name="api-session-resources",
    ),
    path(
        "sessions/<api_id:session_id>/prompts/",
        toolsets.SessionPromptsView.as_view(),
        name="api-session-prompts",
    ),
    path(
        "sessions/<api_id:session_id>/prompts/get/",
        toolsets.SessionPromptGetView.as_view(),
        name="api-session-prompt-get",
    ),
    path(
        "sessions/<api_id:session_id>/files/",
        files.SessionFilesView.as_view(),
        name="api-session-files",
    ),
    path(
        "sessions/<api_id:session_id>/files/<path:file_path>",
        files.SessionFileView.as_view(),
        name="api-session-file",
    ),
    path(
        "sessions/<api_id:session_id>/answerers/",
        inbox.SessionAnswerersView.as_view(),
        name="api-session-answerers",
    ),
    path(
        "sessions/<api_id:session_id>/decisions/",
        inbox.SessionDecisionsView.as_view(),
        name="api-session-decisions",
    ),
    path("inbox/", inbox.InboxView.as_view(), name="api-inbox"),
    path(
        "inbox/notifications/",
        inbox.NotificationSettingsView.as_view(),
        name="api-inbox-notifications",
    ),
    path("inbox/answering/", inbox.AnswererConsentView.as_view(), name="api-inbox-answering"),
    path("inbox/snooze/", inbox.InboxSnoozeView.as_view(), name="api-inbox-snooze"),
    path(
        "inbox/bulk-approve/", inbox.InboxBulkApproveView.as_view(), name="api-inbox-bulk-approve"
    ),
    path("toolsets/", toolsets.ToolsetListView.as_view(), name="api-toolsets"),
    path("toolsets/<api_id:toolset_id>/", toolsets.ToolsetDetailView.as_view(), name="api-toolset"),
    path(
        "toolsets/<api_id:toolset_id>/refresh/",
        toolsets.ToolsetRefreshView.as_view(),
        name="api-toolset-refresh",
    ),
    path(
        "toolsets/<api_id:toolset_id>/credential/",
        toolsets.ToolsetCredentialView.as_view(),
        name="api-toolset-credential",
    ),
    path("profiles/", profiles.ProfileListView.as_view(), name="api-profiles"),
    path("profiles/<api_id:profile_id>/", profiles.ProfileDetailView.as_view(), name="api-profile"),
    path("templates/", templates.TemplateListView.as_view(), name="api-templates"),
    path(
        "templates/<api_id:template_id>/",
        templates.TemplateDetailView.as_view(),
        name="api-template",
    ),
    path(
        "templates/<api_id:template_id>/start/",
        templates.TemplateStartView.as_view(),
        name="api-template-start",
    ),
    path("schedules/", schedules.ScheduleListView.as_view(), name="api-schedules"),
    path(
        "schedules/preview/", schedules.SchedulePreviewView.as_view(), name="api-schedule-preview"
    ),
    path(
        "schedules/<api_id:schedule_id>/",
        schedules.ScheduleDetailView.as_view(),
        name="api-schedule",
    ),
    path(
        "schedules/<api_id:schedule_id>/pause/",
        schedules.SchedulePauseView.as_view(),
        name="api-schedule-pause",
    ),
    path(
        "schedules/<api_id:schedule_id>/resume/",
        schedules.ScheduleResumeView.as_view(),
        name="api-schedule-resume",
    ),
    path(
        "schedules/<api_id:schedule_id>/occurrences/",
        schedules.ScheduleOccurrencesView.as_view(),
        name="api-schedule-occurrences",
    ),
    path("plans/", plans.PlanListView.as_view(), name="api-plans"),
    path("plans/<api_id:plan_id>/", plans.PlanDetailView.as_view(), name="api-plan"),
    path(
        "plans/<api_id:plan_id>/subtasks/",
        plans.PlanSubtasksView.as_view(),
        name="api-plan-subtasks",
    ),
    path(
        "plans/<api_id:plan_id>/subtasks/<api_id:subtask_id>/",
        plans.SubtaskDetailView.as_view(),
        name="api-subtask",
    ),
    path("plans/<api_id:plan_id>/events/", plans.PlanEventsView.as_view(), name="api-plan-events"),
    path("plans/<api_id:plan_id>/fork/", plans.PlanForkView.as_view(), name="api-plan-fork"),
    # Signed-in people only (SPECTACULAR_SETTINGS["SERVE_PERMISSIONS"]): the schema answers
    # 401 to anyone else, the docs pages send a browser to the login page first.
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    # The split view loads its start-up script from a URL: the CSP allows no inline script.
    path(
        "docs/",
        login_required(
            SpectacularSwaggerSplitView.as_view(
                url_name="api-schema", template_name="planboard/api_docs.html"
            )
        ),
        name="api-docs",
    ),
    # Last: unknown addresses (and ids too long to exist) get a JSON 404, not an HTML page.
    # `[\s\S]`, not `.`: a path with a newline in it is an unknown address too.
    re_path(r"^(?P<unmatched>[\s\S]*)$", base.not_found, name="api-not-found"),
]
