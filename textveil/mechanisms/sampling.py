"""The random samplers every mechanism shares; the only place randomness is drawn.

Randomness comes from one ``numpy.random.Generator`` per mechanism: seeded from OS entropy
unless the caller passes a seed (for reproducible runs).

A language model's logits may be a NumPy array or a torch tensor left on a GPU by the engine: the
mechanisms hand them to one function per draw (:func:`sample_clipped_exponential_logits`,
:func:`sample_exponential_mechanism_logits`), which draws them where they are, so a mechanism
never looks at where its logits live. The scores those draws rate tokens by are
:mod:`textveil.mechanisms.scores`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from textveil.errors import InvalidParameterError
from textveil.mechanisms.scores import clipped_logit_scores
from textveil.models.device import is_torch_tensor, on_accelerator
from textveil.privacy.parameters import check_epsilon

SEED_BOUND = 2**63
"""A child generator (:func:`child_generator`) is seeded from its parent's stream with an integer below this."""


def make_rng(seed: int | np.random.Generator | None = None) -> np.random.Generator:
    """A generator: ``seed=None`` draws fresh OS entropy; an int gives a reproducible stream."""
    if isinstance(seed, np.random.Generator):
        return seed
    if seed is not None and (not isinstance(seed, (int, np.integer)) or isinstance(seed, bool) or seed < 0):
        raise InvalidParameterError(f"seed must be a non-negative integer, got {seed!r}")
    return np.random.default_rng(seed)


def child_generator(parent: np.random.Generator) -> np.random.Generator:
    """A generator of its own, seeded from ``parent``'s stream: children drawn in order (a text's
    stream from its mechanism's, a unit's from its text's) depend on their place, never on the
    batch they are used in.

    >>> first, second = make_rng(0), make_rng(0)
    >>> child_generator(first).random() == child_generator(second).random()
    True
    """
    return make_rng(int(parent.integers(0, SEED_BOUND)))


def sample_unit_directions(count: int, dim: int, rng: np.random.Generator) -> np.ndarray:
    """``count`` directions uniform on the unit sphere in ``dim`` dimensions (float64).

    A standard normal vector divided by its length is uniform on the sphere (Muller 1959,
    the construction paper 001 cites).
    """
    directions = rng.standard_normal((count, dim))
    norms = np.linalg.norm(directions, axis=1, keepdims=True)
    # A zero vector has probability zero; guard anyway so no NaN can leak into a release.
    while np.any(norms == 0):
        bad = norms[:, 0] == 0
        directions[bad] = rng.standard_normal((int(bad.sum()), dim))
        norms = np.linalg.norm(directions, axis=1, keepdims=True)
    return directions / norms


def sample_laplace_noise(
    count: int,
    dim: int,
    epsilon: float,
    rng: np.random.Generator,
    direction_rng: np.random.Generator | None = None,
) -> np.ndarray:
    """``count`` draws of n-dimensional Laplace noise with density proportional to exp(-epsilon |x|).

    Paper 001, Theorem 2 / Algorithm 1: radius ~ Gamma(shape n, scale 1/epsilon), direction
    uniform on the sphere, independently. Adding it to a vector gives epsilon * Euclidean
    distance privacy. With a separate ``direction_rng`` the radii and the directions come
    from two streams, so drawing noise for 10 + 20 vectors gives the same numbers as drawing
    it for 30 at once (releases do not depend on how documents are batched).

    >>> noise = sample_laplace_noise(1000, 3, 2.0, make_rng(0))
    >>> noise.shape, round(float(np.linalg.norm(noise, axis=1).mean()), 1)  # mean radius n/epsilon
    ((1000, 3), 1.5)
    """
    epsilon = check_epsilon(epsilon)
    if dim < 1:
        raise InvalidParameterError(f"the dimension must be at least 1, got {dim}")
    radii = rng.gamma(shape=dim, scale=1.0 / epsilon, size=count)
    directions = sample_unit_directions(count, dim, direction_rng if direction_rng is not None else rng)
    return directions * radii[:, None]


