"""Are codexmem's tools in Codex's first model request on a busy machine? The real Codex CLI, counted.

Codex waits about one second for an optional MCP server (one without ``required = true``) before
its first model request; a server not ready by then is missing from that turn. This runs the
real Codex CLI (``codex exec``, installed from npm into ``bench/.codex-cli/``, which is
git-ignored) with the README's registration minus ``required = true``, against a loopback mock
of the model API that records each run's first request and answers with a minimal response
stream, while CPU-bound processes keep the cores busy. Prints, for each load, in how many runs
the memory tools were in the first request.

    .venv/bin/python -m bench.codex_first_turn [--runs 20] [--busy 2 3] [--compare-sdk]

``--compare-sdk`` adds the same runs with ``CODEXMEM_STDIO=sdk`` in the server's environment,
where the SDK's own streams answer the handshake after the SDK is imported (what every start
did before the handshake was answered ahead of it). Needs node and npm (registry.npmjs.org).
"""

from __future__ import annotations

import argparse
import http.server
import json
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
CLI_DIR = Path(__file__).resolve().parent / ".codex-cli"
CODEX_VERSION = "0.169.0"
CODEX = CLI_DIR / "node_modules" / ".bin" / "codex"
RUN_TIMEOUT_S = 120


def install_codex() -> Path:
    """``@openai/codex`` at the pinned version in ``bench/.codex-cli/`` (ignored by git through its own .gitignore)."""
    if CODEX.exists() and f"codex-cli {CODEX_VERSION}" in _run([str(CODEX), "--version"]):
        return CODEX
    npm = shutil.which("npm")
    if npm is None:
        raise SystemExit("codex_first_turn: npm is needed to install @openai/codex (apt-get install npm)")
    CLI_DIR.mkdir(exist_ok=True)
    (CLI_DIR / ".gitignore").write_text("*\n", encoding="utf-8")
    (CLI_DIR / "package.json").write_text('{"private": true}\n', encoding="utf-8")
    print(f"installing @openai/codex@{CODEX_VERSION} into {CLI_DIR} ...", flush=True)
    subprocess.run(
        [npm, "install", "--no-audit", "--no-fund", f"@openai/codex@{CODEX_VERSION}"], cwd=CLI_DIR, check=True
    )
    return CODEX


def _run(command: list[str]) -> str:
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=60, check=False).stdout
    except OSError:
        return ""


# ------------------------------------------------------------------ the model API, on loopback


class MockModel(http.server.ThreadingHTTPServer):
    """``POST /<run>/v1/responses``: keeps each run's first request body, answers "done" as a response stream."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.first: dict[str, dict[str, Any]] = {}
        self.lock = threading.Lock()

    @property
    def port(self) -> int:
        return int(self.server_address[1])


class _Handler(http.server.BaseHTTPRequestHandler):
    server: MockModel

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        run = self.path.strip("/").split("/", 1)[0]
        with self.server.lock:
            if run not in self.server.first:
                self.server.first[run] = json.loads(body or b"{}")
        events = [
            ("response.created", {"type": "response.created", "response": {"id": f"resp_{run}"}}),
            (
                "response.output_item.done",
                {
                    "type": "response.output_item.done",
                    "output_index": 0,
                    "item": {
                        "type": "message",
                        "role": "assistant",
                        "id": f"msg_{run}",
                        "content": [{"type": "output_text", "text": "done", "annotations": []}],
                    },
                },
            ),
            (
                "response.completed",
                {
                    "type": "response.completed",
                    "response": {
                        "id": f"resp_{run}",
                        "usage": {
                            "input_tokens": 1,
                            "input_tokens_details": None,
                            "output_tokens": 1,
                            "output_tokens_details": None,
                            "total_tokens": 2,
                        },
                    },
                },
            ),
        ]
        data = "".join(f"event: {name}\ndata: {json.dumps(event)}\n\n" for name, event in events).encode()
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the bench prints its own lines."""


def codexmem_tools(request: dict[str, Any]) -> list[str]:
    """The names of codexmem's tools in a model request (flat, or inside the ``mcp__codexmem`` namespace)."""
    names = []
    for tool in request.get("tools", []):
        if tool.get("type") == "namespace" and tool.get("name") == "mcp__codexmem":
            names += [str(inner.get("name")) for inner in tool.get("tools", [])]
        elif str(tool.get("name", "")).startswith("mcp__codexmem"):
            names.append(str(tool["name"]))
    return names


# ------------------------------------------------------------------ one run of codex exec


