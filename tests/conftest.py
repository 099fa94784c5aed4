import os

import pytest

from tests.fixture_repo import write_repo

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@pytest.fixture(scope="session")
def fixture_repo(tmp_path_factory):
    """The small hand-checked repository of tests/fixture_repo.py."""
    return write_repo(tmp_path_factory.mktemp("repo"))
