"""pymc-learn's Bayesian LinearRegression (pmlearn/linear_model/base.py: a PyMC3 model on
Theano) fitted by ADVI on the CPU, seeded, on small random data drawn from known
coefficients: the negative ELBO must be finite and fall, and the posterior means land near
the coefficients. Run from the repository's root under its environment's Python (3.7,
PyMC3 3.4 on Theano-PyMC)."""
from __future__ import print_function

import os
import sys

os.environ.setdefault("MPLBACKEND", "Agg")  # pmlearn.base imports pyplot; no display here

import numpy as np
import pymc3 as pm

sys.path.insert(0, os.getcwd())
from pmlearn.linear_model import LinearRegression

ROWS, STEPS = 100, 3000
ALPHA, BETAS = 0.5, np.array([1.5, -2.0])

np.random.seed(0)
X = np.random.randn(ROWS, len(BETAS))
y = ALPHA + X.dot(BETAS) + 0.1 * np.random.randn(ROWS)
model = LinearRegression()
model.default_advi_sample_draws = 500
model.fit(X, y, inference_args={"n": STEPS, "random_seed": 0, "progressbar": False,
                                "obj_optimizer": pm.adam(learning_rate=0.05)})
hist = np.asarray(model.advi_hist)
first, last = hist[:100].mean(), hist[-100:].mean()
betas = model.trace["betas"].mean(axis=0).ravel()

assert len(hist) == STEPS and np.all(np.isfinite(hist)), hist
assert last < first, (first, last)
assert np.allclose(betas, BETAS, atol=0.3), betas
print("ok loss=%.2f (negative ELBO, from %.2f, %d ADVI steps) betas=%s" % (
    last, first, STEPS, np.round(betas, 2).tolist()))
