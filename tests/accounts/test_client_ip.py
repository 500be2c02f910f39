"""The client address behind TRUSTED_PROXY_COUNT proxies, shared by the admin lockout and the API key guard."""

from django.test import RequestFactory

from apps.accounts.client_ip import client_ip_address, client_ip_of_meta

PROXY = "10.0.0.2"


def test_without_trusted_proxies_the_forwarded_header_is_ignored(settings) -> None:
    settings.TRUSTED_PROXY_COUNT = 0

    assert client_ip_of_meta({"REMOTE_ADDR": PROXY, "HTTP_X_FORWARDED_FOR": "203.0.113.5"}) == PROXY


def test_behind_proxies_the_entry_the_outermost_added_is_the_client(settings) -> None:
    settings.TRUSTED_PROXY_COUNT = 2
    meta = {"REMOTE_ADDR": PROXY, "HTTP_X_FORWARDED_FOR": "192.0.2.99, 203.0.113.5, 10.0.0.1"}

    assert client_ip_of_meta(meta) == "203.0.113.5"
    assert client_ip_of_meta({"REMOTE_ADDR": PROXY, "HTTP_X_FORWARDED_FOR": "203.0.113.5"}) == PROXY


def test_the_axes_callable_reads_the_same_from_a_request(settings) -> None:
    settings.TRUSTED_PROXY_COUNT = 1
    request = RequestFactory().get("/", REMOTE_ADDR=PROXY, HTTP_X_FORWARDED_FOR="203.0.113.5")

    assert client_ip_address(request) == "203.0.113.5"
