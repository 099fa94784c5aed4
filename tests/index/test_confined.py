"""Issue 27, item 10: every file an index reads stays inside the index folder."""

from __future__ import annotations

import shutil

import pytest

from codenib.core.errors import IndexFormatError
from codenib.index.loaded import load_index


def test_a_linked_folder_of_the_index_leading_out_is_refused(sparse_only_index_dir, tmp_path):
    index, outside = tmp_path / "idx", tmp_path / "outside"
    shutil.copytree(sparse_only_index_dir, index)
    shutil.move(index / "sparse", outside)
    (index / "sparse").symlink_to(outside, target_is_directory=True)
    with pytest.raises(IndexFormatError, match=r"idx/sparse: sparse leads to .*outside through a symbolic link, outside the index folder"):
        load_index(index)


def test_a_linked_manifest_is_refused_before_it_is_read(sparse_only_index_dir, tmp_path):
    index = tmp_path / "idx"
    shutil.copytree(sparse_only_index_dir, index)
    shutil.move(index / "manifest.json", tmp_path / "manifest.json")
    (index / "manifest.json").symlink_to(tmp_path / "manifest.json")
    with pytest.raises(IndexFormatError, match=r"idx/manifest.json: manifest.json leads to .* through a symbolic link"):
        load_index(index)


def test_links_inside_the_folder_and_a_linked_index_folder_load(sparse_only_index_dir, tmp_path):
    index = tmp_path / "idx"
    shutil.copytree(sparse_only_index_dir, index)
    (tmp_path / "alias").symlink_to(index, target_is_directory=True)   # the folder itself may be a link
    assert len(load_index(tmp_path / "alias").nodes) > 0
