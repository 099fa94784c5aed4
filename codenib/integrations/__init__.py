"""Adapters for the tools people already evaluate and run retrieval in (Ray Data, PyTerrier)."""
