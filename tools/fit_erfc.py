#!/usr/bin/env python3
"""Fit the coefficients of tfm.h's erfc (tfm__erfc_coef): erfc(z) = e^(-z^2) g(t), t = 1 / (1 + z/2),
g a polynomial in t of degree 9, by least squares on the relative error over z in [0, 10]
(float64), then check the float32 evaluation against math.erfc. Prints the coefficients
as float32 and the largest relative error. Needs numpy (/usr/bin/python3 on Debian)."""
import math
import numpy as np

DEGREE = 9
z = np.concatenate([np.linspace(0.0, 10.0, 20001), np.linspace(0.0, 1.0, 2001)])
t = 1.0 / (1.0 + 0.5 * z)
g = np.array([math.erfc(v) * math.exp(v * v) for v in z])
a = np.vander(t, DEGREE + 1, increasing=True) / g[:, None]  # rows scaled: relative error
coef, *_ = np.linalg.lstsq(a, np.ones_like(g), rcond=None)
c32 = coef.astype(np.float32)

zz = np.linspace(0.0, 9.0, 200001).astype(np.float32)
tt = (np.float32(1.0) / (np.float32(1.0) + np.float32(0.5) * zz)).astype(np.float32)
p = np.full_like(tt, c32[-1])
for k in range(DEGREE - 1, -1, -1):
    p = (p * tt + c32[k]).astype(np.float32)
approx = p.astype(np.float64) * np.exp(-(zz.astype(np.float64) ** 2))
ref = np.array([math.erfc(float(v)) for v in zz])
print("coefficients:", ", ".join(repr(float(c)) + "f" for c in c32))
print("largest relative error (float32 polynomial, exact exp):", float(np.max(np.abs(approx - ref) / ref)))
