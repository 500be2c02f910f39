from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from apps.limits.config_io import DEMO_SERVICE, demo_load


class Command(BaseCommand):
    help = (
        "Load the demo data set (apps/limits/demo.yaml) through the import into an empty database, and give "
        f"{DEMO_SERVICE} an API key, printed once. A database that holds a configuration (an operation exists or "
        "existed) is left alone, so running it again changes nothing; --force imports the demo over it."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--force",
            action="store_true",
            help="Import the demo even into a configured database: what the demo names (its operations, limits, "
            "customers, ...) is created or set back to the demo's values, undoing edits to them; the rest is kept.",
        )

    def handle(self, *args: Any, force: bool, **options: Any) -> None:
        loaded = demo_load(force=force)
        self.stdout.write("Demo data: " + "\n".join(loaded.lines()))
        if loaded.report is None:
            self.stdout.write("Nothing changed. To import the demo over it anyway: manage.py load_demo --force")
            return
        if loaded.issued_key is None:
            self.stdout.write(
                f"{DEMO_SERVICE} already has an active API key (its secret was shown once, when it was made). "
                f"For a new one: .venv/bin/python manage.py create_api_key --service {DEMO_SERVICE}"
            )
            return
        self.stdout.write(f"API key for {DEMO_SERVICE} (it will not be shown again):")
        self.stdout.write(f"  {loaded.issued_key.secret}")
