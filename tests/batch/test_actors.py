"""Engine actors: a warm-up loads ahead of the first search and never raises."""

import numpy as np

from codenib.batch.actors import remote_classes


def test_warm_up_loads_ahead_and_reports_errors_instead_of_raising(ray_session, fixture_index_dir, tmp_path):
    ray = ray_session
    classes = remote_classes()
    sparse = classes["sparse"].options(num_cpus=0.1).remote(2)
    dense = classes["dense"].options(num_cpus=0.1).remote(1, "cpu")
    try:
        good = str(fixture_index_dir)
        assert ray.get(sparse.warm.remote(good, "")) is None
        assert ray.get(dense.warm.remote(good, "")) is None
        missing = ray.get(sparse.warm.remote(str(tmp_path / "no-index"), ""))
        assert missing is not None and "IndexFormatError" in missing
        rows, _ = ray.get(sparse.search.remote(good, "", ["slugify"], 3))
        assert rows.shape == (1, 3) and rows[0, 0] >= 0
        rows, scores = ray.get(dense.search.remote(good, "", ["lowercase text into a slug"], 3))
        assert rows.shape == (1, 3) and np.all(np.diff(scores[0]) <= 0)
    finally:
        ray.kill(sparse)
        ray.kill(dense)
