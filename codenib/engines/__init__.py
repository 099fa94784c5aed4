"""Engines: the encoder backends, vector search, the BM25 kernel and module-name helpers.

What both the index and the compiler layers use. Engines know nothing about nodes,
plans or artifacts, and import only core modules (`codenib.core.errors`, ...).
"""
