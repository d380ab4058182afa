"""Classical Runge-Kutta 4 on the index-1 form (seed 003 eq. (7)); Fortran kernel
fortran/rk4_index1.f90.

The constrained system is integrated as the ODE q' = v, v' = a(t, q, v), with
a (and the multipliers) from the index-1 system

    M a + G^T lam_h + A^T lam_n = f,   G a + gamma_h = 0,   A a + gamma_n = 0

at every stage.  It is seed 003's Runge-Kutta baseline (Table 3, Fig. 6).
Fourth order; the acceleration-level constraints hold to round-off at every
sample (a is solved there), the position and velocity levels drift.  An
unconstrained model (e.g. the independent-coordinate ODE (14)) is plain RK4.
"""
from __future__ import annotations

from ..integrator import Integrator, register
from ..options import Options, method_id, stat_names


_OPTIONS = Options("rk4_index1")


@register
class RK4Index1(Integrator):
    """Classical RK4 on the index-1 form (no stabilization, no projection)."""

    name = "rk4_index1"
    order = 4
    lambda_order = 4
    order_source = ("classical Runge-Kutta 4 (Hairer, Norsett, Wanner, Solving ODEs I, II.1) on the "
                    "index-1 ODE of seed 003 eq. (7); lam is a function of (q, v, t)")
    supports = frozenset({"holonomic", "nonholonomic"})
    keeps = {"holonomic": frozenset({"acceleration"}), "nonholonomic": frozenset({"acceleration"})}
    KERNEL = method_id("rk4_index1")   # fortran/rk4_index1.f90
    #: variable steps: the FSAL embedded order-3 estimate, per step (docs/adaptive_steps.md section 2)
    ADAPTIVE_REFUSAL = None
    ADAPTIVE_PER_UNIT_STEP = False
    ACCELERATION_IS_QDDOT = True
    STATS = stat_names("rk4_index1")

    def __init__(self, projection="none"):
        """projection: "none" (seed 003's scheme: the position and velocity levels drift) or
        "steps": every step projected onto the constraints (q onto g = 0, v onto the velocity
        rows, M-orthogonal; Hairer, Lubich, Wanner, GNI IV.4), which keeps the order, holds the
        drift at round-off and passes singular positions (where the rank of [G; A] drops), at
        which the plain scheme stops with a SingularPositionError (fortran/core/kkt.f90)."""
        from .. import _validate as V
        self.projection = V.as_projection(projection)

    def params(self):
        return {} if self.projection == "none" else {"projection": self.projection}

    def kernel_options(self, model):
        return _OPTIONS.pack(project=int(self.projection == "steps"))