def config(port: int, run: str, server_env: dict[str, str]) -> str:
    """Codex's config.toml: the mock provider, and codexmem registered as the README shows minus ``required``."""
    codexmem = Path(sys.executable).with_name("codexmem")
    lines = [
        'model_provider = "mock"',
        'model = "gpt-5"',
        'approval_policy = "never"',
        'sandbox_mode = "read-only"',
        "",
        "[model_providers.mock]",
        'name = "mock"',
        f'base_url = "http://127.0.0.1:{port}/{run}/v1"',
        'wire_api = "responses"',
        "request_max_retries = 0",
        "stream_max_retries = 0",
        "",
        "[mcp_servers.codexmem]",
        f"command = {json.dumps(str(codexmem))}",
        'args = ["serve"]',
        'default_tools_approval_mode = "approve"',
    ]
    if server_env:
        pairs = ", ".join(f"{key} = {json.dumps(value)}" for key, value in server_env.items())
        lines.append(f"env = {{ {pairs} }}")
    return "\n".join(lines) + "\n"


def one_run(codex: Path, model: MockModel, run: str, workdir: Path, server_env: dict[str, str]) -> tuple[int, float]:
    """Tools of codexmem in the run's first model request, and seconds from start to that request."""
    with tempfile.TemporaryDirectory(prefix="codex-home-") as home:
        Path(home, "config.toml").write_text(config(model.port, run, server_env), encoding="utf-8")
        env = {"HOME": home, "CODEX_HOME": home, "PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}
        started = time.perf_counter()
        done = subprocess.run(
            [str(codex), "exec", "--skip-git-repo-check", "Say done."],
            cwd=workdir,
            env=env,
            capture_output=True,
            timeout=RUN_TIMEOUT_S,
            check=False,
        )
        elapsed = time.perf_counter() - started
    with model.lock:
        request = model.first.get(run)
    if request is None:
        tail = done.stderr.decode("utf-8", "replace")[-1500:]
        raise SystemExit(f"codex exec sent no model request in run {run} (exit {done.returncode}):\n{tail}")
    return len(codexmem_tools(request)), elapsed


def busy_processes(count: int) -> list[subprocess.Popen[bytes]]:
    """CPU-bound processes (a build or a test suite, say) keeping the cores busy."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]


def stop(processes: list[subprocess.Popen[bytes]]) -> None:
    for process in processes:
        process.send_signal(signal.SIGTERM)
    for process in processes:
        process.wait(timeout=30)


def workspace(root: Path) -> Path:
    """A git repository with a codexmem store, where Codex starts (and so the server)."""
    repo = root / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run([Path(sys.executable).with_name("codexmem"), "init"], cwd=repo, check=True, capture_output=True)
    return repo


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--busy", type=int, nargs="+", default=[2, 3], help="CPU-bound processes per series")
    parser.add_argument("--compare-sdk", action="store_true", help="also run with CODEXMEM_STDIO=sdk")
    args = parser.parse_args()
    codex = install_codex()
    servers: dict[str, dict[str, str]] = {"codexmem serve": {}}
    if args.compare_sdk:
        servers["CODEXMEM_STDIO=sdk"] = {"CODEXMEM_STDIO": "sdk"}
    model = MockModel()
    threading.Thread(target=model.serve_forever, daemon=True).start()
    rows = []
    try:
        with tempfile.TemporaryDirectory(prefix="codex-first-turn-") as tmp:
            repo = workspace(Path(tmp))
            one_run(codex, model, "warmup", repo, {})  # unmeasured: Codex's and the server's files into the page cache
            for busy in args.busy:
                hogs = busy_processes(busy)
                try:
                    time.sleep(1.0)  # let the load settle on the cores
                    for name, env in servers.items():
                        results = [
                            one_run(codex, model, f"b{busy}-{i}-{len(rows)}", repo, env) for i in range(args.runs)
                        ]
                        present = sum(1 for tools, _ in results if tools)
                        seconds = statistics.median(elapsed for _, elapsed in results)
                        counts = sorted({tools for tools, _ in results})
                        rows.append((name, busy, present, len(results), counts, seconds))
                        print(f"{name}, {busy} busy: tools in the first request {present} of {args.runs}", flush=True)
                finally:
                    stop(hogs)
    finally:
        model.shutdown()
    print("\n| server | CPU-bound processes | tools in the first request | tools listed | median codex exec (s) |")
    print("|---|---:|---:|---|---:|")
    for name, busy, present, total, counts, seconds in rows:
        listed = "/".join(str(count) for count in counts)
        print(f"| {name} | {busy} | {present} of {total} | {listed} | {seconds:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
