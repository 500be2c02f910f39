"""Reading and writing the configuration as YAML text.

A configuration file is read from people who may not be trusted with the process's memory (an admin
upload, a file handed to import_limits), so a document is judged before it is built. Anchors and aliases
are refused: the format never needs them, and they are what lets a 500-byte "billion laughs" document
stand for gigabytes once a value is printed. Nesting, the number of values and the length of a number are
capped too, and so is the size of the text read (config_yaml_read). The check reads the parser's events
only, which costs a fraction of building the document (no nodes, no Python objects).
"""

from collections.abc import Hashable
from typing import Any, Protocol

import yaml

from apps.limits.config_io.report import MAX_MESSAGE_CHARS, ConfigInvalid, text_shortened, value_shown

TIMESTAMP_TAG = "tag:yaml.org,2002:timestamp"
# 2 MiB: an export of 10,000 customers is under 1 MiB. The admin posts the previewed text back to apply it,
# so the cap stays below what Django accepts in a request body (DATA_UPLOAD_MAX_MEMORY_SIZE, 2.5 MB).
MAX_DOCUMENT_BYTES = 2 * 1024 * 1024
# The format nests four levels (file → section → entry → key_by or match); the rest is room for mistakes
# to be reported as the wrong type rather than as too deep.
MAX_DEPTH = 10
# A value is a node: an export holds about one per 7 bytes, so 2 MiB of real configuration stays below this,
# while 2 MiB of "0," (a million values, about half a gigabyte once built) does not.
MAX_NODES = 500_000
# The largest number the format holds is 19 digits (a 64-bit quantity); Python would spend seconds
# converting one of millions of digits, and refuses to print one of more than 4300.
MAX_NUMBER_CHARS = 100

# The C parser (libyaml, shipped in PyYAML's wheels) is several times faster; the pure-Python one is the same API.
_SafeLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_DOCUMENT_SIZE_TEXT = f"{MAX_DOCUMENT_BYTES // (1024 * 1024)} MiB"


class _Loader(_SafeLoader):  # type: ignore[valid-type, misc]
    """Safe YAML that refuses repeated keys and over-long numbers, and leaves dates as text (the importer
    insists on an offset)."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != TIMESTAMP_TAG]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


class _Refused(Exception):
    """Valid YAML this reader will not build; `mark` is where, when there is one place to name."""

    def __init__(self, message: str, mark: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.mark = mark


def _construct_mapping(loader: _Loader, node: yaml.MappingNode) -> dict[Any, Any]:
    loader.flatten_mapping(node)
    seen = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=True)
        if isinstance(key, Hashable) and key in seen:
            message = f"the key “{value_shown(key)}” appears twice"
            raise yaml.constructor.ConstructorError(None, None, message, key_node.start_mark)
        seen.add(key)
    return loader.construct_mapping(node, deep=True)


def _construct_int(loader: _Loader, node: yaml.ScalarNode) -> int:
    if len(node.value) > MAX_NUMBER_CHARS:
        message = f"a number of {len(node.value)} characters is longer than any value a configuration file holds"
        raise _Refused(message, node.start_mark)
    return int(loader.construct_yaml_int(node))


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
_Loader.add_constructor("tag:yaml.org,2002:int", _construct_int)


class _FlowList(list[Any]):
    pass


class _FlowDict(dict[Any, Any]):
    pass


class _Dumper(yaml.SafeDumper):
    """Entries in block style, the small lists and maps inside them in flow style ([customer, resource])."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)  # indent list items under their key, as the design does

    def ignore_aliases(self, data: Any) -> bool:
        return True  # a value used twice is written twice: the loader refuses anchors and aliases


_Dumper.add_representer(_FlowList, lambda dumper, data: dumper.represent_sequence("tag:yaml.org,2002:seq", data, True))
_Dumper.add_representer(_FlowDict, lambda dumper, data: dumper.represent_mapping("tag:yaml.org,2002:map", data, True))


class Readable(Protocol):
    def read(self, size: int, /) -> bytes: ...


def config_yaml_read(stream: Readable) -> str:
    """The text of an uploaded or named file, reading no more than MAX_DOCUMENT_BYTES + 1 bytes of it;
    raises ConfigInvalid for a file too large or not UTF-8 (every door reads a file through here)."""
    data = stream.read(MAX_DOCUMENT_BYTES + 1)
    if len(data) > MAX_DOCUMENT_BYTES:
        raise ConfigInvalid([f"the file is larger than {_DOCUMENT_SIZE_TEXT}"])
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ConfigInvalid(["the file is not UTF-8 text"]) from None


def config_yaml_load(text: str) -> Any:
    """The document in `text`; raises ConfigInvalid naming the line and column of a syntax error, of an
    anchor or alias, of nesting too deep, or saying that the document has too many values."""
    try:
        _refuse_hostile(text)
        return yaml.load(text, Loader=_Loader)  # noqa: S506 - _Loader is a SafeLoader
    except _Refused as refused:
        raise ConfigInvalid([f"{_where(refused.mark)}{refused.message}"]) from None
    except yaml.MarkedYAMLError as error:
        problem = text_shortened(str(error.problem or error.context), MAX_MESSAGE_CHARS)
        raise ConfigInvalid([f"not valid YAML: {_where(error.problem_mark or error.context_mark)}{problem}"]) from None
    except yaml.YAMLError as error:
        raise ConfigInvalid([f"not valid YAML: {text_shortened(str(error), MAX_MESSAGE_CHARS)}"]) from None


def _refuse_hostile(text: str) -> None:
    """Walk the parser's events and raise _Refused at the first anchor, alias, level too deep or value too many."""
    depth = nodes = 0
    for event in yaml.parse(text, Loader=_Loader):
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            raise _Refused(
                "anchors and aliases (&name, *name) are not allowed in a configuration file; "
                "write each value out in full",
                event.start_mark,
            )
        if isinstance(event, yaml.NodeEvent):  # a scalar, or the start of a list or a mapping
            nodes += 1
            if nodes > MAX_NODES:
                raise _Refused(
                    f"the file has more than {MAX_NODES:,} values; split it (a file may hold only some of the sections)"
                )
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                raise _Refused(f"nested deeper than {MAX_DEPTH} levels", event.start_mark)
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1


def _where(mark: Any) -> str:
    return f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""


def config_yaml_dump(document: dict[str, list[dict[str, Any]]]) -> str:
    flowed = {name: [_flow_values(entry) for entry in entries] for name, entries in document.items()}
    return yaml.dump(flowed, Dumper=_Dumper, sort_keys=False, allow_unicode=True, default_flow_style=False)


def _flow_values(entry: dict[str, Any]) -> dict[str, Any]:
    flowed: dict[str, Any] = {}
    for key, value in entry.items():
        if isinstance(value, list):
            value = _FlowList(value)
        elif isinstance(value, dict):
            value = _FlowDict(value)
        flowed[key] = value
    return flowed
