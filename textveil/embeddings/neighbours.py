"""Nearest-vocabulary-word search behind one small interface.

Both indexes answer ``nearest(queries) -> row numbers`` by Euclidean distance. Decoding a noisy
vector to a word is post-processing of the mechanism's output, so it may be exact or
approximate without touching the privacy guarantee (paper 001, Lemma 3): an approximate index
changes utility and speed, never privacy, because it looks only at the noisy vector and the
public vocabulary.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Protocol

import numpy as np

from textveil.errors import InvalidParameterError
from textveil.machine import usable_cpus

class NeighbourIndex(Protocol):
    def nearest(self, queries: np.ndarray) -> np.ndarray:  # pragma: no cover - protocol
        """Row of the nearest vocabulary vector for each query row."""
        ...


class ExactNeighbourIndex:
    """Exact Euclidean nearest neighbour by blocked matrix products, no candidate skipped.

    ``|q - v|^2 = |q|^2 - 2 (q.v - |v|^2 / 2)``, so the nearest row is the arg-max of
    ``q.v - |v|^2 / 2``. The index keeps the vocabulary as ``[v, -|v|^2 / 2]`` (float32, one
    column more) and a query as ``[q, 1]``, so one BLAS product gives the scores themselves: a
    separate pass subtracting the norms cost as much as a fifth of a 50-d search. Tiles of 512
    queries x 16,384 vocabulary rows (32 MiB of scores) are each reduced to their arg-max at
    once; equal scores resolve to the lowest row.

    The products spread over BLAS's own threads (as many as the process gives BLAS:
    ``OMP_NUM_THREADS``, or ``threadpoolctl``): on 2 cores that was 1.1x to
    1.5x faster than splitting tiles of queries over Python threads with BLAS single-threaded,
    most where batches are small (``benchmarks/README.md``, "Exact decoding and low precision").
    A process that sets BLAS to one thread and shares the CPUs out itself (the service) gives
    each search its threads with :func:`decoding_threads`: inside ``decoding_threads(n)`` with
    ``n > 1`` the tiles are split over ``n`` threads, BLAS single-threaded in each.

    >>> index = ExactNeighbourIndex(np.array([[0, 0], [10, 0]], dtype=np.float32))
    >>> index.nearest(np.array([[9, 1], [-1, 2]], dtype=np.float32)).tolist()
    [1, 0]
    """

    def __init__(self, vectors: np.ndarray, *, query_tile: int = 512, vocabulary_tile: int = 16384) -> None:
        vectors = np.asarray(vectors, dtype=np.float32)
        if vectors.ndim != 2 or len(vectors) == 0:
            raise InvalidParameterError("the exact index needs a non-empty 2-D matrix of vectors")
        self.dim = int(vectors.shape[1])
        # Duplicate vectors are searched once, as their first row: equal vectors can score a hair
        # apart in a matrix product, by where their columns fall in the kernel's tiles, and a tie
        # would then be broken by the batch's shape. The first row wins, whatever the batch.
        self._rows = first_occurrence_rows(vectors)
        if len(self._rows) == len(vectors):
            self._rows = None  # no duplicates: the rows are their own
        else:
            vectors = vectors[self._rows]
        self._scored = np.empty((len(vectors), self.dim + 1), dtype=np.float32)
        self._scored[:, : self.dim] = vectors
        self._scored[:, self.dim] = -_half_squared_norms(vectors)
        self._query_tile = max(1, query_tile)
        self._vocabulary_tile = max(1, vocabulary_tile)

    def nearest(self, queries: np.ndarray) -> np.ndarray:
        queries = _check_queries(queries, self.dim)
        out = np.empty(len(queries), dtype=np.int64)
        if len(queries) == 0:
            return out
        extended = np.empty((len(queries), self.dim + 1), dtype=np.float32)
        extended[:, : self.dim] = queries
        extended[:, self.dim] = 1.0
        threads = _DECODING_THREADS.get() or 1  # uncapped: one tile at a time, BLAS's threads in each product
        step = self._query_tile if threads == 1 else max(64, min(self._query_tile, -(-len(queries) // threads)))

        def solve(start: int) -> None:
            out[start : start + step] = self._nearest_tile(extended[start : start + step])

        _run_parallel(solve, range(0, len(queries), step), threads)
        return out if self._rows is None else self._rows[out]

    def _nearest_tile(self, block: np.ndarray) -> np.ndarray:
        scored, tile = self._scored, self._vocabulary_tile
        if len(scored) <= tile:
            return (block @ scored.T).argmax(axis=1)
        best = np.full(len(block), -np.inf, dtype=np.float32)
        rows = np.zeros(len(block), dtype=np.int64)
        everyone = np.arange(len(block))
        for first in range(0, len(scored), tile):
            scores = block @ scored[first : first + tile].T
            top = scores.argmax(axis=1)
            value = scores[everyone, top]
            better = value > best  # strict: an earlier tile keeps a tie (lowest row wins)
            best[better] = value[better]
            rows[better] = first + top[better]
        return rows


class ApproximateNeighbourIndex:
    """Approximate nearest neighbour: an inverted file of k-means lists, scanned with BLAS.

    The vocabulary is clustered by k-means into ``lists`` lists (about 48 vectors each by
    default). A query scores every list centroid, then scans the ``probes`` lists whose
    centroids are nearest, exactly: for each probed list, the queries probing it are gathered
    and scored against its vectors in one matrix product (``q.v - |v|^2 / 2``, which ranks
    like the Euclidean distance), and each query keeps its best word. By default
    ``probes = max(lists / 12, 96)``: about 8% of a 100,000-word vocabulary is scanned per
    query (15% of a 30,000-word one).

    Why not a graph (HNSW) or faiss's own IVF: the noisy vectors the mechanism decodes lie far
    from every vocabulary vector (noise radius ``dim / epsilon``, e.g. 19 at epsilon 20 for
    384-d vectors of norm about 7), where graph search needs to visit a large share of the
    vocabulary to agree with exact decoding, one vector at a time; a scan that touches few
    vectors but reuses each loaded vector for hundreds of queries (BLAS) is several times
    faster than the exact scan at the same agreement (``benchmarks/speed/bench_sanitize.py``: about
    3.5x at 100,000 words, 97% agreement at epsilon 20).

    Vectors that occur several times (an accent-folding tokenizer gives "in" and "în" the
    same vector) are indexed once, under their first row, so ties resolve as in exact
    decoding. Where every list would be probed (a vocabulary of fewer than about
    ``96 * min_list`` distinct vectors by default), the index is a single list: exact. The
    index looks only at the noisy vector and the public vocabulary: approximate decoding is
    post-processing and keeps the privacy guarantee.

    Parameters
    ----------
    vectors:
        ``n x dim`` vocabulary matrix.
    lists, probes:
        Number of k-means lists and of lists scanned per query; defaults as above. More
        probes: closer to exact decoding, slower (``probes >= lists`` is exact).
    iterations, seed:
        k-means iterations and seed (the index, hence the releases, are reproducible).
    threads:
        Worker threads scanning lists in parallel (default: the CPUs this process may use);
        BLAS itself runs single-threaded meanwhile, since its products here are small.

    >>> rng = np.random.default_rng(0)
    >>> vocabulary = rng.standard_normal((5000, 16)).astype(np.float32)
    >>> index = ApproximateNeighbourIndex(vocabulary)
    >>> index.lists, index.probes
    (104, 96)
    >>> queries = vocabulary[:200] + 0.1 * rng.standard_normal((200, 16)).astype(np.float32)
    >>> bool((index.nearest(queries) == np.arange(200)).all())
    True
    >>> small = ApproximateNeighbourIndex(vocabulary[:1000])  # every list would be probed: exact
    >>> small.lists, small.probes
    (1, 1)
    """

    def __init__(
        self,
        vectors: np.ndarray,
        lists: int | None = None,
        probes: int | None = None,
        *,
        iterations: int = 8,
        train_per_list: int = 256,
        seed: int = 1234,
        threads: int | None = None,
        min_list: int = 48,
        block: int = 8192,
    ) -> None:
        matrix = np.ascontiguousarray(vectors, dtype=np.float32)
        if matrix.ndim != 2 or len(matrix) == 0:
            raise InvalidParameterError("the approximate index needs a non-empty 2-D matrix of vectors")
        for name, value in (("lists", lists), ("probes", probes)):
            if value is not None and value < 1:
                raise InvalidParameterError(f"{name} must be at least 1, got {value}")
        rows = first_occurrence_rows(matrix)
        unique = matrix[rows]
        count = len(unique)
        if lists is None:
            lists = count // min_list if count >= 2 * min_list else 1
            lists = min(lists, _MAX_LISTS)
        lists = max(1, min(lists, count))
        if probes is None:
            # recall depends mostly on the number of lists probed: at least 96, and 1/12 of them
            probes = max(-(-lists // 12), 96)
        if probes >= lists:  # every list would be scanned: one list, no k-means, exact
            lists = probes = 1
        self.lists = lists
        self.probes = probes
        self.dim = int(matrix.shape[1])
        self._block = max(1, block)
        self._threads = max(1, threads if threads is not None else usable_cpus())

        if lists == 1:
            centroids = unique.mean(axis=0, keepdims=True)
            assignment = np.zeros(count, dtype=np.int64)
        else:
            import faiss

            kmeans = faiss.Kmeans(
                self.dim, lists, niter=iterations, seed=seed, max_points_per_centroid=train_per_list
            )
            kmeans.train(unique)
            centroids = np.ascontiguousarray(kmeans.centroids, dtype=np.float32)
            _, nearest = kmeans.index.search(unique, 1)
            assignment = nearest[:, 0]
        order = np.argsort(assignment, kind="stable")
        self._vectors = np.ascontiguousarray(unique[order])
        self._rows = rows[order]
        self._half_norms = _half_squared_norms(self._vectors)
        sizes = np.bincount(assignment, minlength=lists)
        self._offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        self._centroids = np.ascontiguousarray(centroids, dtype=np.float32)
        self._centroid_half_norms = _half_squared_norms(self._centroids)

    def nearest(self, queries: np.ndarray) -> np.ndarray:
        queries = _check_queries(queries, self.dim)
        if len(queries) == 0:
            return np.empty(0, dtype=np.int64)
        out = np.empty(len(queries), dtype=np.int64)
        for start in range(0, len(queries), self._block):
            out[start : start + self._block] = self._nearest_block(queries[start : start + self._block])
        return out

    def _nearest_block(self, queries: np.ndarray) -> np.ndarray:
        count, probes, lists = len(queries), self.probes, self.lists
        # 1. the lists to probe: nearest centroids (ranked by q.c - |c|^2/2, like the distance)
        if probes < lists:
            probed = np.empty((count, probes), dtype=np.int64)
            for start in range(0, count, 2048):  # in slices: argpartition returns a full index array
                scores = queries[start : start + 2048] @ self._centroids.T
                scores -= self._centroid_half_norms
                probed[start : start + 2048] = np.argpartition(scores, lists - probes, axis=1)[:, lists - probes :]
        else:
            probed = np.broadcast_to(np.arange(lists), (count, lists))
        # 2. group the (query, probe) pairs by list
        pairs = np.argsort(probed.ravel(), kind="stable")  # pair id = query * probes + slot
        bounds = np.concatenate([[0], np.cumsum(np.bincount(probed.ravel(), minlength=lists))])
        best_score = np.full(count * probes, -np.inf, dtype=np.float32)
        best_item = np.zeros(count * probes, dtype=np.int64)
        work = np.flatnonzero(bounds[1:] > bounds[:-1])

        def scan(chosen: np.ndarray) -> None:
            for lst in chosen:
                pair = pairs[bounds[lst] : bounds[lst + 1]]
                first, last = self._offsets[lst], self._offsets[lst + 1]
                if first == last:
                    continue
                scores = queries[pair // probes] @ self._vectors[first:last].T
                scores -= self._half_norms[first:last]
                top = scores.argmax(axis=1)
                best_score[pair] = scores[np.arange(len(pair)), top]
                best_item[pair] = first + top

        # 3. scan the lists: each pair is written by exactly one list, so workers never collide
        shares = self._threads * 4
        _run_parallel(scan, [work[i::shares] for i in range(shares)], self._threads)
        # 4. each query's best over its probed lists
        slot = best_score.reshape(count, probes).argmax(axis=1)
        item = best_item.reshape(count, probes)[np.arange(count), slot]
        return self._rows[item]


_MAX_LISTS = 4096


def first_occurrence_rows(matrix: np.ndarray) -> np.ndarray:
    """Rows of ``matrix`` that are the first occurrence of their vector, in order.

    >>> first_occurrence_rows(np.array([[1, 2], [3, 4], [1, 2]], dtype=np.float32)).tolist()
    [0, 1]
    """
    first: dict[bytes, int] = {}
    for row, vector in enumerate(matrix):
        first.setdefault(vector.tobytes(), row)
    return np.fromiter(first.values(), dtype=np.int64, count=len(first))


def _half_squared_norms(matrix: np.ndarray) -> np.ndarray:
    return (0.5 * np.einsum("ij,ij->i", matrix, matrix, dtype=np.float64)).astype(np.float32)


def _check_queries(queries: np.ndarray, dim: int) -> np.ndarray:
    queries = np.ascontiguousarray(queries, dtype=np.float32)
    if len(queries) and (queries.ndim != 2 or queries.shape[1] != dim):
        raise InvalidParameterError(f"queries must be an n x {dim} matrix, got shape {queries.shape}")
    return queries


_DECODING_THREADS: ContextVar[int | None] = ContextVar("textveil_decoding_threads", default=None)


@contextmanager
def decoding_threads(count: int) -> Iterator[None]:
    """Searches started in this context (this thread) spread over at most ``count`` threads.

    For a process that runs several releases at once (the service): each gets a share of the
    cores instead of every one spreading over all of them, which made the releases wait on
    each other and their latencies scatter. It caps textveil's own threads; BLAS's thread
    count is process-wide, so such a process sets it once (``textveil serve`` sets one).

    >>> import numpy as np
    >>> index = ExactNeighbourIndex(np.eye(4, dtype=np.float32))
    >>> with decoding_threads(1):
    ...     index.nearest(np.eye(4, dtype=np.float32)).tolist()
    [0, 1, 2, 3]
    """
    if count < 1:
        raise InvalidParameterError(f"decoding threads must be at least 1, got {count}")
    token = _DECODING_THREADS.set(count)
    try:
        yield
    finally:
        _DECODING_THREADS.reset(token)


def _run_parallel(work: Callable[[Any], None], items: Iterable[Any], threads: int) -> None:
    """``work(item)`` for every item, on up to ``threads`` threads (fewer under
    :func:`decoding_threads`), BLAS single-threaded meanwhile."""
    items = list(items)
    cap = _DECODING_THREADS.get()
    threads = threads if cap is None else min(threads, cap)
    if threads == 1 or len(items) < 2:  # one piece of work: let BLAS use its own threads
        for item in items:
            work(item)
        return
    from concurrent.futures import ThreadPoolExecutor

    with _single_threaded_blas(), ThreadPoolExecutor(max_workers=min(threads, len(items))) as pool:
        list(pool.map(work, items))  # re-raises a worker's exception


@contextmanager
def _single_threaded_blas() -> Iterator[None]:
    """BLAS on one thread: the products are small, and threads compete badly for them."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - comes with scikit-learn
        yield
        return
    with threadpool_limits(limits=1, user_api="blas"):
        yield


