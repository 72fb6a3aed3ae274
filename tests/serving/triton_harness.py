"""Starting Triton Inference Server with Kiln's backend, for the serving tests and
bench/serving/triton_load.py.

The server is the `tritonserver` binary of the nvidia-pytriton wheel (scripts/setup.sh
installs it; KILN_TRITONSERVER names another one). The backend is build/triton/kiln/
libtriton_kiln.so (KILN_TRITON_BACKEND_DIR names another backend directory)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


class TritonUnavailable(RuntimeError):
    """The server binary is missing or cannot start on this machine."""


def tritonserver_path() -> Path:
    explicit = os.environ.get("KILN_TRITONSERVER")
    if explicit:
        return Path(explicit)
    # Located without importing pytriton: setup.sh installs the wheel for its binary only,
    # without the Python packages the pytriton module imports.
    import importlib.util

    spec = importlib.util.find_spec("pytriton")
    if spec is None or not spec.submodule_search_locations:
        raise TritonUnavailable(
            "tritonserver not found: install nvidia-pytriton (scripts/setup.sh does) or set KILN_TRITONSERVER"
        )
    return Path(list(spec.submodule_search_locations)[0]).resolve() / "tritonserver" / "bin" / "tritonserver"


def backend_directory() -> Path:
    explicit = os.environ.get("KILN_TRITON_BACKEND_DIR")
    if explicit:
        return Path(explicit)
    library = os.environ.get("KILN_LIBRARY")
    build = Path(library).resolve().parent if library else REPO_ROOT / "build"
    return build / "triton"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_model(repository: Path, name: str, program: Path, config: str) -> Path:
    """<repository>/<name>/config.pbtxt and <repository>/<name>/1/model.kiln or model.pt2 (a copy of
    `program`, named by its suffix)."""
    model_dir = repository / name
    (model_dir / "1").mkdir(parents=True, exist_ok=True)
    shutil.copyfile(program, model_dir / "1" / ("model" + program.suffix))
    (model_dir / "config.pbtxt").write_text(config)
    return model_dir


def rss_bytes(pid: int) -> int:
    """Resident memory of process `pid`, from /proc."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


class TritonServer:
    """tritonserver on 127.0.0.1 with free HTTP, gRPC and metrics ports, stopped (killed if it
    does not stop) on exit. Models are loaded explicitly at start (all of the repository), and
    a model that fails to load leaves the server serving the others."""

    def __init__(self, repository: Path, log_path: Path, extra_args: tuple[str, ...] = (), ready_timeout: float = 120.0):
        self.repository = Path(repository)
        self.log_path = Path(log_path)
        self.extra_args = tuple(extra_args)
        self.ready_timeout = ready_timeout
        self.process: subprocess.Popen | None = None
        self.http_port = self.grpc_port = self.metrics_port = 0

    @property
    def http_url(self) -> str:
        return f"127.0.0.1:{self.http_port}"

    @property
    def grpc_url(self) -> str:
        return f"127.0.0.1:{self.grpc_port}"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def __enter__(self) -> "TritonServer":
        binary = tritonserver_path()
        if not binary.is_file():
            raise TritonUnavailable(f"tritonserver not found at {binary}")
        backends = backend_directory()
        if not (backends / "kiln" / "libtriton_kiln.so").is_file():
            raise TritonUnavailable(f"{backends}/kiln/libtriton_kiln.so is missing: build Kiln first")
        # A port taken between free_port() and the bind makes the start fail; a few tries.
        for _ in range(3):
            self.http_port, self.grpc_port, self.metrics_port = free_port(), free_port(), free_port()
            args = [str(binary), f"--model-repository={self.repository}", f"--backend-directory={backends}",
                    "--http-address=127.0.0.1", f"--http-port={self.http_port}",
                    "--grpc-address=127.0.0.1", f"--grpc-port={self.grpc_port}",
                    f"--metrics-address=127.0.0.1", f"--metrics-port={self.metrics_port}",
                    "--model-control-mode=explicit", "--load-model=*", "--exit-on-error=false",
                    "--strict-readiness=false", *self.extra_args]
            log = open(self.log_path, "wb")
            try:
                self.process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT,
                                                stdin=subprocess.DEVNULL)
            finally:
                log.close()
            try:
                self._wait_ready()
                return self
            except TritonUnavailable:
                self.stop()
                if "already in use" not in self.log():
                    raise
        raise TritonUnavailable("tritonserver could not bind its ports:\n" + self.log()[-4000:])

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.ready_timeout
        url = f"http://{self.http_url}/v2/health/ready"
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise TritonUnavailable(f"tritonserver exited with status {self.process.returncode}:\n"
                                        + self.log()[-4000:])
            try:
                with urllib.request.urlopen(url, timeout=1) as response:
                    if response.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.2)
        raise TritonUnavailable(f"tritonserver not ready after {self.ready_timeout} s:\n" + self.log()[-4000:])

    def rss(self) -> int:
        return rss_bytes(self.process.pid)

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        # SIGTERM lets Triton unload the models (the backend's finalizers run); its own
        # grace period is 30 s by default, so a bound of 60 s, then SIGKILL.
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def __exit__(self, *exc) -> None:
        self.stop()
