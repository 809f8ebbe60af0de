"""Forms of the server-rendered pages: the new-session form and the history filters."""

from __future__ import annotations

from typing import Any

from django import forms
from django.utils.translation import gettext_lazy as _

from planboard.models import NAME_MAX, SUBTASKS_HARD_LIMIT, ChatSession, State
from planboard.selectors import STATE_FILTER_ALL, STATE_FILTER_FINISHED


class SessionCreateForm(forms.Form):
    title = forms.CharField(
        label=_("Title"),
        max_length=NAME_MAX,
        required=False,
        widget=forms.TextInput(attrs={"placeholder": _("e.g. Plan the team offsite")}),
    )
    need_user_confirm = forms.BooleanField(
        label=_("Ask me before the agent starts a plan"), required=False, initial=True
    )
    max_subtasks = forms.IntegerField(
        label=_("Most subtasks per plan"),
        required=False,
        min_value=1,
        max_value=SUBTASKS_HARD_LIMIT,
        widget=forms.NumberInput(attrs={"placeholder": _("no limit")}),
    )
    language = forms.ChoiceField(
        label=_("Agent language"),
        choices=[
            (ChatSession.Language.AUTO, _("Automatic")),
            (ChatSession.Language.EN, _("English")),
            (ChatSession.Language.ZH, _("Chinese")),
        ],
        initial=ChatSession.Language.AUTO,
    )


class HistoryFilterForm(forms.Form):
    search = forms.CharField(
        label=_("Search"),
        required=False,
        max_length=NAME_MAX,
        widget=forms.SearchInput(attrs={"placeholder": _("Name, description, subtask…")}),
    )
    state = forms.ChoiceField(
        label=_("State"),
        required=False,
        choices=[
            (STATE_FILTER_FINISHED, _("Finished")),
            (STATE_FILTER_ALL, _("All plans")),
            (State.DONE, _("Done")),
            (State.ABANDONED, _("Abandoned")),
            (State.IN_PROGRESS, _("In progress")),
            (State.TODO, _("To do")),
        ],
    )
    owner = forms.ChoiceField(label=_("Owner"), required=False)
    team = forms.ChoiceField(label=_("Team"), required=False)
    created_after = forms.DateField(
        label=_("Created from"), required=False, widget=forms.DateInput(attrs={"type": "date"})
    )
    created_before = forms.DateField(
        label=_("Created until"), required=False, widget=forms.DateInput(attrs={"type": "date"})
    )

    def __init__(
        self,
        *args: Any,
        owners: list[tuple[str, str]],
        teams: list[tuple[str, str]],
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        owner_field, team_field = self.fields["owner"], self.fields["team"]
        assert isinstance(owner_field, forms.ChoiceField)
        assert isinstance(team_field, forms.ChoiceField)
        owner_field.choices = [("", _("Anyone")), *owners]
        team_field.choices = [("", _("Any team")), *teams]
