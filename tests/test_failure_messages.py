"""Failures outside Neo4j that a user meets first — the launcher's first download, a server whose
temporary folder cannot take an upload — are clear errors that say what to do (no Neo4j needed)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from graphstrata.config import Settings
from graphstrata.neo4j_dist import LauncherError, _download_failure, ensure_distribution
from graphstrata.server.errors import ApiError
from graphstrata.server.ingest_jobs import load_uploads


def test_unwritable_download_folder_is_a_clear_launcher_error(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder should be")
    settings = Settings().model_copy(update={"cache_dir": blocker / "cache"})
    with pytest.raises(LauncherError, match=r"cannot write the Neo4j download folder .*GRAPHSTRATA_CACHE_DIR"):
        ensure_distribution(settings, log=lambda _: None)


@pytest.mark.parametrize(
    ("output", "hint"),
    [
        (
            "[ERROR] Could not transfer artifact org.neo4j:neo4j:pom:2026.01.4: UnknownHostException",
            "could not be reached",
        ),
        ("[ERROR] Checksum validation failed, expected abc but is def", "checksum"),
        ("java.io.IOException: No space left on device", "disk holding ~/.m2 is full"),
        ("[ERROR] something nobody foresaw", "its output follows"),
    ],
)
def test_maven_failures_are_explained(output: str, hint: str) -> None:
    message = _download_failure(output)
    assert message.startswith("Could not download Neo4j + GDS from Maven Central")
    assert hint in message and output in message  # the cause, and Maven's own words


def test_upload_with_no_usable_temporary_folder_is_a_507(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "tmp-is-a-file"
    blocker.write_text("")
    monkeypatch.setattr(tempfile, "tempdir", str(blocker / "sub"))  # what a full or read-only TMPDIR does
    with pytest.raises(ApiError) as err:
        load_uploads([("notes.txt", b"Kur is the Sumerian underworld.")], 1 << 20)
    assert err.value.status_code == 507 and err.value.code == "storage_unavailable"
    assert "temporary folder" in err.value.message and "TMPDIR" in err.value.message
