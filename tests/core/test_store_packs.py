"""`pack_store`: a local store's loose entries moved into packs, read back the same by every reader."""

from __future__ import annotations

import gzip
import json

from codenib.core import store_packs
from codenib.core.store_backend import LocalBackend
from codenib.core.store_packs import PACKS_DIR, pack_store

ENTRIES = {f"v3/{i:02x}/{i:064x}.json.gz": bytes([i]) * (100 + i) for i in range(12)}


def _store(root):
    backend = LocalBackend(root)
    for name, data in ENTRIES.items():
        backend.write(name, data)
    return backend


def test_packed_entries_read_back_the_same_and_the_loose_files_go(tmp_path, monkeypatch):
    monkeypatch.setattr(store_packs, "PACK_BYTES", 500)     # several packs
    early = _store(tmp_path / "s")
    assert early.read("v3/00/" + "0" * 64 + ".json.gz") == ENTRIES["v3/00/" + "0" * 64 + ".json.gz"]
    said: list[str] = []
    assert pack_store(tmp_path / "s", said.append) == (12, sum(len(d) for d in ENTRIES.values()))
    assert "12 entries" in said[0]
    assert not [p for p in (tmp_path / "s").rglob("*.json.gz")]
    packs = sorted(p.name for p in (tmp_path / "s" / PACKS_DIR).iterdir())
    assert len(packs) >= 4 and len(packs) % 2 == 0 and not [p for p in packs if p.startswith(".")]
    # A backend opened before the packs existed finds them; so does a fresh one.
    for backend in (early, LocalBackend(tmp_path / "s")):
        assert all(backend.read(n) == d and backend.has(n) for n, d in ENTRIES.items())
        assert backend.read("v3/ff/" + "f" * 64 + ".json.gz") is None
    # A packed entry is not written loose again; a new one is, and a second pack takes only it.
    fresh = LocalBackend(tmp_path / "s")
    name = next(iter(ENTRIES))
    fresh.write(name, ENTRIES[name])
    assert not (tmp_path / "s" / name).exists()
    fresh.write("v3/aa/new.json.gz", b"new")
    assert pack_store(tmp_path / "s") == (1, 3)
    assert LocalBackend(tmp_path / "s").read("v3/aa/new.json.gz") == b"new"


def test_a_loose_copy_of_a_packed_entry_is_removed_and_a_damaged_index_is_a_miss(tmp_path):
    _store(tmp_path / "s")
    pack_store(tmp_path / "s")
    name = next(iter(ENTRIES))
    (tmp_path / "s" / name).write_bytes(ENTRIES[name])      # left by a packer killed before its unlinks
    (tmp_path / "s" / "v3" / ".x.json.gz.123-ab.tmp").write_bytes(b"half")   # a writer's temporary file
    assert pack_store(tmp_path / "s") == (0, 0)
    assert not (tmp_path / "s" / name).exists() and (tmp_path / "s" / "v3" / ".x.json.gz.123-ab.tmp").exists()
    index = next((tmp_path / "s" / PACKS_DIR).glob("*.idx"))
    assert set(json.loads(gzip.decompress(index.read_bytes()))) == set(ENTRIES)
    index.write_bytes(b"not gzip")
    assert LocalBackend(tmp_path / "s").read(name) is None
