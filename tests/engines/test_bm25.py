"""codenib.engines.bm25: bm25s is imported without starting JAX on a GPU."""

import os
import subprocess
import sys

import pytest

PROBE = ("import os; from codenib.engines.bm25 import import_bm25s; m = import_bm25s(); "
         "print(m.__name__, os.environ.get('JAX_PLATFORMS'))")


def _probe(env_platforms: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if k != "JAX_PLATFORMS"}
    if env_platforms is not None:
        env["JAX_PLATFORMS"] = env_platforms
    done = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_jax_is_pinned_to_the_cpu_before_bm25s_imports():
    assert _probe(None) == "bm25s cpu"


@pytest.mark.parametrize("chosen", ["cuda", "cpu,cuda"])
def test_a_platform_the_user_chose_is_kept(chosen):
    assert _probe(chosen) == f"bm25s {chosen}"
