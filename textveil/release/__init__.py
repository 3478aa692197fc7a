"""Releases as jobs: a release that keeps its books in a budget ledger, a corpus of any size
released into shards (streaming, resumable, on Dask), and the one summary of a set of releases
that every face renders (:mod:`textveil.release.summary`)."""
