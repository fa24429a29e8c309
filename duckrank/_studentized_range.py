"""The studentized range distribution's survival function, for Tukey's HSD p-values.

DuckDB has no normal CDF, so this one piece of compare's statistics is Python (the statistic q, its
k and df come from duckrank.tukey_hsd in sql/50_compare.sql; a shell user can pass them to
scipy.stats.studentized_range.sf). The integral is scipy's (Lund & Lund 1983; Batista et al. 2022):

    P(Q <= q) = integral over s > 0 of f(s; df) * P_k(q s),
    P_k(w)    = k * integral over z of phi(z) * (Phi(z + w) - Phi(z))^(k - 1),

f the density of sqrt(chi2_df / df); for df >= 100000 the asymptotic form P_k(q), as scipy uses.
Both integrals are composite Gauss-Legendre over the range where the integrand exceeds ~1e-20 of
its peak; tests/test_compare_tukey.py holds the result to scipy within 1e-9 (the grid's worst is
4e-10) and its left tail to the closed form, which scipy misses.
"""

from __future__ import annotations

import functools
import math

# scipy switches to the infinite-df form here; following it keeps p-values equal to scipy's (and
# ranx's), which differ from the exact finite-df value by ~1e-6 at this df.
ASYMPTOTIC_DF = 100_000
_NODES = 10  # Gauss-Legendre points per panel
_Z_EDGE = 8.5  # phi(8.5) ~ 2e-16: beyond +-8.5 the inner integrand is negligible
_Z_PANELS = 12
_S_PANELS = 8
_S_DROP = 46.0  # the outer range ends where the density falls e^-46 (~1e-20) below its mode
_RANGE_EDGES = (0.25, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 5.0, 6.0, 7.0, 8.0, 10.0)


@functools.cache
def _legendre() -> tuple[tuple[float, float], ...]:
    """(node, weight) pairs of _NODES-point Gauss-Legendre on [-1, 1], by Newton's method."""
    pairs = []
    n = _NODES
    for i in range(1, n + 1):
        x = math.cos(math.pi * (i - 0.25) / (n + 0.5))
        for _ in range(100):
            p0, p1 = 1.0, x
            for j in range(2, n + 1):
                p0, p1 = p1, ((2 * j - 1) * x * p1 - (j - 1) * p0) / j
            derivative = n * (x * p1 - p0) / (x * x - 1)
            step = p1 / derivative
            x -= step
            if abs(step) < 1e-16:
                break
        pairs.append((x, 2 / ((1 - x * x) * derivative * derivative)))
    return tuple(pairs)


def _panels(edges: list[float]) -> list[tuple[float, float]]:
    """(point, weight) of composite Gauss-Legendre over the panels between consecutive edges."""
    points = []
    for low, high in zip(edges, edges[1:]):
        middle, half = 0.5 * (low + high), 0.5 * (high - low)
        points.extend((middle + half * x, half * w) for x, w in _legendre())
    return points


def _even(low: float, high: float, panels: int) -> list[float]:
    return [low + (high - low) * p / panels for p in range(panels + 1)]


@functools.cache
def _z_points() -> tuple[tuple[tuple[float, float, float], ...], tuple[tuple[float, float, float], ...]]:
    """The inner integral's points as (z / sqrt 2, weight * phi(z), tail) for z <= 0 (tail Phi(z))
    and for z > 0 (tail 1 - Phi(z)): Phi(z + w) - Phi(z) is taken from the tail that keeps its digits."""
    low, high = [], []
    for z, w in _panels(_even(-_Z_EDGE, _Z_EDGE, _Z_PANELS)):
        point = z / math.sqrt(2), w * math.exp(-0.5 * z * z) / math.sqrt(2 * math.pi)
        if z > 0:
            high.append((*point, 0.5 * math.erfc(point[0])))
        else:
            low.append((*point, 0.5 * math.erfc(-point[0])))
    return tuple(low), tuple(high)


def _range_cdf(w: float, k: int) -> float:
    """P_k(w): the probability that the range of k standard normals is at most w."""
    if w <= 0:
        return 0.0
    shift, power, erfc = w / math.sqrt(2), k - 1, math.erfc
    low, high = _z_points()
    # (sums of generators: this loop is where p-values spend their time)
    total = (sum(weight * (0.5 * erfc(-a - shift) - tail) ** power for a, weight, tail in low)
             + sum(weight * (tail - 0.5 * erfc(a + shift)) ** power for a, weight, tail in high))
    return k * total


def _log_density(s: float, df: float) -> float:
    """log f(s; df), f the density of sqrt(chi2_df / df)."""
    return (0.5 * df * math.log(df) - math.lgamma(0.5 * df) - (0.5 * df - 1) * math.log(2)
            + (df - 1) * math.log(s) - 0.5 * df * s * s)


def _s_range(df: float) -> tuple[float, float]:
    """Where the density of sqrt(chi2_df / df) is within e^-_S_DROP of its mode, by bisection."""
    mode = math.sqrt(max(df - 1, 0.0) / df)
    top = _log_density(mode, df) if mode > 0 else 0.0

    def low_enough(s: float) -> bool:
        return s <= 0 or _log_density(s, df) < top - _S_DROP

    high = mode + 1.0
    while not low_enough(high):
        high = mode + 2 * (high - mode)
    ends = []
    for inside, outside in ((mode, 0.0), (mode, high)):
        for _ in range(200):
            middle = 0.5 * (inside + outside)
            if low_enough(middle):
                outside = middle
            else:
                inside = middle
            if abs(outside - inside) < 1e-12 * (1 + mode):
                break
        ends.append(outside)
    return ends[0], ends[1]


def sf(q: float, k: int, df: float) -> float:
    """P(Q >= q) for the studentized range of k means with df degrees of freedom (k >= 2, df > 0)."""
    if not (k >= 2 and df > 0) or math.isnan(q):
        raise ValueError(f"the studentized range needs k >= 2, df > 0 and a number q; got q={q}, k={k}, df={df}")
    if q <= 0:
        return 1.0
    if math.isinf(q):
        return 0.0
    if df >= ASYMPTOTIC_DF:
        cdf = _range_cdf(q, k)
    else:
        low, high = _s_range(df)
        # P_k(q s) climbs from 0 to 1 as q s goes from ~0.3 to ~8: edges there resolve it when the
        # density is wide (small df) and the climb narrow (large q)
        edges = sorted({*_even(low, high, _S_PANELS), *(w / q for w in _RANGE_EDGES if low < w / q < high)})
        cdf = sum(weight * math.exp(_log_density(s, df)) * _range_cdf(q * s, k) for s, weight in _panels(edges)
                  if s > 0)
    return min(1.0, max(0.0, 1.0 - cdf))
