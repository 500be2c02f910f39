"""manage.py generate_traffic: seed 004's synthetic sessions against a running platform, with a progress bar on
standard error and what the generator did (its own record) on standard output."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from apps.quality.synthetic import Generator, Scenario
from apps.quality.synthetic.runner import NotReady
from apps.quality.synthetic.scenario import SERVICE
from apps.quality.synthetic.setup import synthetic_setup

BAR_REDRAW_S = 0.2


class Command(BaseCommand):
    help = (
        "Run the synthetic traffic of seed 004 against a running platform over HTTP: common users with random "
        "short sessions (some left to expire) and aggressive users holding as many equal sessions as their limits "
        "allow, plus window-limited checks. --setup first imports the scenario's operations, plans, customers and "
        "limits (and issues an API key when none is given). Before the traffic it waits (--ready-timeout) until the "
        "platform accepts the key and knows the scenario's customers. Prints per customer what it held and opened; "
        "exits with status 1 when the platform is not ready or any user thread stopped on an error."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        defaults = Scenario()
        parser.add_argument("--url", default="http://127.0.0.1:8000", help="The platform's base URL.")
        parser.add_argument("--api-key", default="", help="A service-wide API key (with --setup: issued if empty).")
        parser.add_argument("--seed", type=int, default=defaults.seed, help="Same seed, same plan of sessions.")
        parser.add_argument("--duration", type=float, default=defaults.duration_s, help="Seconds to run.")
        parser.add_argument("--common", type=int, default=defaults.common, help="Common users.")
        parser.add_argument("--aggressive", type=int, default=defaults.aggressive, help="Aggressive users.")
        parser.add_argument("--prefix", default=defaults.prefix, help="Customer ids start with this.")
        parser.add_argument("--setup", action="store_true", help="Import the scenario's configuration first.")
        parser.add_argument("--setup-only", action="store_true", help="Import the configuration, run nothing.")
        parser.add_argument("--json", action="store_true", help="Print the record as JSON instead of text.")
        parser.add_argument(
            "--ready-timeout",
            type=float,
            default=30.0,
            help="Seconds to wait for the platform to accept the key and serve the scenario's configuration.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            scenario = Scenario(
                seed=options["seed"],
                duration_s=options["duration"],
                common=options["common"],
                aggressive=options["aggressive"],
                prefix=options["prefix"],
            )
        except ValueError as error:
            raise CommandError(str(error)) from None
        api_key = options["api_key"]
        if options["setup"] or options["setup_only"]:
            done = synthetic_setup(scenario=scenario, issue_key=not api_key)
            self.stderr.write("Setup: " + "\n".join(done.lines))
            if done.api_key:
                self.stderr.write(f"Issued API key of service {SERVICE} (shown once): {done.api_key}")
                api_key = done.api_key
            if options["setup_only"]:
                return
        if not api_key:
            raise CommandError("Give --api-key (a service-wide key), or --setup to issue one.")
        generator = self._ready_generator(scenario, options, api_key)
        record = self._run(generator)
        if options["json"]:
            self.stdout.write(json.dumps({**record.to_json(), "errors": generator.errors}, indent=2))
        else:
            self.stdout.write("\n".join(record.summary_lines()))
        if generator.errors:
            raise CommandError(
                f"{len(generator.errors)} user threads stopped on an error, so the record above is incomplete; "
                f"first: {generator.errors[0]}"
            )

    def _ready_generator(self, scenario: Scenario, options: dict[str, Any], api_key: str) -> Generator:
        """The generator, once the platform serves its key and the scenario's customers (CommandError if not)."""
        try:
            generator = Generator(scenario, options["url"], api_key)
        except ValueError as error:
            raise CommandError(str(error)) from None
        try:
            waited_s = generator.wait_ready(options["ready_timeout"])
        except NotReady as error:
            generator.client.close()
            raise CommandError(
                f"The platform at {options['url']} does not serve this key and the scenario's customers yet: {error}. "
                "Is it running on this database (the same DATABASE_URL or VAR_DIR), and the key right? A slow start "
                "may need a longer --ready-timeout."
            ) from None
        if waited_s >= 1:
            self.stderr.write(f"The platform serves the configuration (waited {waited_s:.1f} s).")
        return generator

    def _run(self, generator: Generator) -> Any:
        total = generator.scenario.duration_s
        with tqdm(file=self.stderr._out, total=total, unit=" s", desc="traffic", mininterval=BAR_REDRAW_S) as bar:

            def progress(elapsed_s: float, sessions: int) -> None:
                bar.update(min(elapsed_s, total) - bar.n)
                bar.set_postfix(sessions=sessions, refresh=False)

            return generator.run(progress)
