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


from .. import _fortran
from ..models._fortran_model import model_args
from ..integrator import Integrator, kernel_stats, output_buffers, raw_result, register

#: The names of rk4_index1_run's stats array, in its order (fortran/api/api_rk4_index1.f90).
STATS = ("index1_solves",)


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

    def _run(self, model, t0, h, nsteps, every, q0, v0, backend):
        args = model_args(model, backend)
        nl = model.n_hol + model.n_nonhol
        buf = output_buffers(model.n, nl, nsteps, every)
        istat, stats = _fortran.rk4_index1_run(
            args["model_id"], args["ipar"], args["rpar"], args["usercb"], args["mh"], args["mn"],
            args["mflags"], t0, h, nsteps, every, q0, v0,
            buf["tout"], buf["qout"], buf["vout"], buf["aout"], buf["lout"])
        return raw_result(buf, nl, istat, kernel_stats(STATS, istat, stats))
