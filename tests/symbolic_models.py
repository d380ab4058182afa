"""The chain and snakeboard written by a user as SymbolicModels: tests/test_symbolic.py and
bench/run.py (section symbolic) use these.

Same systems as pyint.models.PendulumChain and pyint.models.Snakeboard (their
docstrings), from SymPy expressions only.
"""
import sympy as sp

from pyint.models import SymbolicModel


def symbolic_chain(n_links, mass=1.0, length=1.0, grav=9.81):
    """Planar N-link chain of point masses in Cartesian coordinates, g_i = (|p_i - p_{i-1}|^2 - l_i^2) / 2."""
    x, y = sp.symbols(f"x1:{n_links + 1}"), sp.symbols(f"y1:{n_links + 1}")
    vx, vy = sp.symbols(f"vx1:{n_links + 1}"), sp.symbols(f"vy1:{n_links + 1}")
    m, l = sp.symbols(f"m1:{n_links + 1}"), sp.symbols(f"l1:{n_links + 1}")
    g = sp.Symbol("g")
    q = [s for i in range(n_links) for s in (x[i], y[i])]
    v = [s for i in range(n_links) for s in (vx[i], vy[i])]
    hol = [((x[i] - (x[i - 1] if i else 0))**2 + (y[i] - (y[i - 1] if i else 0))**2 - l[i]**2) / 2
           for i in range(n_links)]
    params = {g: grav, **{s: mass for s in m}, **{s: length for s in l}}
    return SymbolicModel(q, v, mass=sp.diag(*[m[i] for i in range(n_links) for _ in "xy"]),
                         potential=sum(m[i] * g * y[i] for i in range(n_links)), hol=hol,
                         params=params, name=f"symbolic_chain_{n_links}",
                         coord_units=("m",) * (2 * n_links))


def symbolic_snakeboard():
    """Seed 000's snakeboard: thrust F along the board, torsion springs, two no-slip axles."""
    x, y, th, psi, pb, pf = q = sp.symbols("x y theta psi phi_b phi_f")
    v = sp.symbols("vx vy vtheta vpsi vphi_b vphi_f")
    m, J, Jr, Jw, L, F, kr, kw = p = sp.symbols("m J J_r J_w L F k_r k_w")
    M = sp.Matrix([[m, 0, 0, 0, 0, 0], [0, m, 0, 0, 0, 0], [0, 0, J + Jr + 2 * Jw, Jr, Jw, Jw],
                   [0, 0, Jr, Jr, 0, 0], [0, 0, Jw, 0, Jw, 0], [0, 0, Jw, 0, 0, Jw]])
    A = sp.Matrix([[-sp.sin(th + pb), sp.cos(th + pb), -L * sp.cos(pb), 0, 0, 0],
                   [-sp.sin(th + pf), sp.cos(th + pf), L * sp.cos(pf), 0, 0, 0]])
    vals = dict(zip(p, (6.0, 0.016, 0.072, 0.0013, 0.2, 20.0, 1.0, 0.1)))
    return SymbolicModel(q, v, mass=M, force=[F * sp.cos(th), F * sp.sin(th), 0, 0, 0, 0],
                         potential=(kr * psi**2 + kw * (pb**2 + pf**2)) / 2, nonhol=(A, None),
                         params=vals, name="symbolic_snakeboard")
