"""Django admin for Planboard, one module per area. Every change to plans goes through
`planboard.services`.

| module     | what it registers                                                          |
|------------|----------------------------------------------------------------------------|
| `base`     | nothing: the read-only inlines that show only the newest rows              |
| `plans`    | plans (subtasks, timeline), chat sessions (transcript, runs), runs, events |
| `teams`    | teams and their memberships                                                |
| `profiles` | agent profiles                                                             |
| `toolsets` | toolsets (MCP servers) with their tools' policies, tool calls              |
| `inbox`    | decisions (who answered, how) and notifications, read-only                 |
"""

# Django's autodiscovery imports this package only: importing each area registers its models.
from planboard.admin import inbox, plans, profiles, teams, toolsets

# agents/admin.py extends the run admin with the agent's steps (planboard never imports agents).
from planboard.admin.plans import AgentRunAdmin

__all__ = ["AgentRunAdmin", "inbox", "plans", "profiles", "teams", "toolsets"]
