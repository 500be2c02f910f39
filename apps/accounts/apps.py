from django.apps import AppConfig


class AccountsConfig(AppConfig):
    """Who may do what in the admin: the roles (groups created by a migration) and the login lockout page."""

    name = "apps.accounts"
    verbose_name = "Accounts and roles"
