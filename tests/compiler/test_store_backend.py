"""The per-file store on a folder and on object storage (a real S3 API: moto's server on
127.0.0.1, the real pyarrow S3 filesystem): the same entries by the same keys, damaged or
missing entries are misses, an unreachable bucket is a StorageError."""

from __future__ import annotations

import gzip
import json
import pickle
from collections import Counter

import numpy as np
import pyarrow.parquet as pq
import pytest

from codenib.compiler.build import build_index
from codenib.compiler.build_options import BuildOptions
from codenib.compiler.cache import FileCache
from codenib.core.file_entry import CachedFile
from codenib.core.store_backend import LocalBackend, ObjectBackend, open_backend
from codenib.compiler.vector_store import VectorStore
from codenib.core.storage import StorageConfig, StorageError
from codenib.core.tokens import TokenizerConfig
from codenib.core.types import NODES_SCHEMA, Node
from tests.batch.s3 import client, listing, new_bucket

NODES = [Node("a.py", "file", "a.py", "a", "a.py", 1, 2, text="def f():\n    return 1\n"),
         Node("a.py::f", "function", "a.py", "a.f", "f", 1, 2, signature="def f()", text="def f():\n    return 1\n",
              decorators=("cache",))]
TERMS = [Counter({"f": 1, "return": 1}), Counter({"f": 2})]
SHA = "ab" * 32


@pytest.fixture(scope="module")
def s3(s3_endpoint):
    """The loopback S3 API (tests/conftest.py): its endpoint and the settings that reach it."""
    return s3_endpoint, StorageConfig(endpoint=s3_endpoint)


@pytest.fixture
def bucket(s3):
    endpoint, storage = s3
    name = new_bucket(endpoint)
    return name, f"s3://{name}/store", storage


def test_open_backend_tells_folders_from_uris(tmp_path):
    assert isinstance(open_backend(tmp_path), LocalBackend)
    assert open_backend(f"file://{tmp_path}").root == tmp_path
    backend = open_backend("s3://b/p/", StorageConfig(endpoint="http://127.0.0.1:9"))
    assert isinstance(backend, ObjectBackend) and backend.uri == "s3://b/p" and backend.shown("x") == "s3://b/p/x"
    assert open_backend(backend) is backend


def test_local_entries_are_written_once_where_they_always_were(tmp_path):
    backend = LocalBackend(tmp_path)
    backend.write("v2/ab/abc.json", b"first")
    backend.write("v2/ab/abc.json", b"second")      # the same key holds the same bytes: kept as it is
    assert backend.read("v2/ab/abc.json") == b"first"
    assert backend.read("v2/ab/none.json") is None
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")) == ["v2", "v2/ab", "v2/ab/abc.json"]
    # A file cache entry sits at STORE/v3/<first two hex digits>/<64 hex digits>.json.gz.
    FileCache(tmp_path / "fc", TokenizerConfig()).put("a.py", SHA, CachedFile(NODES, TERMS))
    (path,) = (tmp_path / "fc").rglob("*.json.gz")
    entry = path.relative_to(tmp_path / "fc").parts
    assert entry[0] == "v3" and len(entry[2]) == 64 + 8 and entry[2].startswith(entry[1])
    # It is gzipped JSON (readable with zcat), and the same entry written again gives the same bytes.
    data = json.loads(gzip.decompress(path.read_bytes()))
    assert [row[NODES_SCHEMA.names.index("node_id")] for row in data["nodes"]] == [n.node_id for n in NODES]
    again = tmp_path / "fc2"
    FileCache(again, TokenizerConfig()).put("a.py", SHA, CachedFile(NODES, TERMS))
    (path2,) = again.rglob("*.json.gz")
    assert path2.read_bytes() == path.read_bytes()


def test_file_cache_round_trip_on_s3(s3, bucket):
    endpoint, _ = s3
    name, uri, storage = bucket
    cache = FileCache(ObjectBackend(uri, storage), TokenizerConfig())
    assert cache.root == uri
    assert cache.get("a.py", SHA) is None
    cache.put("a.py", SHA, CachedFile(NODES, TERMS))
    cache.put("a.py", SHA, CachedFile(NODES, TERMS))     # the same blob again: the same entry
    objects = listing(endpoint, name, "store")
    assert len(objects) == 1
    (key,) = objects
    assert key.startswith("v3/") and key.endswith(".json.gz")
    # Another process (here: a pickled copy, as a Ray task gets it) finds the entry.
    again = FileCache(pickle.loads(pickle.dumps(ObjectBackend(uri, storage))), TokenizerConfig())
    got = again.get("a.py", SHA)
    assert got is not None and got.nodes == NODES and got.terms == TERMS
    # Other bytes, another path or other tokenizer settings: other keys.
    assert again.get("a.py", "cd" * 32) is None
    assert again.get("b.py", SHA) is None
    assert FileCache(ObjectBackend(uri, storage), TokenizerConfig(stemmer=None)).get("a.py", SHA) is None
    # A damaged entry is a miss, never trusted.
    client(endpoint).put_object(Bucket=name, Key=f"store/{key}", Body=b'{"nodes": [[1, 2')
    assert again.get("a.py", SHA) is None


