"""Exact nearest-word decoding that skips most of the arithmetic, with a proof that it skips
nothing the exact search could pick.

Decoding finds, for a noisy vector ``q``, the vocabulary row ``v`` that maximises
``S(v) = q.v - |v|^2 / 2`` (the nearest row). Centre the vocabulary on its mean ``m`` and
rotate it onto its principal axes ``R`` (float64, orthogonal): with ``w_v = (v - m) R``,
``q' = (q - m) R`` and ``g_v = |v|^2 / 2 - m.(v - m)``, ``S(v) = q'.w_v - g_v + q.m`` exactly,
and ``q.m`` is the same for every row, so the nearest row maximises ``T(v) = q'.w_v - g_v``.

The screen computes only the first ``k`` coordinates of each product, in float32:
``G(v) = q'[:k].w_v[:k] - g_v``. The rest is bounded by Cauchy-Schwarz,
``|q'[k:].w_v[k:]| <= |q'[k:]| |w_v[k:]|``, and every rounding of the float32 arithmetic by
the standard bound ``gamma_n = n u / (1 - n u)`` (Higham, *Accuracy and Stability of Numerical
Algorithms*, 3.1) with ``u = 2^-24``, doubled for safety. So, for every row,
``G(v) - a b_v - e_v <= T(v) <= G(v) + a b_v + e_v`` with ``a = |q'[k:]|``, ``b_v = |w_v[k:]|``
and ``e_v`` the rounding bound. A row whose upper bound is below the exact score of some
other row cannot be the nearest: the screen drops it, and re-ranks the rows left (a few
dozen) exactly, in float64 over the original float32 vectors, the lowest row winning a tie
as in :class:`~textveil.embeddings.neighbours.ExactNeighbourIndex`.

Why this is faster: the vocabulary's principal axes hold most of its variance (for the
default 384-d embeddings, about 95% in the first 256), so the screen does ``(k + 1) / d`` of
the matrix products of a full search, and the bound leaves few rows to re-rank. ``k`` is
chosen per batch of queries: the noise's size (the epsilon) decides how many rows a bound
leaves, so a probe of the batch's first queries measures the cost of each ``k`` on a grid and
the cheapest is used.

Decoding is post-processing of the noisy vector with the public vocabulary only, so how the
search is done never touches the privacy guarantee; this index also gives the very words of
the exact search.
"""

from __future__ import annotations

import numpy as np

from textveil.embeddings.neighbours import ExactNeighbourIndex, _check_queries, _run_parallel
from textveil.errors import InvalidParameterError
from textveil.machine import usable_cpus

_UNIT = 2.0**-24  # float32 unit roundoff
_PROBE = 32  # queries a batch's choice of k is measured on
# Measured on a 2-core AMD EPYC (Zen 1) with OpenBLAS: re-ranking one row costs about as much as
# screening 90 x dim coordinates with BLAS (a gather and a float64 product per row), and the
# screen's passes over its scores (the arg-max, the tests, the rotation) about 30% of a full
# search's products: end to end at epsilon 20, k = 336 of 384 ran at 0.80x the plain search.
_RERANK_COST = 90.0  # per row re-ranked, in units of dim screened coordinates
_SCAN_COST = 0.3  # per vocabulary row, in units of dim screened coordinates


def _gamma(terms: int) -> float:
    """Higham's ``gamma_n``: a float32 sum of ``n`` products errs by at most ``gamma_n`` times
    the sum of their magnitudes, whatever the order of summation (doubled for safety)."""
    nu = terms * _UNIT
    return 2.0 * nu / (1.0 - nu)


