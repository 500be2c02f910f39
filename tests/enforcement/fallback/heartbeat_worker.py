"""A process that beats like an API instance until it is killed (tests/enforcement/fallback/test_heartbeat.py).

DATABASE_URL=... QUOTA_HEARTBEAT_S=0.2 python tests/enforcement/fallback/heartbeat_worker.py
"""

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the repository root
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "quota_platform.settings")

import django  # noqa: E402

django.setup()

from apps.enforcement.fallback import heartbeat  # noqa: E402

heartbeat.heartbeat_start()
print(heartbeat.instance_name(), flush=True)
while True:
    time.sleep(60)
