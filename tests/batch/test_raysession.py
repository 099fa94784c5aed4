"""Joining a Ray cluster (`codenib.batch.raysession`): an address nothing answers at is bad input."""

from __future__ import annotations

import socket

import pytest

from codenib.batch.raysession import check_address
from codenib.core.errors import BadInputError


def _closed_port() -> int:
    with socket.create_server(("127.0.0.1", 0)) as server:
        return server.getsockname()[1]


def test_an_address_nothing_listens_at_is_refused_at_once():
    port = _closed_port()
    for address in (f"127.0.0.1:{port}", f"ray://127.0.0.1:{port}"):
        with pytest.raises(BadInputError, match=f"no Ray cluster answers at --address {address}"):
            check_address(address)


def test_a_listening_address_and_rays_own_lookups_pass():
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        check_address(f"127.0.0.1:{port}")
        check_address(f"ray://127.0.0.1:{port}")
        check_address(f"ray://127.0.0.1:{port}/ignored")
    check_address("auto")      # Ray finds the local cluster itself (and says so when there is none)
    check_address("local")
    check_address("anyscale://some-cluster")     # another package's Ray Client builder: Ray's to resolve


@pytest.mark.parametrize("address", ["nonsense", "127.0.0.1", ":6379", "127.0.0.1:port", "127.0.0.1:0",
                                     "127.0.0.1:99999999999999999999"])
def test_a_malformed_address_names_the_forms_ray_takes(address):
    with pytest.raises(BadInputError, match="is not a Ray cluster address.*HOST:PORT"):
        check_address(address)