class ScreenedNeighbourIndex:
    """Exact Euclidean nearest neighbour: a float32 screen over the vocabulary's first ``k``
    principal coordinates with a proven error bound, then exact re-ranking of the rows the
    bound cannot rule out: the true nearest row (lowest on a tie), as
    :class:`~textveil.embeddings.neighbours.ExactNeighbourIndex` finds it but for two rows within
    float32 rounding of each other, where the float64 re-ranking decides. A batch the screen
    would not pay for goes to that plain search.

    Parameters
    ----------
    vectors:
        ``n x dim`` vocabulary matrix.
    dims:
        Screen this many principal coordinates always; default: chosen per batch from a grid
        (``dim/2`` to ``dim``) by measuring the cost on the batch's first queries.
    threads:
        Worker threads over tiles of queries (BLAS single-threaded in each).

    >>> rng = np.random.default_rng(0)
    >>> vocabulary = rng.standard_normal((3000, 32)).astype(np.float32) * np.linspace(3, 0.1, 32).astype(np.float32)
    >>> index = ScreenedNeighbourIndex(vocabulary)
    >>> queries = vocabulary[:300] + 0.5 * rng.standard_normal((300, 32)).astype(np.float32)
    >>> from textveil.embeddings.neighbours import ExactNeighbourIndex
    >>> bool((index.nearest(queries) == ExactNeighbourIndex(vocabulary).nearest(queries)).all())
    True
    """

    def __init__(self, vectors: np.ndarray, *, dims: int | None = None, threads: int | None = None,
                 query_tile: int = 256, vocabulary_tile: int = 4096) -> None:
        original = np.ascontiguousarray(vectors, dtype=np.float32)
        if original.ndim != 2 or len(original) == 0:
            raise InvalidParameterError("the screened index needs a non-empty 2-D matrix of vectors")
        count, dim = original.shape
        self.dim = int(dim)
        if dims is not None and not 1 <= dims <= dim:
            raise InvalidParameterError(f"dims must be between 1 and {dim}, got {dims}")
        self._fixed = dims
        self._threads = max(1, threads if threads is not None else usable_cpus())
        self._query_tile = max(1, query_tile)

        exact = original.astype(np.float64)
        self._mean = exact.mean(axis=0)
        centred = exact - self._mean
        eigenvalues, axes = np.linalg.eigh(centred.T @ centred)
        self._axes = np.ascontiguousarray(axes[:, np.argsort(eigenvalues)[::-1]])
        rotated = centred @ self._axes
        offsets = 0.5 * np.einsum("ij,ij->i", exact, exact) - centred @ self._mean
        # tails[j, v] = |w_v[k_j:]|: the residual norms for every k of the grid
        self.grid = sorted({k for k in (dim // 2, 5 * dim // 8, 3 * dim // 4, 13 * dim // 16, 7 * dim // 8) if 1 <= k < dim})
        squares = np.cumsum((rotated**2)[:, ::-1], axis=1)[:, ::-1]  # squares[v, k] = |w_v[k:]|^2
        self._tails = {k: np.sqrt(squares[:, k]) if k < dim else np.zeros(count) for k in self.grid}
        if dims is not None and dims not in self._tails:
            self._tails[dims] = np.sqrt(squares[:, dims]) if dims < dim else np.zeros(count)
        # Rows in the order of their residual at 3/4 of the dimensions: a tile of similar rows
        # has a tight largest residual, which the coarse test of the screen uses.
        default = self.grid[min(2, len(self.grid) - 1)] if self.grid else dim
        self._order = (np.argsort(self._tails[default], kind="stable") if default in self._tails
                       else np.arange(count))
        order = self._order
        # The screen's matrix: [g_v, w_v] in float32, rows in screen order; a query is [-1, q'].
        self._screen = np.ascontiguousarray(np.concatenate([offsets[order, None], rotated[order]], axis=1),
                                            dtype=np.float32)
        self._offsets = offsets[order]
        self._spread = np.sqrt(np.einsum("ij,ij->i", centred, centred))[order] * (1 + 1e-12)
        self._original = original  # re-ranking reads the vectors exactly as the exact search does
        self._half_norms = 0.5 * np.einsum("ij,ij->i", exact, exact)
        self._tile_starts = np.arange(0, count, max(1, vocabulary_tile))
        self._tile_stops = np.append(self._tile_starts[1:], count)
        self._tile_tails = {k: np.maximum.reduceat(tails[order], self._tile_starts) * (1 + 1e-12)
                            for k, tails in self._tails.items()}
        self._largest_spread = float(self._spread.max())
        self._largest_offset = float(np.abs(self._offsets).max())
        # Where no k of the grid pays for its re-ranking (large noise: small epsilon), the batch
        # goes to the plain exact search: k == dim stands for it.
        self._plain = ExactNeighbourIndex(original)
        self._k = dims if dims is not None else default
        self.last_dims = self._k
        """The number of coordinates the last batch screened."""
        self.last_candidates = 0.0
        """The mean number of rows per query the last batch re-ranked."""

    def nearest(self, queries: np.ndarray) -> np.ndarray:
        queries = _check_queries(queries, self.dim)
        out = np.empty(len(queries), dtype=np.int64)
        if len(queries) == 0:
            return out
        if self._fixed is None and len(queries) >= 4 * _PROBE:
            self._k = self._cheapest_dims(queries[:_PROBE], (queries[:_PROBE] - self._mean) @ self._axes)
        k = self._k
        if k == self.dim:  # the screen would not pay: no rotation, no re-ranking
            self.last_dims, self.last_candidates = k, 1.0
            return self._plain.nearest(queries)
        centred = queries.astype(np.float64) - self._mean
        rotated = centred @ self._axes
        reranked: list[int] = []
        step = max(32, min(self._query_tile, -(-len(queries) // self._threads)))

        def solve(start: int) -> None:
            stop = min(start + step, len(queries))
            rows, candidates = self._solve(queries[start:stop], rotated[start:stop], centred[start:stop], k)
            out[start:stop] = rows
            reranked.append(candidates)

        _run_parallel(solve, range(0, len(queries), step), self._threads)
        self.last_dims, self.last_candidates = k, sum(reranked) / len(queries)
        return out

    # -- one tile of queries -------------------------------------------------------------

    def _solve(self, queries: np.ndarray, rotated: np.ndarray, centred: np.ndarray, k: int) -> tuple[np.ndarray, int]:
        count = len(queries)
        screen_queries = np.empty((count, k + 1), dtype=np.float32)
        screen_queries[:, 0] = -1.0
        screen_queries[:, 1:] = rotated[:, :k]
        scores = screen_queries @ self._screen[:, : k + 1].T  # G(v), float32
        residual = np.sqrt(np.einsum("ij,ij->i", rotated[:, k:], rotated[:, k:])) * (1 + 1e-12)  # a
        # Rounding: the float32 rotation and screen, bounded over every row at once.
        rounding = self._rounding(k, np.sqrt(np.einsum("ij,ij->i", centred, centred)))
        # A lower bound on the best T: the exact T of the row the screen ranks first (S - q.m).
        first = self._order[scores.argmax(axis=1)]
        floor = self._exact_scores(queries, np.arange(count), first) - queries.astype(np.float64) @ self._mean
        # Coarse test per tile (its largest residual), then the exact test per row: a row stays
        # if G(v) + a b_v + rounding >= floor, i.e. if it could score at least the floor's row.
        tails = self._tile_tails[k]
        query_rows, rows = [], []
        for tile, (start, stop) in enumerate(zip(self._tile_starts, self._tile_stops)):
            threshold = floor - residual * tails[tile] - rounding
            # compared in float32: one step down after rounding, so the threshold never rises
            threshold32 = np.nextafter(threshold.astype(np.float32), np.float32(-np.inf))
            q_index, v_index = np.nonzero(scores[:, start:stop] >= threshold32[:, None])
            query_rows.append(q_index)
            rows.append(v_index + start)
        q_index = np.concatenate(query_rows)
        v_index = np.concatenate(rows)
        row = self._order[v_index]
        upper = scores[q_index, v_index] + residual[q_index] * self._tails[k][row] + rounding[q_index]
        keep = upper >= floor[q_index]
        q_index, row = q_index[keep], row[keep]
        # Exact re-ranking over the original vectors; sorted by row, so the lowest row wins a tie.
        by_row = np.lexsort((row, q_index))
        q_index, row = q_index[by_row], row[by_row]
        exact = self._exact_scores(queries, q_index, row)
        best = np.full(count, -np.inf)
        np.maximum.at(best, q_index, exact)
        winners = np.flatnonzero(exact == best[q_index])
        _, first_winner = np.unique(q_index[winners], return_index=True)
        return row[winners[first_winner]], len(q_index)

    def _exact_scores(self, queries: np.ndarray, q_index: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """``q.v - |v|^2 / 2`` in float64 over the float32 inputs (each product exact)."""
        scores = np.empty(len(rows))
        for start in range(0, len(rows), 8192):  # in slices: bounded temporary memory
            part = slice(start, start + 8192)
            scores[part] = np.einsum("ij,ij->i", queries[q_index[part]].astype(np.float64),
                                     self._original[rows[part]].astype(np.float64))
        return scores - self._half_norms[rows]

    def _rounding(self, k: int, query_spread: np.ndarray) -> np.ndarray:
        """A bound, per query, on |computed G(v) - exact (q'[:k].w_v[:k] - g_v)| plus the
        rotation's rounding, over every row: the float32 rotation of the query and of each row
        (``u`` relative each) and the float32 sum of ``k + 1`` products (``gamma_{k+1}``)."""
        products = query_spread * self._largest_spread
        return (_gamma(k + 1) + 8 * _UNIT) * (2 * products + self._largest_offset)

    def _cheapest_dims(self, queries: np.ndarray, rotated: np.ndarray) -> int:
        """The k of the grid with the least work on these queries: ``(k + 1)`` coordinates per
        row screened, plus the rows the bound leaves to re-rank."""
        full = rotated.astype(np.float32) @ self._screen[:, 1:].T - self._offsets.astype(np.float32)
        best = full.max(axis=1).astype(np.float64)
        count = len(self._offsets)
        costs = {self.dim: float(self.dim * count)}  # the plain exact search
        for k in self.grid:
            partial = rotated[:, :k].astype(np.float32) @ self._screen[:, 1 : k + 1].T - self._offsets.astype(np.float32)
            residual = np.sqrt(np.einsum("ij,ij->i", rotated[:, k:], rotated[:, k:]))
            tails = self._tails[k][self._order]
            left = (partial + residual[:, None] * tails[None, :] >= best[:, None]).sum(axis=1).mean()
            costs[k] = (k + 1 + _SCAN_COST * self.dim) * count + _RERANK_COST * self.dim * left
        return min(costs, key=costs.__getitem__)
