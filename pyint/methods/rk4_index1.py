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

from .._docfrag import with_fragments
from ..integrator import Integrator, register
from ..options import Options, method_id, stat_names


_OPTIONS = Options("rk4_index1")


@register
@with_fragments
class RK4Index1(Integrator):
    r"""Classical RK4 on the index-1 form (seed 003, equation (7)), holonomic and nonholonomic.

    The accelerations and multipliers come from the index-1 system
    :math:`\begin{bmatrix} M & C^\mathsf{T} \\ C & 0 \end{bmatrix}` (:math:`C` the constraint
    rows :math:`G` and :math:`A`) at every stage; the acceleration-level constraints hold to
    round-off, the position and velocity levels drift (order 4: Hairer, Norsett, Wanner, Solving
    ODEs I, II.1).  Variable steps (``rtol``): the FSAL embedded order-3 estimate, per step; the
    global error is proportional to ``rtol`` with a constant that grows with the run's steps and
    the flow's amplification (docs/adaptive_steps.md section 2.1: per-method tolerances).

    Parameters
    ----------
    projection : {"none", "steps"}, default "none"
        "none": seed 003's scheme (positions and velocities drift); "steps": every step
        projected onto the constraints (q onto g = 0, v onto the velocity rows, M-orthogonal;
        Hairer, Lubich, Wanner, GNI IV.4), which keeps the order, holds the drift at round-off
        and passes singular positions (where the rank of [G; A] drops), at which the plain
        scheme stops with a SingularPositionError.

    Examples
    --------
    %(pendulum_start: RK4Index1)s
    >>> res = RK4Index1(projection="steps").integrate(model, q0, v0, t_end=1.0, h=1e-3)
    >>> res.status, res.eps_pos < 1e-12
    ('ok', True)
    """

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
        from .. import _validate as V
        self.projection = V.as_projection(projection)

    def params(self):
        return {} if self.projection == "none" else {"projection": self.projection}

    def kernel_options(self, model):
        return _OPTIONS.pack(project=int(self.projection == "steps"))
