"""The demo API key `make run` prints next to the admin login.

Keys are stored hashed: a key's secret can be shown only when the key is made. So `make run` keeps the secret of
the demo key it makes in VAR_DIR/demo-api-key (mode 600, beside admin-password) and prints it from there on every
later run. When that file is missing, or its key was revoked, deleted or is not the demo service's, the run issues a
new demo key and writes it; keys made otherwise (create_api_key, the admin) are never touched or printed. A database
without the demo service (the demo data goes only into an empty one) has no demo key.
"""

from __future__ import annotations

from pathlib import Path

from apps.apikeys.models import ApiKey, Service
from apps.apikeys.services import IssuedKey, api_key_create, api_key_hash
from apps.limits.config_io import DEMO_SERVICE

DEMO_KEY_FILE = "demo-api-key"
DEMO_KEY_NAME = "demo (make run)"


def demo_key_path(var_dir: Path) -> Path:
    return var_dir / DEMO_KEY_FILE


def demo_key_usable(secret: str) -> bool:
    """Whether `secret` is an active key of the demo service."""
    return ApiKey.objects.filter(
        key_hash=api_key_hash(secret), revoked_at__isnull=True, service__name=DEMO_SERVICE
    ).exists()


def demo_key_ensure(*, var_dir: Path, issued: IssuedKey | None = None) -> str | None:
    """The demo key's secret: `issued` (just made by the demo load), else the one kept in VAR_DIR if it still
    works, else a new demo key; None when there is no demo service. Whatever is returned is what the file holds."""
    path = demo_key_path(var_dir)
    if issued is None:
        kept = path.read_text().strip() if path.is_file() else ""
        if kept and demo_key_usable(kept):
            return kept
        service = Service.objects.filter(name=DEMO_SERVICE).first()
        if service is None:
            return None
        issued = api_key_create(service=service, name=DEMO_KEY_NAME)
    path.touch(mode=0o600)
    path.chmod(0o600)
    path.write_text(issued.secret + "\n")
    return issued.secret
