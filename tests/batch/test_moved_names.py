"""The retrieval session and the localisation weights moved to `codenib.model` (issue 39
item 4); their old import paths under `codenib.batch` stay and name the same objects."""

from __future__ import annotations

from codenib.model import session, weights, weights_fit


def test_the_old_batch_paths_re_export_the_moved_names():
    from codenib.batch import index_weights as old_index_weights
    from codenib.batch import session as old_session
    from codenib.batch import weights as old_weights

    assert old_session.RetrievalSession is session.RetrievalSession
    assert old_session.llm_reranker is session.llm_reranker
    assert old_session.localise_weights is weights.load_localise_weights
    assert old_weights.load_weights is weights.load_weights
    assert old_weights.default_weights is weights.load_packaged_weights
    assert old_weights.packaged_provenance is weights.load_packaged_provenance
    assert old_index_weights.index_weights is weights.load_index_weights
    assert old_index_weights.fit_into is weights_fit.save_fitted_weights
    assert (old_index_weights.FITTED_PATH, old_index_weights.MANIFEST_KEY) == (weights.FITTED_PATH,
                                                                              weights.MANIFEST_KEY)


def test_the_old_localise_weights_keeps_its_precedence():
    from codenib.batch.session import localise_weights

    given = localise_weights((("f_bm25", 2.0),))
    assert given.values == {"f_bm25": 2.0} and given.source == "given"
    assert localise_weights(None) == weights.load_packaged_weights()
