"""The site's own "page not found" page while `DEBUG` is on (the embedded mode of `make run`).

With `DEBUG` on, Django answers an unknown address, or a view's `Http404`, with its technical
page (the URL patterns tried, the view that raised). People trying the app meet that page, so
this middleware answers both with `templates/404.html`, the page production shows. Django still
logs the "Not Found" line for developers. With `DEBUG` off the middleware is not loaded at all:
Django's own `handler404` renders the same template there. Other 404s keep their body: the
API's JSON 404, and any page a view renders with status 404 on purpose.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction, sync_to_async
from django.conf import settings
from django.core.exceptions import MiddlewareNotUsed
from django.http import Http404, HttpRequest, HttpResponseBase
from django.views.defaults import page_not_found

GetResponse = Callable[[HttpRequest], Any]


def not_found_page(request: HttpRequest, exception: Exception | None = None) -> HttpResponseBase:
    """templates/404.html, rendered as production's handler404 renders it."""
    return page_not_found(request, exception or Http404())


def unmatched(request: HttpRequest, response: HttpResponseBase) -> bool:
    """True for the answer to an address no URL pattern matched: Django sets `resolver_match`
    only once one did, and under `DEBUG` that answer is its technical page."""
    return response.status_code == 404 and request.resolver_match is None


class BrandedNotFoundMiddleware:
    """Replaces Django's technical 404 page by the site's own while `DEBUG` is on."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response: GetResponse) -> None:
        if not settings.DEBUG:
            raise MiddlewareNotUsed("DEBUG is off: handler404 already renders 404.html")
        self.get_response = get_response
        self.is_async = iscoroutinefunction(get_response)
        if self.is_async:
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest) -> HttpResponseBase | Awaitable[HttpResponseBase]:
        if self.is_async:
            return self._acall(request)
        response: HttpResponseBase = self.get_response(request)
        return not_found_page(request) if unmatched(request, response) else response

    async def _acall(self, request: HttpRequest) -> HttpResponseBase:
        response: HttpResponseBase = await self.get_response(request)
        if unmatched(request, response):
            return await sync_to_async(not_found_page, thread_sensitive=True)(request)
        return response

    def process_exception(
        self, request: HttpRequest, exception: Exception
    ) -> HttpResponseBase | None:
        """A view's `Http404` (a session that is gone or not shared, an admin object)."""
        if isinstance(exception, Http404):
            return not_found_page(request, exception)
        return None
