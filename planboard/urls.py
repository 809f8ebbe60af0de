from django.contrib import admin
from django.http import HttpRequest, HttpResponsePermanentRedirect
from django.templatetags.static import static
from django.urls import include, path


def favicon(request: HttpRequest) -> HttpResponsePermanentRedirect:
    """Browsers ask for /favicon.ico whatever a page links: send them to the SVG (looked up per
    request: the manifest of hashed static names is read only once collectstatic wrote it)."""
    return HttpResponsePermanentRedirect(static("img/favicon.svg"))


# An unexpected error under /api/ is JSON too (unknown API addresses: api/urls.py).
handler500 = "planboard.api.errors.server_error"

urlpatterns = [
    path("favicon.ico", favicon, name="favicon"),
    path("admin/", admin.site.urls),
    path("accounts/", include("django.contrib.auth.urls")),
    path("api/", include("planboard.api.urls")),
    path("i18n/", include("django.conf.urls.i18n")),
    path("", include("planboard.web.urls")),
]
