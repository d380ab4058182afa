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


def _lagrangian_force(M, q, v):
    """The velocity-quadratic force of a configuration-dependent M in pyint's convention (f holds it):
    -(M v)_q v + 1/2 grad_q (v^T M v)."""
    q, v = sp.Matrix(q), sp.Matrix(v)
    return -(M * v).jacobian(q) * v + ((v.T * M * v) / 2).jacobian(q).T


def symbolic_two_link_angles(L1=0.5, L2=1.0, m1=10.0, m2=20.0, grav=9.81, width=0.0):
    """Seed 003's two-link manipulator in joint angles (pyint.models.TwoLinkAngles): uniform bars, M(q2)."""
    q1, q2, w1, w2 = sp.symbols("theta1 theta2 omega1 omega2")
    l1, l2, ma, mb, g, b = p = sp.symbols("L1 L2 m1 m2 g b")
    i1, i2, k = ma * l1**2 / 3 + ma * b**2 / 12, mb * l2**2 / 3 + mb * b**2 / 12, mb * l1 * l2 / 2
    M = sp.Matrix([[i1 + mb * l1**2 + i2 + 2 * k * sp.cos(q2), i2 + k * sp.cos(q2)],
                   [i2 + k * sp.cos(q2), i2]])
    V = (ma / 2 + mb) * g * l1 * sp.sin(q1) + mb * g * l2 / 2 * sp.sin(q1 + q2)
    return SymbolicModel([q1, q2], [w1, w2], mass=M, force=_lagrangian_force(M, [q1, q2], [w1, w2]),
                         potential=V, params=dict(zip(p, (L1, L2, m1, m2, grav, width))),
                         name="symbolic_two_link_angles", conservative=True)


def symbolic_sleigh(mass=1.0, inertia=0.05, offset=0.3, stiffness=2.0, damping=0.05):
    """The Chaplygin sleigh in contact-point coordinates (pyint.models.ChaplyginSleigh): M(theta), a spring
    from the origin to the mass centre, a rotational damper, no lateral slip at the blade."""
    x, y, th, vx, vy, w = sp.symbols("x y theta vx vy omega")
    m, J, a, k, c = p = sp.symbols("m J a k c")
    M = sp.Matrix([[m, 0, -m * a * sp.sin(th)], [0, m, m * a * sp.cos(th)],
                   [-m * a * sp.sin(th), m * a * sp.cos(th), J + m * a**2]])
    rc = sp.Matrix([x + a * sp.cos(th), y + a * sp.sin(th)])
    f = _lagrangian_force(M, [x, y, th], [vx, vy, w]) + sp.Matrix([0, 0, -c * w])
    return SymbolicModel([x, y, th], [vx, vy, w], mass=M, force=f, potential=k * (rc.T * rc)[0, 0] / 2,
                         nonhol=([[-sp.sin(th), sp.cos(th), 0]], None),
                         params=dict(zip(p, (mass, inertia, offset, stiffness, damping))), name="symbolic_sleigh")
