"""The MCP conformance suite (``@modelcontextprotocol/conformance``) against `memvault serve --http`.

``.ci/run`` installs the suite and Node 22 from the npm registry and names the suite's
executable in ``MEMVAULT_CONFORMANCE_BIN``; without it the test is skipped and says why.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

MEMVAULT = str(Path(sys.executable).with_name("memvault"))
SCENARIOS = ["server-initialize", "ping", "tools-list", "resources-list", "prompts-list",
             "dns-rebinding-protection"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def http_url(tmp_path_factory: pytest.TempPathFactory) -> object:
    """`memvault serve --http` on loopback (no token needed there) for the module."""
    bench = os.environ.get("MEMVAULT_CONFORMANCE_BIN")
    if not bench or not Path(bench).is_file():
        pytest.skip("the MCP conformance suite is not installed: .ci/run installs it (npm: "
                    "@modelcontextprotocol/conformance with node@22) and sets MEMVAULT_CONFORMANCE_BIN")
    tmp = tmp_path_factory.mktemp("conformance")
    port = _free_port()
    env = {k: os.environ[k] for k in ("PATH", "HOME", "LANG", "TMPDIR", "PYTHONPATH", "XDG_CACHE_HOME") if k in os.environ}
    env.update({"MEMVAULT_DATA_DIR": str(tmp / "d"), "MEMVAULT_MODEL_CACHE_DIR": str(tmp / "models"),
                "ORT_DISABLE_TELEMETRY": "1", "HF_HUB_OFFLINE": "1"})
    proc = subprocess.Popen([MEMVAULT, "serve", "--http", "--port", str(port), "--log-level", "WARNING"],
                            env=env, cwd=tmp, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                break
        except OSError:
            assert proc.poll() is None, "memvault serve --http exited before it listened"
            time.sleep(0.1)
    yield f"http://127.0.0.1:{port}/mcp"
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_conformance_scenario_passes(http_url: str, scenario: str) -> None:
    run = subprocess.run([os.environ["MEMVAULT_CONFORMANCE_BIN"], "server", "--url", http_url,
                          "--scenario", scenario], capture_output=True, text=True, timeout=300)
    out = run.stdout + run.stderr
    assert run.returncode == 0, out[-2000:]
    assert " 0 failed" in out, out[-2000:]
