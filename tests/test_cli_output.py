"""The CLI's printed text on a terminal and in a pipe or a log: values never wrapped mid-way in a log,
progress lines for ingest in a log, augment's results in the order of its progress lines, `--help`
without placeholders or cut sentences, `methods` consistent with the code, `documents` paged and
counted, `ask -m auto` saying what it chose and why, a note for entities not in the graph, and a
readable `neo4j status`. The CLI runs in-process (typer's CliRunner, not a terminal) against the test
session's real Neo4j; FORCE_COLOR makes its result console a terminal."""

from __future__ import annotations

import io
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner, Result

from graphstrata.augment.deferral import WHOLE_GRAPH
from graphstrata.cli import app
from graphstrata.cli.common import UNWRAPPED, LogProgress, OutConsole, first_sentence
from graphstrata.cli.documents import print_page_line
from graphstrata.cli.local_neo4j import status_text
from graphstrata.config import Settings, get_settings
from graphstrata.db import Database
from graphstrata.output import not_in_graph_note, print_evidence
from graphstrata.retrieval.base import ContextItem, RetrievalError

Invoke = Callable[..., Result]
ANSI = re.compile(r"\x1b\[[0-9;]*m")

DOCS = {
    "Maximum Overdrive.txt": "Maximum Overdrive is a 1986 American science fiction horror film written and directed "
    "by Stephen King. The film was shot in and around Leland, North Carolina.",
    "Stephen King.txt": "Stephen King is an American author of horror, supernatural fiction and fantasy novels.",
    "Leland.txt": "Leland is a town in Brunswick County, North Carolina, United States.",
}


@pytest.fixture
def cli(neo4j_settings: Settings, tmp_path: Path) -> Iterator[Invoke]:
    """``cli(*args, **env)``: the CLI against the test database, no LLM; COLUMNS unset unless given."""

    def invoke(*args: str, **env: str | None) -> Result:
        environment = neo4j_settings.subprocess_env(GRAPHSTRATA_CACHE_DIR=str(tmp_path / "cache"))
        for key in ("NEO4J_URI", "OPENAI_API_KEY", "OPENAI_BASE_URL", "GRAPHSTRATA_CHAT_MODEL", "OPENAI_MODEL"):
            environment.setdefault(key, None)  # type: ignore[arg-type]
        environment.setdefault("COLUMNS", None)  # type: ignore[arg-type]
        environment.update(env)  # type: ignore[arg-type]
        get_settings.cache_clear()
        try:
            return CliRunner().invoke(app, list(args), env=environment)
        finally:
            get_settings.cache_clear()

    yield invoke


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    folder = tmp_path / "corpus"
    folder.mkdir()
    for name, text in DOCS.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def rendered(fn: Callable[[Console], None], terminal: bool, width: int | None = None) -> str:
    buf = io.StringIO()
    fn(OutConsole(file=buf, force_terminal=terminal, width=width, color_system=None))
    return buf.getvalue()


# ------------------------------------------------------------------------------------------------
# no wrapping in a log
# ------------------------------------------------------------------------------------------------

LONG_TITLE = "A documentary about the making of Maximum Overdrive from Maven Central archives " * 2
ITEM = ContextItem(
    node_id="c1", label="Chunk", text="Shot in Leland.", score=0.1234, why="vector", doc_titles=[LONG_TITLE.strip()]
)


