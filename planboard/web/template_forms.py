"""Forms of the Templates page: a template's text and team, and its subtasks as a formset
(rows removed with their checkbox, reordered by their position number; the page's script
adds rows and moves them without typing numbers).

A row's "waits for" names other rows by their position numbers (as shown, from 1); the
page's script rewrites them when rows move, and `subtasks_of` turns them into the template's
0-based positions. A removed row leaves the lists it was in, as a deleted card does.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from planboard.exceptions import PlanError
from planboard.models import NAME_MAX, SUBTASKS_HARD_LIMIT, TEXT_MAX
from planboard.services._blockers import find_cycle
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
    waits_for = forms.CharField(
        label=_("Waits for"),
        required=False,
        max_length=400,
        help_text=_("Numbers of the subtasks it waits for, e.g. 1, 3."),
    )

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

    def clean_waits_for(self) -> list[int]:
        text = self.cleaned_data["waits_for"].replace(",", " ").replace("#", " ")
        numbers = []
        for part in text.split():
            if not part.isdigit() or int(part) < 1:
                raise forms.ValidationError(
                    gettext("Give subtask numbers (1, 2, …) separated by commas.")
                )
            numbers.append(int(part))
        return numbers


def waits_for_text(positions: list[int]) -> str:
    """A template subtask's `blocked_by` (0-based) as the form shows it (numbers from 1)."""
    return ", ".join(str(p + 1) for p in positions)


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
    """The kept rows in their chosen order (`ordered_forms` leaves out deleted ones), each
    row's "waits for" numbers turned into positions in that order. The service checks the
    positions (itself, circles)."""
    kept = formset.ordered_forms
    numbers = [form.cleaned_data.get("ORDER") for form in kept]
    position_of = {n: i for i, n in enumerate(numbers) if n is not None and numbers.count(n) == 1}
    removed = {form.cleaned_data.get("ORDER") for form in formset.deleted_forms}
    found: list[TemplateSubtask] = []
    for form in kept:
        waits = []
        for number in form.cleaned_data["waits_for"]:
            if number in position_of:
                waits.append(position_of[number])
            elif number not in removed:
                raise PlanError(
                    gettext(
                        "“%(name)s” waits for subtask %(number)s, but no single subtask has "
                        "that position number."
                    )
                    % {"name": form.cleaned_data["name"], "number": number}
                )
        found.append(
            {
                "name": form.cleaned_data["name"],
                "description": form.cleaned_data["description"],
                "expected_outcome": form.cleaned_data["expected_outcome"],
                "agent": form.cleaned_data["agent"],
                "blocked_by": waits,
            }
        )
    _check_waits(found, numbers)
    return found


def _check_waits(found: list[TemplateSubtask], numbers: list[int | None]) -> None:
    """Refuse a row waiting for itself or a circle in the page's own terms: rows named with
    the position numbers people see (from 1), not the service's 0-based positions."""

    def row(index: int) -> str:
        number = numbers[index] if numbers[index] is not None else index + 1
        return f"“{found[index]['name']}” (#{number})"

    for index, subtask in enumerate(found):
        if index in subtask["blocked_by"]:
            raise PlanError(gettext("%(row)s cannot wait for itself.") % {"row": row(index)})
    graph = {index: subtask["blocked_by"] for index, subtask in enumerate(found)}
    for start in graph:
        circle = find_cycle(graph, start)
        if circle:
            path = " → ".join(row(index) for index in circle)
            raise PlanError(
                gettext(
                    "These subtasks would make a circle (%(path)s waits for the first again), "
                    "so none of them could ever start. Remove one of the numbers."
                )
                % {"path": path}
            )
