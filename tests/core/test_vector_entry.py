"""A file's vector entry: names keyed by texts or by bytes, and bytes that decode only to the right shape."""

from __future__ import annotations

import numpy as np

from codenib.core.vector_entry import decode_vectors, encode_vectors, entry_name, exact_entry_name


def test_names_key_the_texts_exactly_and_never_confuse_how_they_split():
    a = entry_name("fp", ["ab", "c"], ["x", "y"])
    assert a == entry_name("fp", ["ab", "c"], ["x", "y"])
    assert a.startswith("vectors/v1/fp/") and a.endswith(".npy")
    assert len({a, entry_name("fp", ["a", "bc"], ["x", "y"]), entry_name("fp", ["ab"], ["c", "x", "y"]),
                entry_name("other", ["ab", "c"], ["x", "y"])}) == 4


def test_bytes_round_trip_and_a_wrong_shape_type_or_damage_decodes_to_none():
    body = np.arange(6, dtype=np.float32).reshape(2, 3)
    name = -body
    raw = encode_vectors(body, name)
    got = decode_vectors(raw, 2, 3)
    assert got is not None and (got[0] == body).all() and (got[1] == name).all()
    assert decode_vectors(raw, 3, 3) is None and decode_vectors(raw, 2, 4) is None
    assert decode_vectors(raw[:-4], 2, 3) is None and decode_vectors(b"not numpy", 2, 3) is None
    assert decode_vectors(encode_vectors(body.astype(np.float64), name.astype(np.float64)), 2, 3) is not None
    import io
    buffer = io.BytesIO()
    np.save(buffer, np.zeros((4, 3), dtype=np.float64))
    assert decode_vectors(buffer.getvalue(), 2, 3) is None


def test_an_exact_name_is_the_digest_of_the_bytes():
    raw = encode_vectors(np.ones((1, 2), dtype=np.float32), np.zeros((1, 2), dtype=np.float32))
    name = exact_entry_name("fp", raw)
    assert name.startswith("vectors/v1/fp/exact/") and name == exact_entry_name("fp", raw)
    assert name != exact_entry_name("fp", raw + b"\0")
