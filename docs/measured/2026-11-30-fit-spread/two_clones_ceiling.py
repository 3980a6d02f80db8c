"""What two fresh clones can show when every interval is honest (a check of the done-when's
numbers, not a measurement): 134 findings, each measured twice independently with a normal
error of the same sd, a 95 % interval around each value. How often does the first interval hold
the second value, and how many pairs are disjoint? Also with the second interval twice as wide
(another run count or spread). python two_clones_ceiling.py"""
import numpy as np
from scipy.stats import norm

rng = np.random.default_rng(64)
z, F, R = norm.ppf(0.975), 134, 20000
for k in (1.0, 2.0):
    a = rng.standard_normal((R, F))
    b = k * rng.standard_normal((R, F))
    held = (np.abs(b - a) <= z).mean(1)                 # the first interval (half-width z) holds b
    disjoint = (np.abs(b - a) > z * (1 + k)).sum(1)      # the two intervals do not overlap
    print(f"second sd x{k:g}: held {held.mean():.1%} on average (analytic {2 * norm.cdf(z / np.sqrt(1 + k * k)) - 1:.1%}), "
          f"P(held >= 85 %) = {(held >= 0.85).mean():.3f}; disjoint pairs {disjoint.mean():.2f} on average, "
          f"P(none) = {(disjoint == 0).mean():.3f}")
