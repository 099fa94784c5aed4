"""CodeNib: retrieve the code that answers a question about a repository, in bulk."""

__version__ = "0.1.0"
