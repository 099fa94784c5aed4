import pytest

# Object-storage tests talk to a moto S3 server on 127.0.0.1 (tests/batch/s3.py; the fixture
# `s3_endpoint` and the dummy credentials are tests/conftest.py's, shared with tests/compiler).


@pytest.fixture(scope="session")
def ray_session():
    """One real local Ray for the batch tests (2 CPUs, no dashboard)."""
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, ignore_reinit_error=True,
             _node_ip_address="127.0.0.1",
             configure_logging=False)
    yield ray
    ray.shutdown()


def write_queries(path, rows):
    import pyarrow as pa
    import pyarrow.parquet as pq

    keys = sorted({k for r in rows for k in r})
    pq.write_table(pa.table({k: [r.get(k) for r in rows] for k in keys}), path)
    return path


QUERIES = [
    {"qid": "q1", "query": "where is run_engine defined"},
    {"qid": "q2", "query": "who calls Engine.prepare?"},
    {"qid": "q3", "query": "what does Engine.start call?"},
    {"qid": "q4", "query": "Turn the given text into a lowercase slug."},
    {"qid": "q5", "query": "Store an item"},
    {"qid": "q6", "query": "helper"},
    {"qid": "q7", "query": "callers of slugify"},
]
