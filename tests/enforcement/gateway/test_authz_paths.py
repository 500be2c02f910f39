"""The forwarded path's canonical spelling (apps/enforcement/gateway/paths.py): examples, refusals and properties."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from apps.enforcement.gateway.paths import UNRESERVED, PathRefused, path_normalize


@pytest.mark.parametrize(
    ("raw", "canonical"),
    [
        ("/streams", "/streams"),
        ("/streams/", "/streams"),
        ("//streams", "/streams"),
        ("/streams//", "/streams"),
        ("/%73treams", "/streams"),
        ("/%73TREAMS", "/sTREAMS"),  # decoding never changes case
        ("/streams/../streams", "/streams"),
        ("/./streams", "/streams"),
        ("/streams/.", "/streams"),
        ("/streams/s1/..", "/streams"),
        ("/a/%2e%2E/streams", "/streams"),  # encoded dots are dots
        ("/streams?x=1&y=/../z", "/streams"),
        ("/streams#frag", "/streams"),
        ("/%7e%5fx%2D%2e", "/~_x-."),  # every unreserved character is decoded
        ("/a%3ab%c3%a9%20c%25", "/a%3Ab%C3%A9%20c%25"),  # others kept, in uppercase
        ("/..", "/"),
        ("/../streams", "/streams"),  # climbing above the root stays at the root (RFC 3986 5.2.4)
        ("/a/b/../../../../streams", "/streams"),
        ("/a//../b", "/b"),  # slashes merged before dot segments, as nginx does
        ("", "/"),
        ("?q", "/"),
        ("streams", "/streams"),
        ("/...", "/..."),  # three dots are a name
        ("/é/ü", "/é/ü"),  # raw non-ASCII is left alone
    ],
)
def test_spellings_normalize_to_the_canonical_path(raw: str, canonical: str) -> None:
    assert path_normalize(raw) == canonical


@pytest.mark.parametrize(
    "raw", ["/streams%2Fs1%2Fshards", "/streams%2fs1", "/a%5Cb", "/a%5cb", "/50%", "/a%zz", "/%4", "/%%34%31"]
)
def test_encoded_slashes_and_broken_escapes_are_refused(raw: str) -> None:
    with pytest.raises(PathRefused):
        path_normalize(raw)


def test_an_escaped_percent_sign_is_not_decoded_into_a_new_escape() -> None:
    assert path_normalize("/%252F") == "/%252F"
    assert path_normalize(path_normalize("/%2541")) == "/%2541"


# ---- properties ----------------------------------------------------------------------------------------------

PCHARS = sorted(UNRESERVED | set("!$&'()*+,;=:@"))
# Bytes only ever written escaped (never an unreserved one, nor a slash or backslash).
ESCAPED_BYTES = [byte for byte in range(256) if chr(byte) not in UNRESERVED and byte not in (0x2F, 0x5C)]

# A canonical segment, as tokens: literal characters or uppercase escapes.
token = st.one_of(st.sampled_from(PCHARS), st.sampled_from(ESCAPED_BYTES).map(lambda byte: f"%{byte:02X}"))
segment = st.lists(token, min_size=1, max_size=6).filter(lambda tokens: "".join(tokens) not in (".", ".."))
segments = st.lists(segment, max_size=6)
DOT = [".", "%2E", "%2e"]


@st.composite
def respelled(draw: st.DrawFn, tokens: list[str]) -> str:
    """`tokens` written another way that means the same: unreserved characters escaped, escapes in lower case."""
    out = []
    for piece in tokens:
        if piece.startswith("%"):
            out.append(draw(st.sampled_from([piece, piece.lower()])))
        elif piece in UNRESERVED and draw(st.booleans()):
            out.append(draw(st.sampled_from([f"%{ord(piece):02X}", f"%{ord(piece):02x}"])))
        else:
            out.append(piece)
    return "".join(out)


@st.composite
def detour(draw: st.DrawFn) -> str:
    """Something to put between two segments that leads nowhere: extra slashes, '.', or a segment and '..'."""
    kind = draw(st.sampled_from(["slash", "dot", "up"]))
    if kind == "slash":
        return "/"
    if kind == "dot":
        return draw(st.sampled_from(DOT)) + "/"
    return draw(respelled(draw(segment))) + "/" + draw(st.sampled_from(DOT)) + draw(st.sampled_from(DOT)) + "/"


@st.composite
def spelled(draw: st.DrawFn, parts: list[list[str]]) -> str:
    path = "/" + "".join(draw(st.lists(detour(), max_size=2)))
    for tokens in parts:
        path += draw(respelled(tokens)) + "/" + "".join(draw(st.lists(detour(), max_size=2)))
    path = path if draw(st.booleans()) else path.rstrip("/") or "/"
    return path + draw(st.sampled_from(["", "?q=1", "?a=/../b", "#top", "?x#y"]))


@given(parts=segments, data=st.data())
def test_equivalent_spellings_normalize_equally(parts: list[list[str]], data: st.DataObject) -> None:
    canonical = "/" + "/".join("".join(tokens) for tokens in parts)

    assert path_normalize(canonical) == canonical
    assert path_normalize(data.draw(spelled(parts))) == canonical


@given(st.text(alphabet="/.%?#aZ09~-_:@2EeFf5Cc é", max_size=40))
def test_normalized_paths_are_fixed_points_without_empty_or_dot_segments(raw: str) -> None:
    try:
        path = path_normalize(raw)
    except PathRefused:
        return
    assert path_normalize(path) == path
    assert path.startswith("/")
    assert "//" not in path
    assert "/./" not in path + "/"
    assert "/../" not in path + "/"
    assert path == "/" or not path.endswith("/")
