"""Galerkin-Lobatto variational integrator for nonholonomic Hamiltonian systems
(seed 004: Man, Gao, Zhong 2020), Fortran kernel fortran/galerkin.f90.

The model is used in its dual-variable form (fortran/core/dual_form.f90):
H(q, p) = 1/2 p^T M(q)^{-1} p + V(q), q' = H_p, p' = -H_q - A^T lam,
A(q) H_p + b = 0, everything built from the items of the shared model
interface.  One step of degree s (s = 1..8) solves for the control points
q_1..q_s, phat_0..phat_s, the end momentum P_s and lam_1..lam_s
(2(s+1)n + s c unknowns) by simplified Newton (the LU of the analytic Jacobian kept
across iterations and steps, refreshed when the one Newton rule asks); see the
kernel's header for the equations.  Output per step: (q_s, P_s, lam_s).

Two treatments of the multiplier (``variant``; measured in
tests/test_galerkin.py and docs/galerkin_snakeboard.md):

* ``"reduced"`` (default): lam_0 of each step is an *unknown* of the step, and
  the c extra equations say the multiplier polynomial has degree s - 1 (its
  degree-s coefficient sum_j w_j lam_j, w_j = 1 / prod_{k != j}(d_j - d_k),
  vanishes; for s = 1: one constant lam per step).  The step is then a map
  (q, P) -> (q, P), symmetric, with the constraint on P_s.  Same orders as
  "spec" on the skate; no spurious reversal on the snakeboard (locked
  steering stays on its circle with constant speed over T = 2000 for s = 4,
  h = 1/16 and s = 1, h = 1/2); lam_s converges for every s, with order
  1, 1, 2, 3, 4 for s = 1..5 (measured, skate with torsion spring).
* ``"spec"``: the carried-multiplier reconstruction of seed 004's lost
  eqs. (10)-(16), lam_0 = lam_s of the previous step
  (see the known limitation below).

What both variants give (measured, tests/test_galerkin.py):

* order s + 1 in q and p for odd s, s for even s (seed 004, Fig. 1);
* A(q) H_p(q, P) + b = 0 to round-off at every step (the constraint is one
  of the step equations, with the canonical momentum);
* symmetric: a step with h followed by one with -h returns to the start;
* on the skate, a bounded energy error without drift over T = 2000 (for
  "spec" not on the snakeboard: see the known limitation below; "reduced"
  keeps it bounded there too);
* without constraints it is Lobatto IIIA-IIIB, of order 2s.

The multiplier ("spec").  The nodal lam_s is the end control point of the multiplier
polynomial.  For even s the nodal lam does not converge (measured), so we do not
report it: ``Result.lam`` is NaN for even s and the nodal values are in
``Result.extra["lam_nodal"]`` for every s.  Measured on the skate (T = 2,
eta = 1/2..1/16): the nodal lam converges with order 2, 0, 2, 2, 4, 4 for
s = 1..6, i.e. state order - 2 for s >= 2 (only s = 2 fails to converge) and 2
for s = 1 (exact to round-off on the plain skate, where theta = omega t).
With "reduced" every s reports lam_s (orders above).

Known limitation of "spec" (measured; see studies/galerkin_nonholonomic.py).  lam_0 of
a step is the previous step's lam_s, so the multiplier is continuous across
steps.  For s = 1 (constant M, no potential) the step then reduces to
phat_n = (I - 2 Pi(q_n)) phat_{n-1}, q_{n+1} = q_n + h M^{-1} phat_n,
P_n = (I - Pi(q_n)) phat_{n-1} with Pi = A^T (A M^{-1} A^T)^{-1} A M^{-1}: the node
impulse *reflects* the control momentum instead of projecting it, and its
constraint-violating part survives with alternating sign.  On the skate this
is harmless; on the seed-004 snakeboard with locked steering (two constraints
whose force directions turn with theta) that part grows at a rate independent
of h (about 1.3/s for phi = pi/8, 0.7/s for phi = pi/32, s = 4) and the board
periodically reverses its direction on the circle (energy dips to ~5 %),
although the exact motion has constant speed.  The constraint stays at
round-off throughout.

Result fields: q = q_s, v = H_p(q_s, P_s) = M^{-1} P_s, lam as above, a = NaN
(the method has no acceleration variable: acceleration-level residuals are
not defined for it), extra = {"p": P_s, "lam_nodal": lam_s}.

Registered methods.  The shared test list instantiates ``cls()``, so one
class per degree is registered: ``galerkin_s1`` .. ``galerkin_s4`` (orders
2, 2, 4, 4; default variant "reduced", lambda_order 1, 1, 2, 3).  Any
other degree: ``GalerkinLobatto(s=...)`` (not registered;
its instances carry their own ``order``).
"""
from __future__ import annotations

