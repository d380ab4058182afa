"""SymPy's own equations of motion of a KanesMethod or System, integrated by SciPy's DOP853 (rtol 1e-12):
the reference the models built by SymbolicModel.from_kanes_method / from_system are checked against
(tests/test_mechanics_bridge.py, examples/plot_10_* and plot_11_*).

x = (q, u); SymPy's mass_matrix_full(x) x' = forcing_full(x) holds the kinematic differential
equations, the dynamic equations of the independent speeds and the derivatives of the velocity
constraints (Kane & Levinson 1985, ch. 6), so its solution also gives q'.
"""
import numpy as np
import sympy as sp
from scipy.integrate import solve_ivp
from sympy.physics.mechanics import dynamicsymbols

RTOL, ATOL = 1e-12, 1e-14


def sympy_reference(eom, params, q0, u0, times):
    """(q, q') at ``times`` (each of shape (len(times), n)) from SymPy's equations of ``eom`` (a KanesMethod
    after kanes_equations, or a System after form_eoms), parameters {Symbol: value}, x(0) = (q0, u0)."""
    q, u = list(eom.q), list(eom.u)
    n = len(q)
    qs, us = sp.symbols(f"_q0:{n}"), sp.symbols(f"_u0:{len(u)}")
    rep = dict(zip(u, us))
    rep.update(dict(zip(q, qs)))
    MM = eom.mass_matrix_full.xreplace(params).xreplace(rep)
    FF = eom.forcing_full.xreplace(params).xreplace(rep)
    t = dynamicsymbols._t
    mm = sp.lambdify([t, qs, us], MM, modules="numpy", cse=True)
    ff = sp.lambdify([t, qs, us], FF, modules="numpy", cse=True)

    def rhs(tt, x):
        a = np.array(mm(tt, x[:n], x[n:]), dtype=float)
        b = np.array(ff(tt, x[:n], x[n:]), dtype=float).ravel()
        return np.linalg.solve(a, b)

    x0 = np.concatenate([q0, u0])
    sol = solve_ivp(rhs, (0.0, float(times[-1])), x0, method="DOP853", rtol=RTOL, atol=ATOL,
                    t_eval=np.concatenate([[0.0], times]))
    assert sol.success, sol.message
    xs = sol.y.T[1:]
    qd = np.array([rhs(tt, x)[:n] for tt, x in zip(times, xs)])
    return xs[:, :n], qd


#: Orders on an unconstrained ODE: the claimed orders of the Gauss-Legendre composition and of the
#: Galerkin-Lobatto variational methods are their orders under constraints; without constraints the
#: kicks vanish and symplectic_gl is the 2-stage Gauss-Legendre method (order 2s = 4: Hairer, Lubich,
#: Wanner, Geometric Numerical Integration, II.1.3), galerkin_s<s> the Lobatto IIIA-IIIB pair with s + 1
#: nodes (order 2s: Marsden & West 2001, Acta Numerica, 2.6; seed 004's s + 1 / s is the order reduction by
#: the nonholonomic constraint). Measured on the rolling disc: 4.00; 1.98, 4.00, 5.96, 7.96.
UNCONSTRAINED_ORDER = {"symplectic_gl": 4, "galerkin_s1": 2, "galerkin_s2": 4, "galerkin_s3": 6, "galerkin_s4": 8}
