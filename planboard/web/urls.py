from django.urls import path

from planboard.web import links, oauth, plan_templates, views

app_name = "web"

urlpatterns = [
    path("", views.session_list, name="sessions"),
    path("sessions/<int:session_id>/", views.session_page, name="session"),
    path(
        "sessions/<int:session_id>/files/<path:file_path>",
        views.session_file,
        name="session_file",
    ),
    path("inbox/", views.inbox_page, name="inbox"),
    path("inbox/act/<str:token>/", links.action_link, name="action_link"),
    path("history/", views.history_list, name="history"),
    path("history/plans/<int:plan_id>/", views.history_plan, name="history_plan"),
    path("templates/", plan_templates.template_list, name="templates"),
    path("templates/<int:template_id>/", plan_templates.template_edit, name="template"),
    path(
        "templates/<int:template_id>/start/", plan_templates.template_start, name="template_start"
    ),
    path(
        "templates/<int:template_id>/delete/",
        plan_templates.template_delete,
        name="template_delete",
    ),
    path("toolsets/<int:toolset_id>/connect/", oauth.connect, name="toolset_connect"),
    path("toolsets/oauth/callback/", oauth.callback, name="toolset_oauth_callback"),
]
