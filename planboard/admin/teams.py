"""Teams and their members."""

from __future__ import annotations

from django.contrib import admin

from planboard.models import Team, TeamMembership


class MembershipInline(admin.TabularInline):
    model = TeamMembership
    extra = 1
    autocomplete_fields = ("user",)


@admin.register(Team)
class TeamAdmin(admin.ModelAdmin):
    list_display = ("name",)
    search_fields = ("name",)
    inlines = [MembershipInline]
