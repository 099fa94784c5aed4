import atexit
import os
import shutil
import tempfile

import pytest

from tests.fixture_repo import write_repo

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# The tests' local Ray listens on 127.0.0.1 only (see codenib.batch.raysession.start_ray).
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
# Encoder exports and auto's measurements go to a cache of this session's own (Ray's
# workers inherit it), not the user's ~/.cache/codenib.
if "CODENIB_CACHE_DIR" not in os.environ:
    os.environ["CODENIB_CACHE_DIR"] = tempfile.mkdtemp(prefix="codenib-test-cache-")
    atexit.register(shutil.rmtree, os.environ["CODENIB_CACHE_DIR"], ignore_errors=True)
# Object-storage tests talk to a moto S3 server on 127.0.0.1 (tests/batch/s3.py). Credentials
# are dummies, set before any Ray starts so that its workers inherit them; no instance-metadata
# look-ups.
os.environ.setdefault("AWS_ACCESS_KEY_ID", "codenib-test")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "codenib-test")
os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")


@pytest.fixture(scope="session")
def s3_endpoint():
    """A real S3 API (moto's server) on 127.0.0.1: its endpoint URL."""
    from tests.batch.s3 import start_s3

    server, endpoint = start_s3()
    yield endpoint
    server.stop()


@pytest.fixture(scope="session")
def fixture_repo(tmp_path_factory):
    """The small hand-checked repository of tests/fixture_repo.py."""
    return write_repo(tmp_path_factory.mktemp("repo"))


@pytest.fixture(scope="session")
def fixture_index_dir(fixture_repo, tmp_path_factory):
    """The fixture repository indexed with BM25, graph and dense vectors (packaged model,
    torch encoder: the rankings the tests check were read off torch's vectors)."""
    from codenib.compiler.build import build_index
    from codenib.compiler.build_options import BuildOptions

    out = tmp_path_factory.mktemp("index") / "fixture"
    build_index(fixture_repo, out, BuildOptions(progress=False, device="cpu", encoder="torch"))
    return out


@pytest.fixture(scope="session")
def fixture_index(fixture_index_dir):
    from codenib.index.loaded import load_index

    return load_index(fixture_index_dir, device="cpu")


@pytest.fixture(scope="session")
def sparse_only_index_dir(fixture_repo, tmp_path_factory):
    """The fixture repository indexed without dense vectors."""
    from codenib.compiler.build import build_index
    from codenib.compiler.build_options import BuildOptions

    out = tmp_path_factory.mktemp("index") / "sparse_only"
    build_index(fixture_repo, out, BuildOptions(dense=False, progress=False))
    return out


@pytest.fixture(scope="session")
def sparse_only_index(sparse_only_index_dir):
    from codenib.index.loaded import load_index

    return load_index(sparse_only_index_dir)