# The exponential mechanism (McSherry and Talwar 2007): choose one of V candidates with
# Pr[w] proportional to exp(epsilon * score(x, w) / (2 * sensitivity)).

BLOCK_ENTRIES = 4_000_000  # at most this many weights (32 MB) of a 2-D draw held at once


def _check_count(value: object, name: str, minimum: int = 0) -> int:
    """``value`` as an int >= ``minimum``, or a one-line error naming ``name``."""
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < minimum:
        raise InvalidParameterError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def _shifted_exponents(scores: object, epsilon: float, sensitivity: float) -> np.ndarray:
    """epsilon * score / (2 * sensitivity), shifted so each row's largest entry is exactly 0."""
    epsilon = check_epsilon(epsilon)
    sensitivity = check_epsilon(sensitivity, name="sensitivity")
    try:
        values = np.asarray(scores, dtype=np.float64)
    except (TypeError, ValueError):
        raise InvalidParameterError("scores must be a numeric array of shape (V,) or (batch, V)") from None
    if values.ndim not in (1, 2) or values.shape[-1] == 0:
        raise InvalidParameterError(f"scores must have shape (V,) or (batch, V) with V >= 1, got shape {values.shape}")
    if not np.all(np.isfinite(values)):
        raise InvalidParameterError("scores must all be finite; replace NaN or infinite ratings before sampling")
    if values.shape[0] == 0:
        return values
    # Shifting by the row maximum before scaling keeps every exponent <= 0 (no overflow in exp,
    # whatever epsilon * score is); capping the scale avoids inf * 0 = NaN at the maximum, and
    # the floor keeps exponents finite when an overflowing gap would make them -inf.
    scale = min(epsilon / 2.0 / sensitivity, float(np.finfo(np.float64).max))
    with np.errstate(over="ignore"):
        shifted = (values - values.max(axis=-1, keepdims=True)) * scale
    return np.maximum(shifted, np.finfo(np.float64).min)


def exponential_mechanism_log_probabilities(scores: object, epsilon: float, sensitivity: float = 1.0) -> np.ndarray:
    """log Pr[w] = epsilon * score(w) / (2 * sensitivity) - log sum_v exp(epsilon * score(v) / (2 * sensitivity)).

    ``scores`` is (V,) or (batch, V) of finite ratings, higher meaning more likely; the
    result has the same shape, each row normalised over the last axis. ``sensitivity`` is
    Delta = max over w of |score(x, w) - score(x', w)| for ANY two inputs x, x'; the factor
    2 is what makes the mechanism epsilon-DP for such x, x' (one Delta/2 from the numerator,
    one from the normaliser). Stable for V of 10^5 and more and for huge epsilon * score:
    finite for finite input (exponents below the float range are floored, not -inf).

    >>> lp = exponential_mechanism_log_probabilities([0.0, 1.0], epsilon=2.0)
    >>> np.round(np.exp(lp), 4), round(float(lp[1] - lp[0]), 6)  # log ratio epsilon * 1 / 2
    (array([0.2689, 0.7311]), 1.0)
    """
    shifted = _shifted_exponents(scores, epsilon, sensitivity)
    # After the shift each row holds an exact 0, so the sum lies in [1, V]: its log is safe.
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def exponential_mechanism_probabilities(scores: object, epsilon: float, sensitivity: float = 1.0) -> np.ndarray:
    """exp of :func:`exponential_mechanism_log_probabilities`: each row sums to 1.

    >>> exponential_mechanism_probabilities([[3.0, 3.0], [0.0, 1e9]], epsilon=1.0)
    array([[0.5, 0.5],
           [0. , 1. ]])
    """
    return np.exp(exponential_mechanism_log_probabilities(scores, epsilon, sensitivity))


