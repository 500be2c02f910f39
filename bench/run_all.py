"""`make bench`: every benchmark in turn (engine, API, SDK, counter-record storage), each printing its own figures.

Run a script on its own for its options (e.g. `bench/api/run.py --write-results`).
"""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCHMARKS = ["bench/engine/run.py", "bench/api/run.py", "bench/sdk/run.py", "bench/durability/records_size.py"]


def main() -> int:
    failures = 0
    for script in BENCHMARKS:
        print(f"\n=== {script} ===", flush=True)
        failures += subprocess.call([sys.executable, str(ROOT / script)], cwd=ROOT) != 0
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
