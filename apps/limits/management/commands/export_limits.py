from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.limits.config_io import config_export, config_yaml_dump


class Command(BaseCommand):
    help = (
        "Write operations, plans, customers, limits, overrides, access rules and services as YAML, in the "
        "format import_limits reads; importing the output changes nothing."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--output", "-o", metavar="FILE", help="Write to FILE instead of standard output.")

    def handle(self, *args: Any, **options: Any) -> None:
        text = config_yaml_dump(config_export())
        if not options["output"]:
            self.stdout.write(text, ending="")
            return
        try:
            Path(options["output"]).write_text(text, encoding="utf-8")
        except OSError as error:
            raise CommandError(f"Cannot write {options['output']}: {error.strerror or error}") from None
        self.stdout.write(f"Wrote {options['output']}.")
