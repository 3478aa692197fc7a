"""Releases as jobs: a release that keeps its books in a budget ledger (and, later, streaming
releases of corpora of any size)."""
