"""Models written as a user writes them, from SymPy expressions only (needs SymPy): the twins of the
built-in PendulumChain, Snakeboard, TwoLinkAngles and ChaplyginSleigh (their docstrings), and the magnet
pendulum, a problem with bursts and a reference of its own.  tests/test_symbolic.py checks the twins
against the built-ins; bench/run.py (sections symbolic, adaptive) times them.  Not imported by
``pyint.models``: SymPy is an optional dependency.
"""
import sympy as sp

from .symbolic import SymbolicModel


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


# -- a problem with bursts (bench/run.py, section adaptive) ------------------------------
#: the magnet pendulum's values and start angle (from the downward vertical)
MAGNET = dict(m=1.0, l=1.0, g=9.81, k=2.0, x_m=0.0, y_m=-1.02, epsilon=0.01)
MAGNET_THETA0 = 1.5707963267948966   # pi / 2: at rest, rod horizontal


def _magnet_potential(sp, x, y):
    m, l, g, k, xm, ym, eps = p = sp.symbols("m l g k x_m y_m epsilon")
    return m * g * y - k / sp.sqrt((x - xm) ** 2 + (y - ym) ** 2 + eps ** 2), p


def symbolic_magnet_pendulum(**values):
    """A point mass m on a rigid rod of length l (Cartesian q = (x, y), g = (x^2 + y^2 - l^2) / 2) under
    gravity and a magnet just below its lowest point, V = m g y - k / sqrt(|q - q_m|^2 + eps^2), q_m =
    (x_m, y_m); MAGNET updated by `values`.  Released from the horizontal (magnet_pendulum_state) it
    passes the magnet at |v| ~ 14 m/s with accelerations up to ~1.6e3 m/s^2 (~10 elsewhere): bursts of
    ~2 ms, twice per swing."""
    x, y, vx, vy = sp.symbols("x y vx vy")
    V, p = _magnet_potential(sp, x, y)
    vals = {s: float({**MAGNET, **values}[s.name]) for s in p}
    return SymbolicModel([x, y], [vx, vy], mass=sp.diag(p[0], p[0]), potential=V,
                         hol=[(x ** 2 + y ** 2 - p[1] ** 2) / 2], params=vals, name="magnet_pendulum",
                         coord_units=("m", "m"))


def magnet_pendulum_state(**values):
    """(q0, v0): at rest, the rod horizontal."""
    import numpy as np
    l_ = float({**MAGNET, **values}["l"])
    return np.array([l_ * np.sin(MAGNET_THETA0), -l_ * np.cos(MAGNET_THETA0)]), np.zeros(2)


def magnet_pendulum_reference(times, rtol=1e-13, **values):
    """q at `times` (from 0, increasing), (len(times), 2): the angle ODE theta'' = -V'(theta) / (m l^2)
    (x = l sin theta, y = -l cos theta) of the same V, derived by SymPy, solved by DOP853 at rtol = atol
    = `rtol`."""
    import numpy as np
    from scipy.integrate import solve_ivp
    th = sp.Symbol("theta")
    V, p = _magnet_potential(sp, sp.Symbol("l") * sp.sin(th), -sp.Symbol("l") * sp.cos(th))
    vals = {s: float({**MAGNET, **values}[s.name]) for s in p}
    acc = sp.lambdify(th, (-sp.diff(V, th) / (p[0] * p[1] ** 2)).subs(vals))
    sol = solve_ivp(lambda t, z: [z[1], acc(z[0])], (0.0, times[-1]), [MAGNET_THETA0, 0.0], method="DOP853",
                    rtol=rtol, atol=rtol, t_eval=times)
    if not sol.success:
        raise RuntimeError(f"magnet pendulum reference: {sol.message}")
    return vals[p[1]] * np.stack([np.sin(sol.y[0]), -np.cos(sol.y[0])], axis=1)
