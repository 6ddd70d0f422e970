"""One cold container, in a fresh interpreter: import a step, invoke it twice, print CPU times.

Run by ``tests/bench/cold.py`` as ``python -I -S -B cold_probe.py TASK_ROOT:RUNTIME MODULE
EVENT`` with a Lambda-like environment: TASK_ROOT holds exactly what the bundle ships
(steps/, the pinned libraries, the index), like /var/task, and RUNTIME stands in for the
runtime's own SDK, after it on the path; ``-S`` keeps this machine's site-packages out,
``-B`` writes no bytecode, so a run "without bytecode" compiles every shipped module.
Times are CPU seconds of this process (``time.process_time``), the quantity Lambda's CPU
share stretches; wall times are printed beside them.
"""

from __future__ import annotations

import importlib
import json
import sys
import time


def main() -> None:
    root, module, event_json = sys.argv[1], sys.argv[2], sys.argv[3]
    sys.path[:0] = root.split(":")
    event = json.loads(event_json)
    marks = [(time.process_time(), time.perf_counter())]
    handler = importlib.import_module(module).handler
    marks.append((time.process_time(), time.perf_counter()))
    first = handler(event, None)
    marks.append((time.process_time(), time.perf_counter()))
    handler(event, None)
    marks.append((time.process_time(), time.perf_counter()))
    names = ("import", "first", "warm")
    out = {
        name: {"cpu": marks[i + 1][0] - marks[i][0], "wall": marks[i + 1][1] - marks[i][1]}
        for i, name in enumerate(names)
    }
    out["numpy"] = "numpy" in sys.modules
    out["result"] = sorted(first) if isinstance(first, dict) else str(type(first))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
