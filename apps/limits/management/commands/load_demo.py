from typing import Any

from django.core.management.base import BaseCommand

from apps.limits.config_io import DEMO_SERVICE, demo_load


class Command(BaseCommand):
    help = (
        "Load the demo data set (apps/limits/demo.yaml) through the import; running it again changes nothing. "
        f"Gives {DEMO_SERVICE} an API key, printed once, if it has no active key."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        loaded = demo_load()
        self.stdout.write("Demo data: " + "\n".join(loaded.report.lines()))
        if loaded.issued_key is None:
            self.stdout.write(
                f"{DEMO_SERVICE} already has an active API key (its secret was shown once, when it was made). "
                f"For a new one: .venv/bin/python manage.py create_api_key --service {DEMO_SERVICE}"
            )
            return
        self.stdout.write(f"API key for {DEMO_SERVICE} (it will not be shown again):")
        self.stdout.write(f"  {loaded.issued_key.secret}")
