"""The operator console, mounted in the admin: it imports the other apps, none imports it."""
