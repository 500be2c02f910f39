from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.apikeys.models import Service
from apps.apikeys.services import api_key_create
from apps.customers.models import Customer


class Command(BaseCommand):
    help = (
        "Create an API key for a service and print it once; only its prefix and a SHA-256 hash are stored. "
        "With --customer the key is bound to that customer and sees and spends only its quota."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--service", required=True, metavar="NAME", help="The service the key belongs to.")
        parser.add_argument("--customer", metavar="ID", help="Bind the key to the customer with this id.")
        parser.add_argument("--name", default="", metavar="LABEL", help="A label to tell keys apart.")

    def handle(self, *args: Any, **options: Any) -> None:
        service = Service.objects.filter(name=options["service"]).first()
        if service is None:
            raise CommandError(
                f"No service named “{options['service']}”. Create it in the admin, or in the services "
                "section of a file for import_limits."
            )
        customer = None
        if options["customer"] is not None:
            customer = Customer.objects.filter(external_id=options["customer"]).first()
            if customer is None:
                raise CommandError(f"No customer with id “{options['customer']}”.")
        issued = api_key_create(service=service, customer=customer, name=options["name"])
        bound = f" bound to customer {customer.external_id}" if customer else " (service-wide)"
        self.stdout.write(f"Created API key {issued.api_key.prefix} for service {service.name}{bound}:")
        self.stdout.write(f"  {issued.secret}")
        self.stdout.write("Store it now: it will not be shown again.")
