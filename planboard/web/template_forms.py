"""Forms of the Templates page: a template's text and team, and its subtasks as a formset
(rows removed with their checkbox, reordered by their position number; the page's script
adds rows and moves them without typing numbers)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.utils.translation import gettext_lazy as _

from planboard.models import NAME_MAX, SUBTASKS_HARD_LIMIT, TEXT_MAX
from planboard.shapes import TemplateSubtask


class TemplateForm(forms.Form):
    name = forms.CharField(label=_("Name"), max_length=NAME_MAX)
    description = forms.CharField(
        label=_("Description"),
        required=False,
        max_length=TEXT_MAX,
        widget=forms.Textarea({"rows": 3}),
    )
    expected_outcome = forms.CharField(
        label=_("Expected outcome"),
        required=False,
        max_length=TEXT_MAX,
        widget=forms.Textarea({"rows": 2}),
    )
    team = forms.ChoiceField(label=_("Share with"), required=False)

    def __init__(self, *args: Any, teams: list[tuple[int, str]], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        team_field = self.fields["team"]
        assert isinstance(team_field, forms.ChoiceField)
        team_field.choices = [("", _("Nobody (only you)")), *((str(i), n) for i, n in teams)]

    def values(self) -> dict[str, Any]:
        data = self.cleaned_data
        return {
            "name": data["name"],
            "description": data["description"],
            "expected_outcome": data["expected_outcome"],
            "team_id": int(data["team"]) if data["team"] else None,
        }


class TemplateSubtaskForm(forms.Form):
    name = forms.CharField(label=_("Name"), max_length=NAME_MAX)
    description = forms.CharField(
        label=_("Description"),
        required=False,
        max_length=TEXT_MAX,
        widget=forms.Textarea({"rows": 2}),
    )
    expected_outcome = forms.CharField(
        label=_("Expected outcome"), required=False, max_length=TEXT_MAX
    )
    agent = forms.ChoiceField(label=_("Agent profile"), required=False)

    def __init__(self, *args: Any, profiles: list[tuple[str, str]], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        agent_field = self.fields["agent"]
        assert isinstance(agent_field, forms.ChoiceField)
        choices = [("", _("The session's")), *profiles]
        # A profile disabled since the template was saved stays selectable, marked: saving
        # the form keeps it instead of dropping it unnoticed.
        stored = self.initial.get("agent") or ""
        if stored and stored not in {value for value, _label in choices}:
            choices.append((stored, _("%(name)s (unavailable)") % {"name": stored}))
        agent_field.choices = choices


SubtaskFormSet = forms.formset_factory(
    TemplateSubtaskForm,
    # One blank row to add a subtask without the script; left blank, it is ignored.
    extra=1,
    can_delete=True,
    can_order=True,
    max_num=SUBTASKS_HARD_LIMIT,
    absolute_max=SUBTASKS_HARD_LIMIT,
    validate_max=True,
)


def subtasks_of(formset: Any) -> list[TemplateSubtask]:
    """The kept rows in their chosen order (`ordered_forms` leaves out deleted ones)."""
    return [
        {
            "name": form.cleaned_data["name"],
            "description": form.cleaned_data["description"],
            "expected_outcome": form.cleaned_data["expected_outcome"],
            "agent": form.cleaned_data["agent"],
        }
        for form in formset.ordered_forms
    ]
