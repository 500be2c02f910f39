import sys
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.limits.config_io import MAX_DOCUMENT_BYTES, ConfigInvalid, config_import, config_yaml_load, config_yaml_read


class Command(BaseCommand):
    help = (
        "Create or update operations, plans, customers, limits, overrides, access rules and services from a "
        "YAML file (the export_limits format). The whole file is checked first: if any entry is invalid, "
        "nothing is written and every problem is listed with its entry and key."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "file",
            help=f"The YAML file, at most {MAX_DOCUMENT_BYTES // (1024 * 1024)} MiB, without anchors or aliases "
            "(&name, *name); - reads standard input.",
        )
        parser.add_argument(
            "--dry-run", action="store_true", help="Check the file and print the changes it would make; write nothing."
        )
        parser.add_argument(
            "--prune",
            action="store_true",
            help=(
                "Also delete the objects the file does not name, in the sections the file has. A section "
                "absent from the file is left untouched. Customers and services with active API keys are "
                "never deleted (the import is refused instead)."
            ),
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            document = config_yaml_load(read_text(options["file"]))
            report = config_import(document=document, prune=options["prune"], dry_run=options["dry_run"])
        except ConfigInvalid as error:
            raise CommandError(error.message) from None
        self.stdout.write("\n".join(report.lines()))


def read_text(file: str) -> str:
    """The file's text; raises ConfigInvalid when it is too large or not UTF-8 (read no further than the cap)."""
    if file == "-":
        return config_yaml_read(sys.stdin.buffer)
    try:
        with Path(file).open("rb") as handle:
            return config_yaml_read(handle)
    except OSError as error:
        raise CommandError(f"Cannot read {file}: {error.strerror or error}") from None