import numpy as np

from .. import _fortran
from .. import _validate as V
from ..integrator import Integrator, register
from ..options import Options, method_id, real_stats, stat_names

#: Largest interpolation degree the kernel supports (fortran/galerkin.f90: GL_SMAX).
S_MAX = 8

#: Multiplier treatments (fortran/galerkin.f90: GL_SPEC, GL_REDUCED).
_OPTIONS = Options("galerkin")
VARIANTS = _OPTIONS.choices("variant")
DEFAULT_VARIANT = "reduced"


def galerkin_order(s):
    """Convergence order in q and p of degree s: s + 1 for odd s, s for even s (seed 004, eq. (29))."""
    return s + 1 if s % 2 else s


def _degree(s):
    s = V.as_int(s, "s", minimum=1)
    if s > S_MAX:
        raise ValueError(f"s must be in 1..{S_MAX}, got {s}")
    return s


def lobatto_rule(s):
    """Lobatto nodes d (0 = d_0 < ... < d_s = 1), weights b and differentiation
    matrix D[v, j] = l_j'(d_v) on [0, 1], computed (and checked) by the Fortran kernel."""
    s = _degree(s)
    d, b, dm = np.zeros(s + 1), np.zeros(s + 1), np.zeros((s + 1, s + 1), order="F")
    info = _fortran.galerkin_rule(s, d, b, dm)
    if info != 0:
        raise RuntimeError(f"the Lobatto rule of degree {s} failed its checks (info={info})")
    return d, b, np.ascontiguousarray(dm)


