"""Django admin for Planboard, one module per area. Every change to plans goes through
`planboard.services`.

| module     | what it registers                                                          |
|------------|----------------------------------------------------------------------------|
| `base`     | nothing: the read-only inlines that show only the newest rows              |
| `plans`    | plans (subtasks, timeline), chat sessions (transcript, runs), runs, events |
| `teams`    | teams and their memberships                                                |
| `profiles` | agent profiles                                                             |
| `toolsets` | toolsets (MCP servers) with their tools' policies, people's credentials, |
|            | tool calls                                                                 |
| `toolset_forms` | nothing: the toolset form (masked secrets), tools' inline, review filter |
| `inbox`    | decisions (who answered, how) and notifications, read-only                 |
| `templates` | plan templates (subtasks as their JSON list)                              |
| `schedules` | schedules with their occurrences: pause, resume, remove                    |
"""

from django.contrib import admin
from django.utils.translation import gettext_lazy as _

# Django's autodiscovery imports this package only: importing each area registers its models.
from planboard.admin import inbox, plans, profiles, schedules, teams, templates, toolsets

# agents/admin.py extends the run admin with the agent's steps (planboard never imports agents).
from planboard.admin.plans import AgentRunAdmin

# Branded, with "View site" leading back to the app.
admin.site.site_header = _("Planboard administration")
admin.site.site_title = _("Planboard administration")
admin.site.index_title = _("Plans, people and tools")
admin.site.site_url = "/"

__all__ = [
    "AgentRunAdmin",
    "inbox",
    "plans",
    "profiles",
    "schedules",
    "teams",
    "templates",
    "toolsets",
]
