"""Inside a submitted job, `python -m codenib.commands.submission COMMAND ARGS...` runs `codenib
COMMAND ARGS...` joined to the cluster the job runs on; it is for commands that have no
--address option of their own (jobs/demo.toml uses it for `codenib demo`).

Above the command line (`cli`); the planning of a submission (`codenib submit`) is
`codenib.commands.submission_plan`, below it.
"""

from __future__ import annotations

import os
import sys

from codenib.commands.submission_plan import JOB_ADDRESS


def main_in_job(argv: list[str] | None = None) -> int:
    """`codenib ARGS` inside a submitted job, joined to the job's cluster (Ray sets RAY_ADDRESS
    for a job's driver), so the batch job runs there rather than on a second, embedded Ray."""
    import ray

    from codenib.commands.cli import main

    joined = False
    if os.environ.get("RAY_ADDRESS") and not ray.is_initialized():
        ray.init(address=JOB_ADDRESS, log_to_driver=False, configure_logging=False)
        joined = True
    try:
        return main(argv)
    finally:
        if joined:
            ray.shutdown()


if __name__ == "__main__":  # pragma: no cover - exercised inside submitted jobs
    sys.exit(main_in_job(sys.argv[1:]))
