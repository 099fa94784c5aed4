"""Many indexes per job: the actors' index LRU bounded in bytes, and shard routing by index."""

import json

from codenib.batch.job import AffinityRouter
from codenib.batch.worker import IndexCache, loaded_bytes


def _size(folder, parts=()):
    artifacts = json.loads((folder / "manifest.json").read_text())["artifacts"]
    return sum(a["size"] for n, a in artifacts.items() if not parts or any(n.startswith(p) for p in parts))


def test_the_index_lru_is_bounded_in_bytes(fixture_index_dir, sparse_only_index_dir):
    parts = ("nodes.parquet", "edges.parquet")
    big, small = _size(fixture_index_dir, parts), _size(sparse_only_index_dir, parts)
    assert loaded_bytes(str(fixture_index_dir), parts) == big and big > 0 and small > 0
    loads = []
    cache = IndexCache(lambda p: loads.append(p) or p, max_items=10, max_bytes=big + small - 1, parts=parts)
    cache.get(str(fixture_index_dir))
    cache.get(str(sparse_only_index_dir))        # both would exceed the bound: the older goes
    assert len(cache) == 1 and cache.bytes == small
    cache.get(str(sparse_only_index_dir))
    cache.get(str(fixture_index_dir))
    assert dict(cache.stats) == {"hits": 1, "loads": 3, "evictions": 2, "peak_bytes": big}
    # One index larger than the bound still loads (and stays, alone).
    lone = IndexCache(lambda p: p, max_bytes=1, parts=parts)
    lone.get(str(fixture_index_dir))
    assert len(lone) == 1 and lone.stats["evictions"] == 0


def test_shards_go_to_the_worker_that_holds_their_index():
    route = AffinityRouter(2)
    pending = ["a", "a", "a", "b", "b", "c"]

    def take():
        at, w = route.assign(pending)
        return pending.pop(at), w

    assert take() == ("a", 0)
    assert take() == ("b", 1)                     # worker 1 holds nothing: an index nobody holds
    assert take() == ("a", 0)                     # worker 0 holds "a"
    assert take() == ("b", 1)
    route.done(1)
    route.done(1)
    assert take() == ("c", 1)                     # "b" is done, "c" is held by nobody
    route.done(0)
    assert take() == ("a", 0)
    assert pending == []