def test_a_log_line_holds_whole_values(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    log = rendered(lambda c: print_evidence(c, [ITEM]), terminal=False)
    head = log.splitlines()[0]
    assert head.startswith("[1] Chunk c1 · A documentary") and head.endswith("· score 0.123")
    assert OutConsole(file=io.StringIO()).width == UNWRAPPED
    # on a terminal the same line wraps to the window (between words, as rich does)
    term = rendered(lambda c: print_evidence(c, [ITEM]), terminal=True, width=60)
    assert all(len(line) <= 60 for line in term.splitlines()) and len(term.splitlines()) > 3
    # COLUMNS set for a log is honoured as before
    monkeypatch.setenv("COLUMNS", "70")
    assert OutConsole(file=io.StringIO()).width == 70


def test_log_progress_lines_are_throttled_but_never_silent(capsys: pytest.CaptureFixture[str]) -> None:
    progress = LogProgress("ingest", every=3600)
    for done in range(0, 11):
        progress("embed", done, 10)
    progress("embed", 10, 10)  # said once
    progress("embed", 12, 20)  # the next batch grows the stage: it is reported again when done
    progress("embed", 20, 20)
    lines = capsys.readouterr().err.splitlines()
    assert lines == ["ingest: embed 0/10 (0%)", "ingest: embed 10/10 (100%)", "ingest: embed 20/20 (100%)"]


def test_ingest_in_a_log_prints_progress_lines(cli: Invoke, graph: Database, corpus: Path) -> None:
    result = cli("ingest", str(corpus), "--extractor", "spacy")
    assert result.exit_code == 0, result.output
    progress = [line for line in result.stderr.splitlines() if line.startswith("ingest: ")]
    assert progress[0] == f"ingest: reading {corpus}"
    stages = {line.split()[1] for line in progress[1:]}
    assert len(stages) >= 3, progress  # several stages report while they run
    assert all(re.fullmatch(r"ingest: \S+ \d+/\d+ \(\d+%\)", line) for line in progress[1:])
    quiet = cli("ingest", str(corpus), "--extractor", "spacy", "--quiet")
    assert quiet.exit_code == 0 and "ingest: " not in quiet.stderr


def test_augment_results_follow_its_progress_lines(cli: Invoke, graph: Database, corpus: Path) -> None:
    assert cli("ingest", str(corpus), "--extractor", "spacy", "--quiet").exit_code == 0
    result = cli("augment")
    assert result.exit_code == 0, result.output
    started = [m.group(1) for m in re.finditer(r"^augment \d+/\d+: (\S+) …$", result.stderr, re.M)]
    results = [m.group(1) for m in re.finditer(r"^  (\S+):$", result.stdout, re.M)]
    assert len(started) > 5 and results == started
    # after one more document the whole-graph stages keep their layers (here whatever changed), and say so;
    # --full runs them
    (corpus.parent / "more.txt").write_text("Grace Hopper visited Arlington in 1952 with Howard Aiken.")
    assert cli("ingest", str(corpus.parent / "more.txt"), "--extractor", "spacy", "--quiet").exit_code == 0
    kept = cli("augment", "--param", "defer_share=1")
    assert kept.exit_code == 0, kept.output
    assert kept.stdout.count("deferred: ") == len(WHOLE_GRAPH), kept.stdout
    full = cli("augment", "--full", "--param", "defer_share=1")
    assert full.exit_code == 0 and "deferred" not in full.stdout, full.stdout


# ------------------------------------------------------------------------------------------------
# help, methods
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("args", [[], ["ingest"], ["neo4j"], ["ask"], ["documents"]])
@pytest.mark.parametrize("columns", ["80", "200"])
def test_help_lists_flags_plainly_and_whole_sentences(args: list[str], columns: str) -> None:
    result = CliRunner().invoke(app, [*args, "--help"], env={"COLUMNS": columns})
    assert result.exit_code == 0, result.output
    text = result.stdout
    assert "<bool>" not in text
    if "Commands:" in text:  # click would cut each summary at ~45 characters with "..."
        assert "..." not in text[text.index("Commands:") :]
    assert "--version" in text or args
    flat = " ".join(text.split())
    if not args:  # every command's first sentence, whole
        for name in ("ingest", "augment", "cypher", "documents"):
            cmd = app.registered_commands
            doc = next(c.callback.__doc__ for c in cmd if (c.name or c.callback.__name__) == name)
            assert first_sentence(doc) in flat, (name, first_sentence(doc))
    if args == ["ingest"]:  # brackets in a description are text, not markup
        assert "triples [subject, predicate, object]" in flat


def test_methods_lists_what_the_code_runs(cli: Invoke, db: Database) -> None:
    from graphstrata.embed import get_embedder
    from graphstrata.retrieval.base import get_retriever

    result = cli("methods")
    assert result.exit_code == 0, result.output
    text = result.stdout
    keyword = text[text.index("ketrag-keyword\n") :].split("\n")[:3]
    skeleton = text[text.index("ketrag-skeleton\n") :].split("\n")[:3]
    assert "(lambda = 0)" in keyword[1] and "lam=0.0" in keyword[2]
    assert "(lambda = 1)" in skeleton[1] and "lam=1.0" in skeleton[2]
    assert "lam=0.5" in text[text.index("ketrag\n") :].split("\n")[2]
    assert "method_params={}" in text and "defaults: top_k=None, budget=" in text
    # the listed default is the one enforced: another lambda is refused, not silently ignored
    with pytest.raises(RetrievalError, match="lam"):
        get_retriever("ketrag-keyword", db, get_embedder()).retrieve("Who?", lam=0.5)


# ------------------------------------------------------------------------------------------------
# documents, ask, neo4j status
# ------------------------------------------------------------------------------------------------


def test_page_line_terminal_and_log() -> None:
    for terminal in (True, False):
        line = rendered(lambda c: print_page_line(c, 994, 0, 50, 994), terminal, width=100).strip()
        assert line == "documents 1-50 of 994; next page: --offset 50"
        assert (
            rendered(lambda c: print_page_line(c, 3, 2, 1, 10), terminal).strip()
            == "documents 3-3 of 3 (of 10 in the graph)"
        )
        assert (
            rendered(lambda c: print_page_line(c, 0, 0, 0, 10), terminal).strip() == "0 documents (of 10 in the graph)"
        )


def test_documents_are_paged_filtered_and_counted(cli: Invoke, graph: Database, corpus: Path) -> None:
    assert cli("ingest", str(corpus), "--extractor", "spacy", "--quiet").exit_code == 0
    for env in ({}, {"FORCE_COLOR": "1", "COLUMNS": "200"}):  # a log, then a terminal
        page = cli("documents", "--limit", "2", **env)
        assert page.exit_code == 0, page.output
        out = ANSI.sub("", page.stdout)
        rows = [line for line in out.splitlines() if line.count("│") > 3]
        assert [r.split("│")[1].strip() for r in rows] == ["Leland", "Maximum Overdrive"]
        assert out.rstrip().endswith("documents 1-2 of 3; next page: --offset 2")
    last = ANSI.sub("", cli("documents", "--limit", "2", "--offset", "2").stdout)
    assert "Stephen King" in last and last.rstrip().endswith("documents 3-3 of 3")
    found = cli("documents", "--title", "KING").stdout
    assert "Stephen King" in found and "Leland" not in found and "documents 1-1 of 1 (of 3 in the graph)" in found
    failed = cli("documents", "--status", "failed").stdout
    assert failed.strip() == "0 documents (of 3 in the graph)"
    assert cli("documents", "--limit", "0").exit_code == 2  # a page holds at least one


def test_ask_auto_says_what_it_chose_and_notes_unknown_entities(cli: Invoke, graph: Database, corpus: Path) -> None:
    assert cli("ingest", str(corpus), "--extractor", "spacy", "--quiet").exit_code == 0
    for env in ({}, {"FORCE_COLOR": "1", "COLUMNS": "80"}):
        result = cli("ask", "Who directed Maximum Overdrive?", "-m", "auto", **env)
        assert result.exit_code == 0, result.output
        out = ANSI.sub("", result.stdout)
        chose = [line for line in out.splitlines() if line.startswith("auto chose ")]
        assert len(chose) == 1 and re.match(r"auto chose hipporag \([a-z-]+ rule\): a [a-z-]+ question \(", chose[0])
        assert "not in the graph" not in out
    unknown = cli("ask", "Where was Zebulon Quixtar born?", "-m", "vector")
    assert unknown.exit_code == 0, unknown.output
    assert "note: no entity of the question (Zebulon Quixtar) is in the graph" in unknown.stdout
    partly = cli("ask", "Did Stephen King meet Zebulon Quixtar?", "-m", "vector")
    assert "note: not in the graph: Zebulon Quixtar" in partly.stdout


def test_not_in_graph_note_wording() -> None:
    assert not_in_graph_note(["A", "B"], ["A", "B"]).startswith(
        "note: no entity of the question (A, B) is in the graph"
    )
    assert not_in_graph_note(["A", "B"], ["B"]).startswith("note: not in the graph: B")


def test_neo4j_status_of_the_test_server(cli: Invoke, db: Database, neo4j_mode: str) -> None:
    if neo4j_mode != "local":
        pytest.skip("the test server is not the launcher's (NEO4J_URI or Docker)")
    from graphstrata.neo4j_local import APOC_VERSION, GDS_VERSION, NEO4J_VERSION

    result = cli("neo4j", "status")
    assert result.exit_code == 0, result.output
    lines = dict(line.split(None, 1) for line in result.stdout.splitlines())
    assert re.fullmatch(r"yes \(pid \d+\)", lines["running"]) and lines["answering"] == "yes"
    assert lines["neo4j"] == f"{NEO4J_VERSION} community" and lines["gds"] == GDS_VERSION
    assert lines["apoc"] == APOC_VERSION and re.fullmatch(r"(21|25) \(/.+/java\)", lines["java"])


def test_neo4j_status_prints_clean_values(cli: Invoke, tmp_path: Path) -> None:
    base = {
        "instance": "x",
        "home": "/h",
        "bolt": "bolt://127.0.0.1:1",
        "browser": "http://127.0.0.1:2/browser/",
        "apoc": "5.26.19",
        "java": 21,
        "java_path": "/usr/bin/java",
    }
    up = status_text(
        {
            **base,
            "running": True,
            "pid": 42,
            "answering": True,
            "neo4j": "2026.01.4",
            "edition": "community",
            "gds": "2.26.0",
        }
    )
    assert "running    yes (pid 42)" in up and "answering  yes" in up
    assert (
        "neo4j      2026.01.4 community" in up and "gds        2.26.0" in up and "java       21 (/usr/bin/java)" in up
    )
    down = status_text({**base, "running": False, "pid": None, "answering": False})
    for text in (up, down):
        assert not re.search(r"\b(True|False|None)\b", text)
    assert "running    no" in down and "(the installed version; the server is not answering)" in down
    # the command itself, for an instance that does not run
    result = cli("neo4j", "status", "--instance", "docs-status-none", GRAPHSTRATA_DATA_DIR=str(tmp_path))
    assert result.exit_code == 3
    lines = dict(line.split(None, 1) for line in result.stdout.splitlines())
    assert lines["running"] == "no" and lines["answering"] == "no"
    assert {"java", "neo4j", "gds", "apoc"} <= set(lines) and "None" not in result.stdout


FAKE_MVN = """#!/bin/sh
for a in "$@"; do case $a in -DoutputFile=*) out=${a#-DoutputFile=};; esac; done
for i in 1 2 3; do echo "[INFO] Downloaded from central: https://repo.example/x$i.jar (1.0 MB at 3 MB/s)"; done
if [ -n "$FAIL" ]; then echo "[ERROR] Could not transfer artifact org.neo4j:neo4j:jar:5.0"; exit 1; fi
echo "   org.neo4j:neo4j:jar:5.0:compile:/tmp/x.jar" > "$out"
"""


def test_maven_fetch_shows_progress(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first start's download says how far Maven has got (files and MB), then that it is done."""
    import os

    from graphstrata.neo4j_dist import LauncherError, _resolve

    mvn = tmp_path / "bin" / "mvn"
    mvn.parent.mkdir()
    mvn.write_text(FAKE_MVN)
    mvn.chmod(0o755)
    monkeypatch.setenv("PATH", f"{mvn.parent}:{os.environ['PATH']}")
    said: list[str] = []
    jars = _resolve([("org.neo4j", "neo4j", "5.0")], tmp_path / "w", said.append, "1/3 Neo4j", every=0)
    assert jars == {"org.neo4j:neo4j": Path("/tmp/x.jar")}
    assert said == [
        "  1/3 Neo4j: 1 files, 1 MB downloaded so far …",
        "  1/3 Neo4j: 2 files, 2 MB downloaded so far …",
        "  1/3 Neo4j: 3 files, 3 MB downloaded so far …",
        "  1/3 Neo4j: resolved (3 files, 3 MB downloaded)",
    ]
    monkeypatch.setenv("FAIL", "1")
    with pytest.raises(LauncherError, match=r"Maven Central .* could not be reached"):
        _resolve([("org.neo4j", "neo4j", "5.0")], tmp_path / "w2", said.append, "1/3 Neo4j", every=0)
