"""`chatguard serve` as a subprocess on a free loopback port, for the browser tests."""

from __future__ import annotations

import os
import queue
import re
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType

ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT_SECONDS = 90
# The line that says where it serves (the start-up lines also name example origins).
_URL = re.compile(r"serving offline on http://127\.0\.0\.1:(\d+)")


class ServerProcess:
    """Starts the real local server; `url` is set once it has printed its ready line."""

    def __init__(self, flags: Sequence[str]) -> None:
        self.flags = tuple(flags)
        self.url = ""
        self._lines: queue.Queue[str] = queue.Queue()
        self._output: list[str] = []
        self._process: subprocess.Popen[str] | None = None

    def __enter__(self) -> ServerProcess:
        # Port 0: the server binds a free port and prints the URL it got.
        command = [sys.executable, "-m", "chatguard", "serve", "--host", "127.0.0.1",
                   "--port", "0", "--quiet", "--trust-viewer-address", *self.flags]  # fmt: skip
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        self._process = subprocess.Popen(
            command, cwd=ROOT, env=env, text=True,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        )  # fmt: skip
        threading.Thread(target=self._pump, daemon=True).start()
        self.url = self._wait_for_url()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        process = self._process
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)

    def _pump(self) -> None:
        assert self._process is not None and self._process.stdout is not None
        for line in self._process.stdout:
            self._lines.put(line)

    def _wait_for_url(self) -> str:
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while time.monotonic() < deadline:
            try:
                line = self._lines.get(timeout=0.2)
            except queue.Empty:
                if self._process is not None and self._process.poll() is not None:
                    break
                continue
            self._output.append(line)
            match = _URL.search(line)
            if match:
                return f"http://127.0.0.1:{match.group(1)}"
        self.__exit__(None, None, None)
        raise RuntimeError("chatguard serve did not start:\n" + "".join(self._output[-40:]))
