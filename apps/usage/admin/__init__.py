"""The usage side of the admin: the usage tables (tables.py), a customer's usage page and its quick actions
(customer_page.py, actions.py; wired into the customer admin's URLs), and the dashboard on the index."""

from apps.usage.admin import tables  # noqa: F401 - registers the usage tables with the admin site