class GalerkinLobatto(Integrator):
    r"""Galerkin-Lobatto variational integrator of degree s for nonholonomic systems (seed 004).

    The discrete Lagrange-d'Alembert principle on polynomials of degree s, with the
    s + 1 Lobatto nodes as quadrature: order s + 1 for odd s, s for even s (seed 004 eq. (29),
    Fig. 1); the nonholonomic constraint A v + b = 0 holds at the nodes.  Fixed steps only.

    Parameters
    ----------
    s : int, default 3
        The interpolation degree, 1 to 8 (s + 1 Lobatto nodes per step).
    tol : float, default 1e-12
        Newton's tolerance, in the one termination rule of every implicit kernel: stop when
        :math:`\frac{\theta}{1 - \theta} \lvert\Delta\rvert \le \mathrm{tol}/10` (:math:`\theta` the
        contraction rate, :math:`\Delta` the increment; positions against :math:`1 + \lvert q\rvert`,
        momenta against :math:`1 + \lvert p\rvert`, :math:`h \lambda` in momentum units), or at the
        round-off floor.
    maxit : int, default 20
        Newton iterations per step.
    variant : {"reduced", "spec"}, default "reduced"
        "reduced": lam_0 is an unknown of the step and the multiplier polynomial has degree
        s - 1; "spec": lam_0 = lam_s of the previous step (a reconstruction of seed 004's lost
        eqs. (10)-(16)).

    Examples
    --------
    >>> from pyint import GalerkinLobatto, ChaplyginSleigh
    >>> model = ChaplyginSleigh()
    >>> q0, v0 = model.initial_state()
    >>> res = GalerkinLobatto(s=3).integrate(model, q0, v0, t_end=1.0, h=1e-2)
    >>> res.method, res.status, res.eps_vel < 1e-9
    ('galerkin_s3', 'ok', True)
    """

    name = "galerkin"
    ADAPTIVE_REFUSAL = ("a variational (Galerkin) integrator keeps its discrete variational structure and "
                        "momentum behaviour only at a fixed step: variable steps destroy what it preserves")
    order = 4                  # of the default degree s = 3; instances set their own
    order_source = "seed 004 eq. (29), Fig. 1: order s + 1 for odd s, s for even s"
    supports = frozenset({"nonholonomic"})
    keeps = {"nonholonomic": frozenset({"velocity"})}
    invariants = frozenset({"symmetric", "energy_bounded"})   # of the default variant "reduced"
    KERNEL = method_id("galerkin")   # fortran/galerkin.f90
    STATS = stat_names("galerkin")
    STATS_REALS = real_stats("galerkin")

    def __init__(self, s=3, tol=1e-12, maxit=20, variant=DEFAULT_VARIANT):
        self.s = s = _degree(s)
        if variant not in VARIANTS:
            raise ValueError(f"variant must be one of {sorted(VARIANTS)}, got {variant!r}")
        self.variant = variant
        if variant == "spec":
            self.invariants = frozenset({"symmetric"})   # energy not bounded on the snakeboard
            self.lambda_order = 2 if s in (1, 3) else None
        else:
            self.lambda_order = {1: 1, 2: 1, 3: 2, 4: 3, 5: 4}.get(s)   # measured; s >= 6: round-off
        self.name = f"galerkin_s{s}"
        self.order = galerkin_order(s)
        self.tol = V.as_real(tol, "tol", positive=True)
        self.maxit = V.as_int(maxit, "maxit", minimum=1)

    @property
    def reports_multiplier(self):
        """True when the nodal lam_s converges to the multiplier (variant "reduced", or odd s)."""
        return self.variant == "reduced" or self.s % 2 == 1

    def params(self):
        return {"s": self.s, "variant": self.variant, "order": self.order, "tol": self.tol,
                "maxit": self.maxit}

    def kernel_options(self, model):
        # lambda0, the last of the reals, is kernel_start's (appended by the driver call)
        return _OPTIONS.pack(stages=self.s, variant=self.variant, maxit=self.maxit, tol=self.tol, lambda0=())

    def kernel_start(self, model, t0, q0, v0):
        """lam_0: the consistent multiplier of (q0, v0) (the index-1 system, NumPy); of a redundant
        mechanism's kept rows, those the kernel runs on (pyint.models.subset)."""
        from ..models.subset import independent_subset
        return tuple(independent_subset(model, t0, q0).consistent_acceleration(t0, q0, v0)[2])

    def kernel_aux(self, model):
        return {"p": model.n}

    def _driver_raw(self, model, buf, nl, istat):
        raw = super()._driver_raw(model, buf, nl, istat)
        # no acceleration variable: a and the acceleration-level residuals are not defined
        raw["a"] = np.full_like(raw["a"], np.nan)
        if model.n_nonhol:
            raw["residual"][:, 4] = np.nan
        raw["step_max"]["eps_acc"] = np.nan if model.n_nonhol else 0.0
        raw["extra"]["lam_nodal"] = raw["lam"]
        if not self.reports_multiplier:
            raw["lam"] = np.full_like(raw["lam"], np.nan)
        return raw


def _fixed_degree(s, lambda_order=None, doc=""):
    """A registered subclass of fixed degree s (the shared tests call cls())."""

    def __init__(self, tol=1e-12, maxit=20, variant=DEFAULT_VARIANT):
        GalerkinLobatto.__init__(self, s=s, tol=tol, maxit=maxit, variant=variant)

    attrs = {"name": f"galerkin_s{s}", "order": galerkin_order(s), "__init__": __init__,
             "order_source": GalerkinLobatto.order_source
                             + ("; lambda_order measured (variant 'reduced', skate with torsion spring)"
                                if lambda_order is not None else ""),
             "__doc__": f"Galerkin-Lobatto of degree s = {s} (order {galerkin_order(s)}). {doc}"}
    if lambda_order is not None:
        attrs["lambda_order"] = lambda_order
    return register(type(f"GalerkinS{s}", (GalerkinLobatto,), attrs))


# lambda_order: of the default variant "reduced", measured (skate with torsion
# spring, tests/test_galerkin.py).  With variant="spec" the instance reports
# lam only for odd s (order 2 for s = 1, 3; the even-s nodal lam does
# not converge, measured).
GalerkinS1 = _fixed_degree(1, lambda_order=1, doc="lam_s converges with order 1 (one lam per step).")
GalerkinS2 = _fixed_degree(2, lambda_order=1, doc="lam_s converges with order 1.")
GalerkinS3 = _fixed_degree(3, lambda_order=2, doc="lam_s converges with order 2.")
GalerkinS4 = _fixed_degree(4, lambda_order=3, doc="lam_s converges with order 3.")