def sample_exponential_mechanism(
    scores: object,
    epsilon: float,
    rng: np.random.Generator,
    sensitivity: float = 1.0,
    size: int | None = None,
    *,
    block_rows: int | None = None,
) -> np.ndarray:
    """Indices drawn by the exponential mechanism (int64); epsilon-DP, see the log-probabilities.

    Shapes: 1-D scores (V,) give a 0-d array for ``size=None`` (``int(result)`` is the index)
    and an (n,) array of n independent draws for ``size=n``, by inverse CDF (O(V + n log V)).
    2-D scores (batch, V) give a (batch,) array, one draw per row, also by inverse CDF: one
    uniform per row against the row's cumulative weights (cheaper than a Gumbel per entry, which
    matters for a generator that draws 10^5 tokens from 10^4 candidates each). Rows are
    processed ``block_rows`` at a time (default: about BLOCK_ENTRIES weights per block); the
    uniforms come from ``rng`` in row order, one stream, so for a given seed the result and the
    generator's state afterwards do not depend on the block size.

    >>> sample_exponential_mechanism([0.0, 1.0, 50.0], 1.0, make_rng(0), size=4)
    array([2, 2, 2, 2])
    >>> sample_exponential_mechanism([[0.0, 1e6], [1e6, 0.0]], 1.0, make_rng(0))
    array([1, 0])
    """
    shifted = _shifted_exponents(scores, epsilon, sensitivity)
    if size is not None:
        size = _check_count(size, "size")
    if shifted.ndim == 1:
        probabilities = np.exp(shifted)
        return np.asarray(rng.choice(shifted.shape[0], size=size, p=probabilities / probabilities.sum()), dtype=np.int64)
    if size is not None:
        raise InvalidParameterError("size applies to 1-D scores only; 2-D scores give one draw per row, pass size=None")
    return _draw_by_blocks(shifted, block_rows, lambda block: inverse_cdf_rows(block, rng.random(block.shape[0])))


