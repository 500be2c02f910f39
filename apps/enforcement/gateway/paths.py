"""The path a gateway forwards, put in one canonical spelling before it is matched against QUOTA_AUTHZ_ROUTES.

Without this, `/streams/`, `//streams`, `/%73treams`, `/./streams` or `/streams/../streams` name the same thing
as `/streams` to the application behind the gateway but match no route, and pass with no limit. The steps are
those of Envoy's `normalize_path` (RFC 3986 section 6.2.2) with `merge_slashes`:

1. the query and the fragment are dropped;
2. escapes of unreserved characters (RFC 3986: ALPHA DIGIT - . _ ~) are decoded, every other escape is kept,
   its hex in uppercase (`%3a` -> `%3A`, `%7e` -> `~`);
3. repeated slashes are merged, and a trailing slash is dropped (routes never see one);
4. dot segments are removed (RFC 3986 section 5.2.4). A `..` at the root stays at the root, as the RFC and
   Envoy read it: `/../streams` is `/streams`, counted like it (nginx refuses such a request with 400 itself).

Slashes are merged before dot segments are removed, as nginx does while parsing: the two orders disagree only
on a `..` after an empty segment (`/a//../b` is `/b` here and for nginx, `/a/b` for Envoy), and nginx's reading
is the one its location matching (the recipe in the README) uses.

Refused (PathRefused), so that the gateway denies the request rather than guess:
- an encoded slash or backslash (`%2F`, `%5C`, any case). Envoy keeps them by default, but many applications
  decode them into path separators after the gateway has decided: `/streams%2Fs1%2Fshards` would match no route
  here and reach the shards endpoint there. (Envoy's `path_with_escaped_slashes_action: REJECT_REQUEST`.)
- a `%` that does not start a two-digit hex escape: it has no single meaning to decode.
"""

from __future__ import annotations

import re

UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")
_BAD_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")
_ENCODED_SLASH = re.compile(r"%(2f|5c)", re.IGNORECASE)
_QUERY_OR_FRAGMENT = re.compile(r"[?#]")


class PathRefused(ValueError):
    """A forwarded path that has no single canonical spelling; the message says why."""


def path_normalize(raw: str) -> str:
    """The canonical spelling of `raw` (an origin-form request target: path, maybe query): it starts with "/",
    has no empty, "." or ".." segment, no trailing slash (except "/" itself), no escape of an unreserved
    character and only uppercase escapes. Raises PathRefused (see the module docstring)."""
    path = _QUERY_OR_FRAGMENT.split(raw, maxsplit=1)[0]
    if _BAD_PERCENT.search(path):
        raise PathRefused("The path has a '%' that does not start a percent-escape (like %41).")
    if _ENCODED_SLASH.search(path):
        raise PathRefused("The path has an encoded slash or backslash (%2F or %5C).")
    segments: list[str] = []
    for segment in _ESCAPE.sub(_decode_unreserved, path).split("/"):
        if segment == "..":
            if segments:
                segments.pop()
        elif segment not in ("", "."):
            segments.append(segment)
    return "/" + "/".join(segments)


def _decode_unreserved(escape: re.Match[str]) -> str:
    char = chr(int(escape.group(1), 16))
    return char if char in UNRESERVED else "%" + escape.group(1).upper()
