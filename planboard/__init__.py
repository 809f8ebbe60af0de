"""Planboard: the Django project and the plan domain (models, services, selectors)."""

from planboard.celery import app as celery_app

__all__ = ["celery_app"]