def _draw_by_blocks(values: np.ndarray, block_rows: object, draw: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """One index per row of (batch, V) ``values``: ``draw`` of each block of ``block_rows`` rows
    (default: about BLOCK_ENTRIES weights a block), in row order: only one block's weights are
    held at once whatever the batch (a draw that takes one uniform a row from one generator then
    gives the same indices for a seed whatever the block size)."""
    batch, vocabulary = values.shape
    step = max(1, BLOCK_ENTRIES // vocabulary) if block_rows is None else _check_count(block_rows, "block_rows", 1)
    chosen = np.empty(batch, dtype=np.int64)
    for start in range(0, batch, step):
        chosen[start:start + step] = draw(values[start:start + step])
    return chosen


def inverse_cdf_rows(shifted: np.ndarray, uniforms: np.ndarray) -> np.ndarray:
    """One index per row of ``shifted`` (log-weights, each row's largest 0), row i drawn with the
    uniform ``uniforms[i]`` in [0, 1) against the row's cumulative weights."""
    cumulative = np.cumsum(np.exp(shifted), axis=1)  # each row's largest weight is 1
    targets = uniforms * cumulative[:, -1]
    # the first entry whose cumulative weight exceeds the target (never past the last one)
    return np.minimum((cumulative <= targets[:, None]).sum(axis=1), shifted.shape[1] - 1).astype(np.int64)


def sample_exponential_mechanism_rows(
    scores: object, epsilon: float, rngs: Sequence[np.random.Generator], sensitivity: float = 1.0
) -> np.ndarray:
    """One draw per row of (batch, V) ``scores``, row i with one uniform from its own generator
    ``rngs[i]``: each row is a draw of :func:`sample_exponential_mechanism` (epsilon-DP for a
    score of that sensitivity), and a row's draw does not depend on which rows share its batch.

    A generator that writes many texts at once gives each text its own stream this way, so a
    text's release is the same whatever it is batched with (and with its own seed, the same as
    released alone).

    >>> rows = sample_exponential_mechanism_rows([[0.0, 1e6], [1e6, 0.0]], 1.0, [make_rng(0), make_rng(1)])
    >>> rows.tolist()
    [1, 0]
    """
    shifted = _shifted_exponents(scores, epsilon, sensitivity)
    if shifted.ndim != 2 or shifted.shape[0] != len(rngs):
        raise InvalidParameterError(f"scores must have shape (batch, V) with one generator per row; got shape "
                                    f"{shifted.shape} for {len(rngs)} generator(s)")
    if shifted.shape[0] == 0:
        return np.zeros(0, dtype=np.int64)
    return inverse_cdf_rows(shifted, np.array([rng.random() for rng in rngs]))


def sample_clipped_exponential_rows(
    values: object,
    candidates: np.ndarray,
    low: float,
    high: float,
    epsilon: float,
    rngs: Sequence[np.random.Generator],
    *,
    relative: bool,
    sensitivity: float | None = None,
) -> np.ndarray:
    """One draw per row of (batch, V) ``values`` (a language model's logits) by the exponential
    mechanism over the entries ``candidates`` (sorted column indices), with the clipped score

        u(v) = clip(values[v] - s, low, high),   s = the row's largest candidate value if ``relative``, else 0,

    and sensitivity ``high - low`` (the score's range, whatever the input; ``sensitivity`` states
    another where a caller must, as the tests' broken mechanisms do): epsilon-DP per row,
    the same distribution as :func:`sample_exponential_mechanism_rows` on these scores, row i with
    one uniform from ``rngs[i]``. Returns positions in ``candidates``.

    Why not the general sampler: with a clipped score most of a large vocabulary lies on the floor
    (u = low), all with the same weight, so only the few entries above it need an exponential. The
    inverse CDF runs over the candidates in order, the floor's runs between two entries above it
    counted by arithmetic: O(V) comparisons and O(K) exponentials for K entries above the floor,
    instead of O(V) exponentials in float64 (a decode step of 16 rows of 49,152 logits: about 2 ms
    instead of 10). Scores are computed in float64 from the float32 logits (exact differences).

    >>> logits = np.array([[30.0, 25.0, 2.0, 1.0]])
    >>> sample_clipped_exponential_rows(logits, np.arange(4), -15.0, 0.0, 1e6, [make_rng(0)], relative=True)
    array([0])
    """
    epsilon = check_epsilon(epsilon)
    if not high > low:
        raise InvalidParameterError(f"the score's range must have high > low, got [{low}, {high}]")
    rows = np.asarray(values, dtype=np.float32)
    candidates = np.asarray(candidates, dtype=np.int64)
    if rows.ndim != 2 or rows.shape[0] != len(rngs) or candidates.ndim != 1 or candidates.size == 0:
        raise InvalidParameterError(f"values must have shape (batch, V) with one generator per row and candidates a "
                                    f"non-empty 1-D array; got {rows.shape}, {len(rngs)} generator(s), "
                                    f"{candidates.shape} candidates")
    if not (np.isfinite(rows).all() or np.isfinite(rows[:, candidates]).all()):
        raise InvalidParameterError("values must all be finite; replace NaN or infinite logits before sampling")
    position = np.full(rows.shape[1], -1, dtype=np.int64)
    position[candidates] = np.arange(candidates.size)
    count = candidates.size
    scale = epsilon / (2.0 * (high - low if sensitivity is None else check_epsilon(sensitivity, name="sensitivity")))
    chosen = np.empty(rows.shape[0], dtype=np.int64)
    for r, rng in enumerate(rngs):
        row = rows[r]
        shift = 0.0
        if relative:  # the largest candidate value: the row's largest, unless that is not a candidate
            best = int(row.argmax())
            shift = float(row[best]) if position[best] >= 0 else float(row[candidates].max())
        # A float32 pre-filter with a margin, then the exact float64 score on the few it keeps.
        near = np.flatnonzero(row >= np.float32(shift + low) - np.float32(1e-3 * (1.0 + abs(shift + low))))
        near = near[position[near] >= 0]
        scores = clipped_logit_scores(row[near], low, high, relative, largest=shift)
        above = scores > low
        ids, scores = near[above], scores[above]
        top = float(scores.max()) if scores.size else low
        weights = np.exp(scale * (scores - top))
        floor = float(np.exp(scale * (low - top)))
        chosen[r] = _clipped_inverse_cdf(position[ids], weights, floor, count, rng.random())
    return chosen


def _clipped_inverse_cdf(above: np.ndarray, weights: np.ndarray, floor: float, count: int, uniform: float) -> int:
    """The position drawn among ``count`` candidates whose weights are ``weights`` at the sorted
    positions ``above`` and ``floor`` everywhere else, with ``uniform`` in [0, 1) against the
    cumulative weights in position order (as :func:`inverse_cdf_rows` does on the full row)."""
    floors_before = above - np.arange(above.size)  # floor positions before each entry above
    own = np.cumsum(weights)
    through = own + floor * floors_before  # cumulative weight up to and including each entry above
    total = (own[-1] if own.size else 0.0) + floor * (count - above.size)
    target = uniform * total
    j = int(np.searchsorted(through, target, side="right"))  # the first entry whose cumulative passes it
    before = own[j - 1] if j > 0 else 0.0  # the entries above the floor before entry j
    lowest = int(above[j - 1]) + 1 if j > 0 else 0  # the first position after them
    if j < above.size and (floor == 0.0 or target >= before + floor * floors_before[j]):
        return int(above[j])
    if floor == 0.0:  # nothing on the floor can be drawn (an exponent below the float range)
        return int(above[min(j, above.size - 1)])
    # a floor position x in (lowest - 1, next entry): cumulative before + floor * (x + 1 - j)
    x = int(np.floor((target - before) / floor)) + j
    highest = int(above[j]) - 1 if j < above.size else count - 1
    if highest < lowest:  # rounding put the target past the last floor position: the last entry above
        return int(above[-1])
    return min(max(x, lowest), highest)


def sample_uniform_indices(count: int, vocabulary_size: int, rng: np.random.Generator) -> np.ndarray:
    """``count`` indices uniform on [0, vocabulary_size) (int64): the epsilon -> 0 limit (Random-R).

    >>> sample_uniform_indices(5, 3, make_rng(0))
    array([2, 1, 1, 0, 0])
    """
    count = _check_count(count, "count")
    vocabulary_size = _check_count(vocabulary_size, "vocabulary_size", 1)
    return rng.integers(0, vocabulary_size, size=count, dtype=np.int64)


def sample_two_set_mechanism(
    probabilities: object,
    set_epsilon: float,
    token_epsilon: float,
    lexical_draws: int,
    rng: np.random.Generator,
    *,
    block_rows: int | None = None,
) -> np.ndarray:
    """One index per row of (batch, V) ``probabilities`` by the two-set sampler of paper 002's
    public code (its ``predict_dp_two_sets``), rather than the paper's Algorithm 1.

    For each row p (normalised to sum to 1):

    1. the lexical set L: the distinct indices of ``lexical_draws`` draws from p itself (with
       replacement, no noise); S is every other index;
    2. L or S, by the exponential mechanism on their masses p(L) and 1 - p(L) with
       ``set_epsilon`` (sensitivity 1); S when it is not empty, L otherwise;
    3. the index, inside the chosen set, by the exponential mechanism on p with ``token_epsilon``.

    Step 1 is not private, so this is NOT set_epsilon-DP: see
    :func:`textveil.privacy.exponential_mechanism.two_set_token_epsilon` for what it is. Uniforms
    come from ``rng`` block by block (``lexical_draws`` + 2 per row), so a seed gives the same
    draws for the same block size (by default derived from V, as in
    :func:`sample_exponential_mechanism`).

    >>> rows = sample_two_set_mechanism([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]], 50.0, 0.1, 5, make_rng(0))
    >>> rows.tolist()  # at a large set epsilon the lexical set, here the sure token, wins
    [2, 0]
    """
    set_scale = check_epsilon(set_epsilon, name="set_epsilon") / 2.0
    token_scale = check_epsilon(token_epsilon, name="token_epsilon") / 2.0
    draws = _check_count(lexical_draws, "lexical_draws", 1)
    try:
        values = np.asarray(probabilities, dtype=np.float64)
    except (TypeError, ValueError):
        raise InvalidParameterError("probabilities must be a numeric array of shape (batch, V)") from None
    if values.ndim != 2 or values.shape[1] < 2:
        raise InvalidParameterError(f"probabilities must have shape (batch, V) with V >= 2, got shape {values.shape}")
    if not np.all(np.isfinite(values)) or np.any(values < 0) or np.any(values.sum(axis=1) <= 0):
        raise InvalidParameterError("probabilities must be finite, non-negative, and sum to more than 0 in each row")

    def draw(block: np.ndarray) -> np.ndarray:  # steps 1 to 3 on a block of rows
        p = block / block.sum(axis=1, keepdims=True)
        rows = np.arange(p.shape[0])
        cumulative = np.cumsum(p, axis=1)
        lexical = np.zeros(p.shape, dtype=bool)
        for target in (rng.random((p.shape[0], draws)) * cumulative[:, -1:]).T:
            lexical[rows, np.minimum((cumulative <= target[:, None]).sum(axis=1), p.shape[1] - 1)] = True
        mass = np.where(lexical, p, 0.0).sum(axis=1)
        # Pr[L] = e^(s m) / (e^(s m) + e^(s (1 - m))): a logistic in the mass difference
        with np.errstate(over="ignore"):
            lexical_chance = 1.0 / (1.0 + np.exp(-set_scale * (2.0 * mass - 1.0)))
        take_lexical = (rng.random(p.shape[0]) < lexical_chance) | lexical.all(axis=1)
        members = np.where(take_lexical[:, None], lexical, ~lexical)
        best = np.where(members, p, -np.inf).max(axis=1, keepdims=True)
        with np.errstate(invalid="ignore"):
            shifted = np.where(members, token_scale * (p - best), -np.inf)
        return inverse_cdf_rows(shifted, rng.random(p.shape[0]))

    return _draw_by_blocks(values, block_rows, draw)


# -- the same draws on a torch tensor, on whatever device holds it ------------------------------
#
# A language model on a GPU leaves each step's logits there. Copying (rows, 49,152) floats to the
# CPU and drawing row by row in NumPy took two thirds of a step; here the draw runs where the
# logits are, with the same inverse CDF in float64 and the same uniforms (one per row, from the
# row's own NumPy generator: a text's stream is the same on every device), so for a given seed
# and logits the tokens are those of the NumPy functions above, up to the last bit of a float64
# cumulative sum (a boundary case of probability about 1e-13 per draw).


def row_uniforms(rngs: Sequence[np.random.Generator]) -> np.ndarray:
    """One uniform in [0, 1) per row, row i from its own generator ``rngs[i]`` (the draw every
    row sampler here consumes: one value per row and step)."""
    return np.array([rng.random() for rng in rngs], dtype=np.float64)


def torch_inverse_cdf_rows(weights: Any, uniforms: np.ndarray) -> Any:
    """As :func:`inverse_cdf_rows` on (batch, V) float64 ``weights`` (a torch tensor, each row's
    largest 1): the first entry whose cumulative weight exceeds the row's target."""
    import torch

    cumulative = torch.cumsum(weights, dim=1)
    targets = torch.as_tensor(uniforms, dtype=torch.float64, device=weights.device) * cumulative[:, -1]
    chosen = torch.searchsorted(cumulative, targets[:, None], right=True)[:, 0]
    return torch.clamp(chosen, max=weights.shape[1] - 1)


def sample_exponential_mechanism_rows_torch(scores: Any, epsilon: float, rngs: Sequence[np.random.Generator],
                                            sensitivity: float = 1.0) -> Any:
    """:func:`sample_exponential_mechanism_rows` on a (batch, V) torch tensor, on its device:
    returns a long tensor of indices there. Computed in float64.

    >>> import torch
    >>> sample_exponential_mechanism_rows_torch(torch.tensor([[0.0, 1e6], [1e6, 0.0]]), 1.0,
    ...                                         [make_rng(0), make_rng(1)]).tolist()
    [1, 0]
    """
    import torch

    epsilon = check_epsilon(epsilon)
    sensitivity = check_epsilon(sensitivity, name="sensitivity")
    values = checked_rows(scores, rngs)
    if values.shape[0] == 0:
        return torch.zeros(0, dtype=torch.long, device=values.device)
    scale = min(epsilon / 2.0 / sensitivity, float(np.finfo(np.float64).max))
    shifted = (values - values.max(dim=1, keepdim=True).values) * scale
    weights = torch.exp(torch.clamp(shifted, min=float(np.finfo(np.float64).min)))
    return torch_inverse_cdf_rows(weights, row_uniforms(rngs))


def sample_clipped_exponential_rows_torch(values: Any, candidates: Any, low: float, high: float, epsilon: float,
                                          rngs: Sequence[np.random.Generator], *, relative: bool,
                                          sensitivity: float | None = None) -> Any:
    """:func:`sample_clipped_exponential_rows` on a (batch, V) torch tensor of logits, on its
    device: the score u(v) = clip(values[v] - s, low, high) over the sorted column indices
    ``candidates`` (a long tensor, or an array moved to the values' device), with its counted
    floor: an entry at the floor weighs exp(scale * (low - top)) without an exponential of its
    own. Returns positions in ``candidates`` (a long tensor on the device).

    >>> import torch
    >>> logits = torch.tensor([[30.0, 25.0, 2.0, 1.0]])
    >>> sample_clipped_exponential_rows_torch(logits, torch.arange(4), -15.0, 0.0, 1e6, [make_rng(0)],
    ...                                       relative=True).tolist()
    [0]
    """
    import torch

    epsilon = check_epsilon(epsilon)
    if not high > low:
        raise InvalidParameterError(f"the score's range must have high > low, got [{low}, {high}]")
    rows = checked_rows(values, rngs, finite=False)
    candidates = torch.as_tensor(candidates, dtype=torch.long, device=rows.device)
    if candidates.ndim != 1 or candidates.numel() == 0:
        raise InvalidParameterError(f"candidates must be a non-empty 1-D array, got shape {tuple(candidates.shape)}")
    if rows.shape[0] == 0:
        return torch.zeros(0, dtype=torch.long, device=rows.device)
    scale = epsilon / (2.0 * (high - low if sensitivity is None else check_epsilon(sensitivity, name="sensitivity")))
    chosen = rows.index_select(1, candidates)  # float64: exact differences of the float32 logits
    if not bool(torch.isfinite(chosen).all()):  # only the candidates are read, as in NumPy
        raise InvalidParameterError("values must all be finite; replace NaN or infinite logits before sampling")
    scores = clipped_logit_scores(chosen, low, high, relative)
    above = scores > low
    top = scores.max(dim=1, keepdim=True).values
    floor = torch.exp(scale * (low - top))
    weights = torch.where(above, torch.exp(scale * (scores - top)), floor)
    return torch_inverse_cdf_rows(weights, row_uniforms(rngs))


def checked_rows(values: Any, rngs: Sequence[np.random.Generator], finite: bool = True) -> Any:
    """``values`` as a (batch, V) float64 tensor with one generator per row (and finite entries)."""
    import torch

    rows = torch.as_tensor(values).to(torch.float64)
    if rows.ndim != 2 or rows.shape[0] != len(rngs) or rows.shape[1] == 0:
        raise InvalidParameterError(f"values must have shape (batch, V) with V >= 1 and one generator per row; got "
                                    f"{tuple(rows.shape)} for {len(rngs)} generator(s)")
    if finite and not bool(torch.isfinite(rows).all()):
        raise InvalidParameterError("values must all be finite; replace NaN or infinite logits before sampling")
    return rows


# -- one draw per kind, for a step's logits wherever the engine left them ------------------------
#
# Logits on an accelerator are drawn there (copying a step's rows to the host cost two thirds of
# a step); logits on the host (a NumPy array, a CPU tensor) go to the NumPy draws, whose counted
# floor is the faster one on a CPU. Both give the same distribution and, for the same generators,
# the same tokens (tests/test_sampling.py), so a release does not depend on the path.


def sample_clipped_exponential_logits(logits: Any, candidates: np.ndarray, low: float, high: float, epsilon: float,
                                      rngs: Sequence[np.random.Generator], *, relative: bool,
                                      sensitivity: float | None = None) -> np.ndarray:
    """:func:`sample_clipped_exponential_rows` on a step's (batch, V) ``logits`` wherever they are:
    a tensor on an accelerator by :func:`sample_clipped_exponential_rows_torch`, there; anything
    else on the host. Returns positions in ``candidates`` (sorted column indices) as a NumPy
    array: a row's token is needed on the host to end or continue it.

    >>> import torch
    >>> logits = torch.tensor([[30.0, 25.0, 2.0, 1.0]])
    >>> sample_clipped_exponential_logits(logits, np.arange(4), -15.0, 0.0, 1e6, [make_rng(0)], relative=True)
    array([0])
    """
    if on_accelerator(logits):
        return sample_clipped_exponential_rows_torch(logits, candidates_on_device(logits.device, candidates), low, high,
                                                     epsilon, rngs, relative=relative,
                                                     sensitivity=sensitivity).cpu().numpy()
    return sample_clipped_exponential_rows(host_array(logits), candidates, low, high, epsilon, rngs,
                                           relative=relative, sensitivity=sensitivity)


def sample_exponential_mechanism_logits(logits: Any, candidates: np.ndarray, epsilon: float,
                                        rngs: Sequence[np.random.Generator], sensitivity: float = 1.0) -> np.ndarray:
    """:func:`sample_exponential_mechanism_rows` with a step's (batch, V) ``logits`` as the scores,
    over the columns ``candidates`` only, wherever the logits are (an accelerator's by
    :func:`sample_exponential_mechanism_rows_torch`, there). Returns positions in ``candidates``
    as a NumPy array.

    >>> sample_exponential_mechanism_logits(np.array([[0.0, 9.0, 1e6]]), np.array([0, 2]), 1.0, [make_rng(0)])
    array([1])
    """
    if on_accelerator(logits):
        chosen = logits.index_select(1, candidates_on_device(logits.device, candidates))
        return sample_exponential_mechanism_rows_torch(chosen, epsilon, rngs, sensitivity).cpu().numpy()
    return sample_exponential_mechanism_rows(host_array(logits)[:, candidates], epsilon, rngs, sensitivity)


def host_array(logits: Any) -> Any:
    """Logits on the host as NumPy (a CPU tensor viewed in float32; an array as it is)."""
    return logits.float().numpy() if is_torch_tensor(logits) else logits


_CANDIDATES_ON_DEVICE: dict[tuple[int, str], tuple[np.ndarray, Any]] = {}
"""Candidate arrays moved to a device, each kept with the array it came from (moved once, not
every step: a draw reuses the same output vocabulary for a whole release)."""


def candidates_on_device(device: Any, candidates: np.ndarray) -> Any:
    """``candidates`` as a long tensor on ``device``, moved there once per array and device."""
    import torch

    key = (id(candidates), str(device))
    kept = _CANDIDATES_ON_DEVICE.get(key)
    if kept is None or kept[0] is not candidates:
        if len(_CANDIDATES_ON_DEVICE) >= 8:  # a handful of vocabularies at most: drop the old ones
            _CANDIDATES_ON_DEVICE.clear()
        kept = (candidates, torch.as_tensor(candidates, dtype=torch.long, device=device))
        _CANDIDATES_ON_DEVICE[key] = kept
    return kept[1]
