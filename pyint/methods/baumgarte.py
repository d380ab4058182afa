"""Baumgarte-stabilized classical Runge-Kutta 4 on the index-1 form: the
baseline of seed 002 (Figs 4-5).  Fortran kernel: fortran/baumgarte.f90.

The acceleration comes from the KKT system with Baumgarte's feedback on the
position residual e = g(t, q):

    M a + G^T lam = f,    G a + hol_gamma + 2 alpha (G v + g_t) + beta^2 g = 0,

so e'' + 2 alpha e' + beta^2 e = 0 along the flow: drift off the constraints
is damped (not removed), and neither constraint level holds to round-off.
Classical RK4 integrates (q, v) with order 4.

Defaults alpha = beta = 5 (1/s): a critically damped feedback with time
constant 0.2 s, fast against the triple pendulum's motion (periods of
several seconds at g = 1) and well inside RK4's stability interval at the
seed's h = 0.12 (h alpha = 0.6 < 2.78).  alpha = beta = 0 is the plain
index-1 ODE, which drifts quadratically.
"""
from __future__ import annotations

from .. import _validate as V
from .._docfrag import with_fragments
from ..integrator import Integrator, register
from ..options import Options, method_id, stat_names


_OPTIONS = Options("baumgarte")


@register
@with_fragments
class BaumgarteRK4(Integrator):
    r"""Classical RK4 on the Baumgarte-stabilized index-1 form (holonomic models).

    The constraint :math:`g = 0` is replaced by the stabilized acceleration-level equation
    :math:`\ddot e + 2 \alpha \dot e + \beta^2 e = 0` for :math:`e = g(q)` (Baumgarte 1972), and the resulting ODE is
    integrated by classical Runge-Kutta 4 (Hairer, Norsett, Wanner, Solving ODEs I, II.1):
    order 4; the drift is damped, not removed.  Seed 002's baseline.

    Parameters
    ----------
    alpha, beta : float, default 5.0
        The damping and stiffness [1/s] of the feedback :math:`\ddot e + 2 \alpha \dot e + \beta^2 e = 0`
        on the position residual (:math:`\alpha, \beta \ge 0`).
    projection : {"none", "steps"}, default "none"
        "none": the stabilized ODE alone; "steps": every step projected onto :math:`g = 0` and
        :math:`G v + g_t = 0` (:math:`M`-orthogonal; Hairer, Lubich, Wanner, GNI IV.4): the drift stays at
        round-off and the method passes singular positions (where the rank of :math:`G` drops), at
        which it otherwise stops with a SingularPositionError.

    Examples
    --------
    %(pendulum_start: BaumgarteRK4)s
    >>> res = BaumgarteRK4(alpha=5.0, beta=5.0).integrate(model, q0, v0, t_end=1.0, h=1e-3)
    >>> res.status, res.eps_pos < 1e-6
    ('ok', True)
    """

    name = "baumgarte_rk4"
    order = 4
    lambda_order = 4
    order_source = ("classical Runge-Kutta 4 (Hairer, Norsett, Wanner, Solving ODEs I, II.1) on the "
                    "Baumgarte-stabilized ODE, whose stabilization vanishes on the exact solution "
                    "(Baumgarte 1972); lam is a function of (q, v, t); seed 002's baseline")
    supports = frozenset({"holonomic"})
    keeps: dict = {}
    invariants = frozenset()
    KERNEL = method_id("baumgarte")   # fortran/baumgarte.f90
    STATS = stat_names("baumgarte")

    def __init__(self, alpha=5.0, beta=5.0, projection="none"):
        self.alpha = V.as_real(alpha, "alpha", lo=0.0)
        self.beta = V.as_real(beta, "beta", lo=0.0)
        self.projection = V.as_projection(projection)

    def params(self):
        extra = {} if self.projection == "none" else {"projection": self.projection}
        return {"alpha": self.alpha, "beta": self.beta, **extra}

    def kernel_options(self, model):
        return _OPTIONS.pack(project=int(self.projection == "steps"), alpha=self.alpha, beta=self.beta)
