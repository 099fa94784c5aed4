"""Actors that no node can take fail the job at once, naming the missing resource."""

import time

import pytest

from codenib.batch.driver import RunOptions, run_job
from codenib.batch.placement import check_placeable
from codenib.core.errors import BadInputError
from tests.batch.conftest import QUERIES, write_queries

NODES = [{"CPU": 1.0, "node_a": 1.0, "retrieval": 8.0, "node:127.0.0.1": 1.0, "memory": 1e9},
         {"CPU": 4.0, "node_b": 1.0, "GPU": 1.0}]


def test_a_resource_no_node_has_is_named():
    check_placeable(NODES, {"CPU": 0.5, "retrieval": 1}, {"CPU": 0.5, "GPU": 0.5})   # fits: no error
    with pytest.raises(BadInputError, match="no node of the cluster has resource 'gpu_box'") as exc:
        check_placeable(NODES, {"CPU": 0.5, "gpu_box": 1}, None)
    assert "node_a" in str(exc.value) and "node:" not in str(exc.value) and "memory" not in str(exc.value)
    with pytest.raises(BadInputError, match="too much|together|'CPU'"):
        check_placeable(NODES, {"CPU": 8}, None)
    # Each exists, never both on one node.
    with pytest.raises(BadInputError, match="together"):
        check_placeable(NODES, {"CPU": 0.5, "retrieval": 1, "node_b": 1}, None)


def test_bad_actor_resources_are_bad_input():
    for bad in ("retrieval", "retrieval=0", "=1", "CPU=2", "x=abc"):
        with pytest.raises(BadInputError, match="--actor-resources"):
            RunOptions(queries="q", out="o", index="i", actor_resources=bad).validate()
    assert RunOptions(queries="q", out="o", index="i", actor_resources="a=1, b=0.5").resources() == {"a": 1.0, "b": 0.5}


def test_device_cuda_on_a_cluster_without_gpus_exits_2_naming_gpu(ray_session, fixture_index_dir, tmp_path):
    if ray_session.cluster_resources().get("GPU"):
        pytest.skip("this machine's Ray has a GPU")
    qpath = write_queries(tmp_path / "q.parquet", QUERIES)
    t0 = time.time()
    with pytest.raises(BadInputError, match="resource 'GPU'"):
        run_job(RunOptions(queries=str(qpath), index=str(fixture_index_dir), out=str(tmp_path / "out"), mode="dense",
                           device="cuda", local_below=0, progress=False), log=lambda m: None)
    assert time.time() - t0 < 60
    assert not (tmp_path / "out").exists()   # the folder the job created is gone again
