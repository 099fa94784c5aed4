from tests.batch.conftest import ray_session  # noqa: F401 - the one local Ray of the batch tests
