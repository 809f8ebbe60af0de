"""REST endpoints: thin adapters that parse, check access, call a service or selector, format.

Every write goes through `planboard.services` with `Actor.person(signed_in(request))`, exactly like
the agent tools do, and answers with the fresh plan snapshot. Business-rule failures arrive as
`PlanError` and become JSON errors in `planboard.api.errors`.

One module per resource; `planboard/api/urls.py` routes to them:

| module      | endpoints                                                                 |
|-------------|---------------------------------------------------------------------------|
| `base`      | shared: default auth/permissions/parsers, `parse`, schema parameters and  |
|             | error responses, the JSON 404 (`not_found`)                               |
| `auth`      | `auth/token/`                                                             |
| `sessions`  | `sessions/`, `sessions/{id}/`, `…/messages/`, `…/cancel/`                 |
| `plans`     | `plans/`, `plans/{id}/`, `…/subtasks/`, `…/subtasks/{id}/`, `…/events/`   |
| `profiles`  | `profiles/`, `profiles/{id}/`                                             |
| `toolsets`  | `toolsets/`, `toolsets/{id}/`, `…/refresh/`, `…/credential/`;             |
|             | `sessions/{id}/tool-calls/`,                                              |
|             | `…/tool-calls/{call_id}/decision/`                                        |
| `files`     | `sessions/{id}/files/`, `sessions/{id}/files/{path}`                      |
"""
