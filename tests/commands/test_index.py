"""`codenib index --cache`: a per-file store in a folder or on object storage (a real S3 API:
moto's server on 127.0.0.1)."""

from __future__ import annotations

import json

from codenib.commands.cli import main
from tests.batch.s3 import listing, new_bucket


def test_a_cache_on_s3_is_filled_then_read(s3_endpoint, fixture_repo, tmp_path, monkeypatch):
    bucket = new_bucket(s3_endpoint)
    monkeypatch.setenv("CODENIB_S3_ENDPOINT", s3_endpoint)
    cache = f"s3://{bucket}/cache"
    for out in ("one", "two"):
        assert main(["index", str(fixture_repo), "--out", str(tmp_path / out), "--no-dense", "--quiet",
                     "--cache", cache]) == 0
    one, two = (json.loads((tmp_path / out / "manifest.json").read_text()) for out in ("one", "two"))
    files = one["counts"]["files"]
    assert one["cache"] == {"path": cache, "files_found": 0}
    assert two["cache"] == {"path": cache, "files_found": files}
    assert len(listing(s3_endpoint, bucket, "cache")) == files
    assert not (tmp_path / "s3:").exists()      # never a local folder named after the URI


def test_a_cache_in_a_missing_bucket_exits_2_naming_it(s3_endpoint, fixture_repo, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("CODENIB_S3_ENDPOINT", s3_endpoint)
    cache = "s3://codenib-no-such-bucket/cache"
    assert main(["index", str(fixture_repo), "--out", str(tmp_path / "out"), "--no-dense", "--quiet",
                 "--cache", cache]) == 2
    err = capsys.readouterr().err
    assert cache in err and "create the bucket" in err
    assert not (tmp_path / "out").exists()
