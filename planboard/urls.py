from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/", include("django.contrib.auth.urls")),
    path("api/", include("planboard.api.urls")),
    path("i18n/", include("django.conf.urls.i18n")),
    path("", include("planboard.web.urls")),
]
