"""The SDK installs and imports on its own: no Django anywhere on the path, and none loaded."""

import _socket
import json
import subprocess
import sys
from pathlib import Path

import urllib3

SOURCE = Path(__file__).resolve().parents[2] / "clients" / "python" / "src"
PROBE = """
import json, sys
import quota_client
client = quota_client.QuotaClient("http://127.0.0.1:9", "key")  # builds the urllib3 pool
client.close()
try:
    import django
    django_importable = True
except ImportError:
    django_importable = False
print(json.dumps({"modules": sorted(sys.modules), "django_importable": django_importable, "path": sys.path}))
"""


def test_the_sdk_imports_with_only_the_stdlib_and_urllib3_on_the_path(tmp_path) -> None:
    # urllib3 (the one dependency) alone in a folder of its own; the venv's site-packages stays out.
    only_urllib3 = tmp_path / "deps"
    only_urllib3.mkdir()
    (only_urllib3 / "urllib3").symlink_to(Path(urllib3.__file__).parent)
    stdlib = str(Path(json.__file__).parents[1])
    extensions = str(Path(_socket.__file__).parent)  # lib-dynload: the stdlib's compiled modules
    path = [str(SOURCE), str(only_urllib3), stdlib, extensions]
    code = f"import sys; sys.path[:] = {path!r}\n" + PROBE

    result = subprocess.run([sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True, check=False)

    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert "quota_client.client" in report["modules"]
    assert "urllib3" in report["modules"]
    assert not report["django_importable"], "the probe's path must not reach Django"
    assert [name for name in report["modules"] if name == "django" or name.startswith("django.")] == []
