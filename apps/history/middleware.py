from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

from apps.history.context import history_request


class HistoryRequestMiddleware:
    """Lets the change history name the logged-in user as the actor of changes made while serving a request.

    It only remembers the request: the user is looked up when a change is recorded, so requests that
    change nothing (every API check) pay nothing. Place it after AuthenticationMiddleware.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        with history_request(request):
            return self.get_response(request)