class CudaExactNeighbourIndex:
    """Exact nearest neighbour on a CUDA GPU with torch: the same arg-max of
    ``q.v - |v|^2 / 2`` as :class:`ExactNeighbourIndex`, in float32 (TF32 switched off, so
    products keep float32 precision), over blocks of queries; equal scores resolve to the
    lowest row, as on the CPU. Chosen by ``TEXTVEIL_DECODE_DEVICE=cuda`` (the CPU remains the
    default: importing torch to look for a GPU would slow every short release). The two
    indexes sum products in different orders, so a query whose two best words lie within
    float32 rounding of each other may decode differently; on anything else they agree.
    """

    def __init__(self, vectors: np.ndarray, *, query_block: int = 4096) -> None:
        import torch

        if not torch.cuda.is_available():
            raise InvalidParameterError("TEXTVEIL_DECODE_DEVICE=cuda, but torch sees no CUDA device; unset it")
        torch.backends.cuda.matmul.allow_tf32 = False
        matrix = np.ascontiguousarray(vectors, dtype=np.float32)
        self.dim = int(matrix.shape[1])
        self._torch = torch
        self._vectors = torch.from_numpy(matrix.copy()).cuda()  # a copy: the vocabulary may be a read-only memory map
        self._half_norms = torch.from_numpy(_half_squared_norms(matrix)).cuda()
        self._block = max(1, query_block)

    def nearest(self, queries: np.ndarray) -> np.ndarray:
        queries = _check_queries(queries, self.dim)
        rows = []
        for start in range(0, len(queries), self._block):
            block = self._torch.from_numpy(queries[start : start + self._block]).cuda()
            scores = block @ self._vectors.T - self._half_norms
            rows.append(self._torch.argmax(scores, dim=1).cpu().numpy())
        return np.concatenate(rows).astype(np.int64) if rows else np.empty(0, dtype=np.int64)
