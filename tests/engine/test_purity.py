"""The engine is pure Python: importing it loads no Django module."""

import json
import subprocess
import sys


def test_importing_the_engine_loads_no_django_module() -> None:
    code = (
        "import json, sys\n"
        "import apps.engine, apps.engine.store.redis, apps.engine.store.memory\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=".")
    loaded = json.loads(result.stdout)
    assert "apps.engine.store.redis" in loaded
    assert [name for name in loaded if name == "django" or name.startswith("django.")] == []
