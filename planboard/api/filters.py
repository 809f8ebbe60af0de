"""Query filters of `GET /api/plans/`: state, owner, team, creation date range, text search.

Bad values (an unknown state, a malformed date, a huge id) are a 400 naming the parameter,
never a database error.
"""

from __future__ import annotations

import django_filters
from django import forms
from django.db.models import Q, QuerySet

from planboard import selectors
from planboard.models import NAME_MAX, Plan, State

# Ids beyond a signed 64-bit integer cannot exist; refusing them keeps SQL from overflowing.
ID_MAX = 2**63 - 1
SEARCH_HELP = (
    "Text contained in the plan's name, description, expected outcome or outcome, "
    "or in a subtask's name or description."
)


class IdFilter(django_filters.Filter):
    field_class = forms.IntegerField

    def __init__(self, *args: object, **kwargs: object) -> None:
        kwargs.setdefault("min_value", 1)
        kwargs.setdefault("max_value", ID_MAX)
        super().__init__(*args, **kwargs)


class PlanFilter(django_filters.FilterSet):
    state = django_filters.ChoiceFilter(choices=State.choices, help_text="Plan state.")
    owner = django_filters.CharFilter(
        method="filter_owner", max_length=150, help_text="The owner's username or user id."
    )
    team = IdFilter(method="filter_team", help_text="Team id: plans owned by its members.")
    created_after = django_filters.DateFilter(
        field_name="created_at",
        lookup_expr="date__gte",
        help_text="ISO date (YYYY-MM-DD); plans created on or after it.",
    )
    created_before = django_filters.DateFilter(
        field_name="created_at",
        lookup_expr="date__lte",
        help_text="ISO date (YYYY-MM-DD); plans created on or before it.",
    )
    search = django_filters.CharFilter(
        method="filter_search",
        max_length=NAME_MAX,
        help_text=SEARCH_HELP,
    )

    class Meta:
        model = Plan
        fields: list[str] = []

    def filter_owner(self, queryset: QuerySet[Plan], name: str, value: str) -> QuerySet[Plan]:
        value = value.strip()
        if not value:
            return queryset
        condition = Q(owner__username=value)
        if value.isdigit() and int(value) <= ID_MAX:
            condition |= Q(owner_id=int(value))
        return queryset.filter(condition)

    def filter_team(self, queryset: QuerySet[Plan], name: str, value: int) -> QuerySet[Plan]:
        return selectors.plans_of_team(queryset, value)

    def filter_search(self, queryset: QuerySet[Plan], name: str, value: str) -> QuerySet[Plan]:
        return selectors.plans_matching(queryset, value)
