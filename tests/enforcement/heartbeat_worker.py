"""A process that beats like an API instance until it is killed (tests/enforcement/test_heartbeat.py).

DATABASE_URL=... QUOTA_HEARTBEAT_S=0.2 python tests/enforcement/heartbeat_worker.py
"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "quota_platform.settings")

import django  # noqa: E402

django.setup()

from apps.enforcement.fallback import heartbeat  # noqa: E402

heartbeat.heartbeat_start()
print(heartbeat.instance_name(), flush=True)
while True:
    time.sleep(60)
