"""The index manifest checks itself: every file the loader reads is listed, and the
manifest's own checksum (`self_sha256`) covers what it says about them."""

import json
import shutil

import numpy as np
import pytest

from codenib.core import artifact
from codenib.commands.cli import main
from codenib.core.errors import IndexFormatError
from codenib.index.loaded import load_index


@pytest.fixture
def index_copy(fixture_index_dir, tmp_path):
    copy = tmp_path / "idx"
    shutil.copytree(fixture_index_dir, copy)
    return copy


def _edit_manifest(folder, edit, *, reseal=False):
    path = folder / artifact.MANIFEST
    manifest = json.loads(path.read_text())
    edit(manifest)
    if reseal:  # as a tool that rewrites the manifest consistently would
        manifest[artifact.SELF_CHECKSUM] = artifact.manifest_checksum(manifest)
    path.write_text(json.dumps(manifest, indent=2))


def _flip_vector_bytes(folder):
    path = folder / artifact.VECTORS_FILE
    vectors = np.load(path)
    raw = bytearray(path.read_bytes())
    start = len(raw) - vectors.nbytes        # the data after the .npy header
    for i in range(start, start + 64):
        raw[i] ^= 0xFF
    path.write_bytes(bytes(raw))


def test_an_edited_manifest_fails_its_own_checksum(index_copy, capsys):
    # The reported fault: drop the vectors' entry, corrupt the vectors.
    _edit_manifest(index_copy, lambda m: m["artifacts"].pop(artifact.VECTORS_FILE))
    _flip_vector_bytes(index_copy)
    with pytest.raises(IndexFormatError, match="manifest.json.*checksum"):
        load_index(index_copy, device="cpu")
    assert main(["query", str(index_copy), "slugify"]) == 2
    err = capsys.readouterr().err
    assert "manifest.json" in err and "codenib index" in err


def test_a_file_the_loader_reads_must_be_listed(index_copy):
    _edit_manifest(index_copy, lambda m: m["artifacts"].pop(artifact.VECTORS_FILE), reseal=True)
    _flip_vector_bytes(index_copy)
    for verify in (True, False):   # listing is checked even where checksums are not (actors)
        with pytest.raises(IndexFormatError, match="dense/vectors.npy.*not list"):
            load_index(index_copy, device="cpu", verify=verify)


def test_an_unlisted_extra_file_where_the_loader_reads_is_refused(index_copy):
    (index_copy / "dense" / "hnsw.faiss").write_bytes(b"not an index")
    with pytest.raises(IndexFormatError, match="dense/hnsw.faiss.*not list"):
        load_index(index_copy, device="cpu")


def test_a_file_outside_the_loaded_parts_does_not_matter(index_copy):
    (index_copy / "NOTES.txt").write_text("my notes on this index")
    assert len(load_index(index_copy, device="cpu").nodes) == 23


def test_a_manifest_without_its_checksum_is_refused_with_the_fix(index_copy):
    _edit_manifest(index_copy, lambda m: m.pop(artifact.SELF_CHECKSUM))
    with pytest.raises(IndexFormatError, match="no self_sha256.*rebuild"):
        artifact.read_manifest(index_copy)


def test_a_fresh_manifest_verifies(fixture_index_dir):
    manifest = artifact.read_manifest(fixture_index_dir)
    assert manifest[artifact.SELF_CHECKSUM] == artifact.manifest_checksum(manifest)
    assert set(manifest["artifacts"]) >= {"nodes.parquet", "edges.parquet", "dense/vectors.npy"}


def test_a_file_or_a_missing_folder_is_named_for_what_it_is(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    with pytest.raises(IndexFormatError, match="this is a file, not an index folder"):
        artifact.read_manifest(tmp_path / "a.py")
    with pytest.raises(IndexFormatError, match="the index folder does not exist"):
        artifact.read_manifest(tmp_path / "none")
