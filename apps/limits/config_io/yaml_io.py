"""Reading and writing the configuration as YAML text."""

from collections.abc import Hashable
from typing import Any

import yaml

from apps.limits.config_io.report import ConfigInvalid

TIMESTAMP_TAG = "tag:yaml.org,2002:timestamp"


class _Loader(yaml.SafeLoader):
    """Safe YAML that refuses repeated keys and leaves dates as text (the importer insists on an offset)."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != TIMESTAMP_TAG]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def _construct_mapping(loader: _Loader, node: yaml.MappingNode) -> dict[Any, Any]:
    loader.flatten_mapping(node)
    seen = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=True)
        if isinstance(key, Hashable) and key in seen:
            raise yaml.constructor.ConstructorError(None, None, f"the key “{key}” appears twice", key_node.start_mark)
        seen.add(key)
    return loader.construct_mapping(node, deep=True)


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


class _FlowList(list[Any]):
    pass


class _FlowDict(dict[Any, Any]):
    pass


class _Dumper(yaml.SafeDumper):
    """Entries in block style, the small lists and maps inside them in flow style ([customer, resource])."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)  # indent list items under their key, as the design does


_Dumper.add_representer(_FlowList, lambda dumper, data: dumper.represent_sequence("tag:yaml.org,2002:seq", data, True))
_Dumper.add_representer(_FlowDict, lambda dumper, data: dumper.represent_mapping("tag:yaml.org,2002:map", data, True))


def config_yaml_load(text: str) -> Any:
    """The document in `text`; raises ConfigInvalid naming the line and column of a syntax error."""
    try:
        return yaml.load(text, Loader=_Loader)  # noqa: S506 - _Loader is a SafeLoader
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        raise ConfigInvalid([f"not valid YAML: {where}{error.problem or error.context}"]) from None
    except yaml.YAMLError as error:
        raise ConfigInvalid([f"not valid YAML: {error}"]) from None


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