def test_vector_store_round_trip_on_s3(s3, bucket):
    endpoint, _ = s3
    name, uri, storage = bucket
    body = np.arange(8, dtype=np.float32).reshape(2, 4)
    names = body + 100
    store = VectorStore(ObjectBackend(uri, storage), "fp", 4)
    assert store.root == f"{uri}/vectors/v1/fp"
    store.put(["def f(): pass", "def g(): pass"], ["f", "g"], body, names)
    got = VectorStore(ObjectBackend(uri, storage), "fp", 4).get(["def f(): pass", "def g(): pass"], ["f", "g"])
    assert got is not None
    np.testing.assert_array_equal(got[0], body)
    np.testing.assert_array_equal(got[1], names)
    assert VectorStore(ObjectBackend(uri, storage), "other", 4).get(["def f(): pass", "def g(): pass"],
                                                                     ["f", "g"]) is None
    (key,) = listing(endpoint, name, "store")
    assert key.startswith("vectors/v1/fp/") and key.endswith(".npy")
    client(endpoint).put_object(Bucket=name, Key=f"store/{key}", Body=b"\x93NUMPY truncated")
    assert store.get(["def f(): pass", "def g(): pass"], ["f", "g"]) is None


def test_a_missing_bucket_fails_the_check_and_a_write_is_an_os_error(s3):
    _, storage = s3
    backend = ObjectBackend("s3://codenib-no-such-bucket/store", storage)
    with pytest.raises(StorageError) as err:
        backend.check()
    assert "codenib-no-such-bucket" in str(err.value) and "does not exist" in str(err.value)
    assert "create the bucket" in err.value.fix
    assert backend.read("v2/ab/x.json") is None
    with pytest.raises(OSError):        # the build skips a store it cannot write (best effort)
        backend.write("v2/ab/x.json", b"{}")


def test_a_second_build_takes_every_file_from_a_store_on_s3(s3, bucket, fixture_repo, tmp_path):
    """`codenib index --cache s3://...` twice: the second build parses nothing, and its
    nodes equal the first's."""
    name, uri, storage = bucket
    options = BuildOptions(dense=False, progress=False, cache=ObjectBackend(uri, storage))
    first = build_index(fixture_repo, tmp_path / "one", options)
    second = build_index(fixture_repo, tmp_path / "two", options)
    n_files = first.files
    assert first.manifest["cache"] == {"path": uri, "files_found": 0}
    assert second.manifest["cache"] == {"path": uri, "files_found": n_files}
    assert len(listing(s3[0], name, "store")) == n_files
    for table in ("nodes.parquet", "edges.parquet"):
        assert pq.read_table(tmp_path / "one" / table).equals(pq.read_table(tmp_path / "two" / table))


def test_a_file_whose_nodes_share_an_id_is_not_stored(tmp_path):
    import pyarrow as pa

    from codenib.compiler.build_cache import fill_cache
    from codenib.core.types import Node

    def node(nid, kind, text):
        return Node(node_id=nid, kind=kind, file="a.h", qualname="", name="a.h", start_line=1, end_line=1,
                    signature="", docstring="", text=text, content_sha256=SHA)

    cache = FileCache(tmp_path / "fc", TokenizerConfig())
    twins = [node("a.h", "file", "whole file"), node("a.h", "class", "enum")]
    said: list[str] = []
    fill_cache(cache, {"a.h"}, {"a.h": twins}, {"a.h": SHA}, None, pa.table({"node_id": ["a.h", "a.h"]}),
               {"a.h": Counter({"enum": 1})}, said.append)
    assert cache.get("a.h", SHA) is None and "two nodes share an id" in said[0]


def test_a_local_store_that_is_a_file_is_refused_by_its_check(tmp_path):
    """`index-set --store FILE` went on with a store it could never write."""
    from codenib.core.errors import BadInputError
    from codenib.core.store_backend import open_backend

    (tmp_path / "a.py").write_text("x = 1\n")
    with pytest.raises(BadInputError, match="the per-file store is a file, not a folder"):
        open_backend(str(tmp_path / "a.py"), None).check()
    open_backend(str(tmp_path / "new"), None).check()      # made on the first write
