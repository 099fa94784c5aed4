"""Which column of a row file holds a column CodeNib reads: its own name, SWE-bench's, a fallback."""

from codenib.core.rows import column_of


def test_a_column_is_found_by_its_name_then_swe_benchs_then_its_fallback():
    assert column_of({"index", "instance_id", "qid"}, "index") == "index"
    assert column_of({"instance_id", "qid"}, "index") == "instance_id"
    # A dev set's instances.parquet (qid, repo, base_commit): each snapshot named by its query.
    assert column_of({"qid", "repo", "base_commit"}, "index") == "qid"
    assert column_of({"qid", "repo", "base_commit"}, "rev") == "base_commit"
    assert column_of({"repo"}, "index") is None
    assert column_of({"query"}, "qid") is None
