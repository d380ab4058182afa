"""The names and units of pyint's datasets (``docs/datasets.md`` is the reader's version).

:data:`CONSTRAINT_LEVELS` and :data:`STANDARD` are defined here once; the one producer of a
trajectory Dataset, :meth:`pyint.results.Result.to_xarray`, and the study conventions of
:mod:`pyint.study.datasets` (``annotate``, ``check_conventions``) both read them.
"""
from __future__ import annotations

#: The three constraint levels, in the order of the ``constraint_level`` dimension (the
#: dataset's ``violation``, ``Result.level_residuals``).
CONSTRAINT_LEVELS = ("position", "velocity", "acceleration")
#: The columns of ``Result.residual`` (max norms per sample): |g|, |G v + g_t|, |G a + gamma_h|
#: (holonomic), |A v + b|, |A a + gamma_n| (nonholonomic), and the constraint level of each: the
#: dataset's ``violation`` at a level is the maximum of that level's columns.
RESIDUAL_NAMES = ("holonomic_position", "holonomic_velocity", "holonomic_acceleration", "nonholonomic_velocity",
                  "nonholonomic_acceleration")
RESIDUAL_LEVELS = ("position", "velocity", "acceleration", "velocity", "acceleration")

# Unit placeholders: "[q]" are the units of each coordinate (see the
# ``coord_units`` variable), "[Phi]" those of the model's constraint functions
# g(q) = Phi(q) (not "[g]", which reads as grams), "[lambda]" those of the multipliers.  A study that knows them better sets the
# units itself (its own attrs, or Study(meta=...)).
#: Standard names: name -> (units, long_name).  Text variables have units "".
STANDARD: dict[str, tuple[str, str]] = {
    # dimensions and coordinates
    "time": ("s", "time"),
    "sample": ("1", "output sample index"),
    "h": ("s", "step size h"),
    "method": ("", "integration method"),
    "coord": ("", "generalized coordinate"),
    "coord_units": ("", "units of each generalized coordinate"),
    "constraint_level": ("", "constraint level (position, velocity, acceleration)"),
    "constraint": ("", "constraint"),
    "multiplier": ("", "Lagrange multiplier (constraint)"),
    "velocity": ("", "velocity component (a Lie group's velocities, not q')"),
    "rho_inf": ("1", "spectral radius at infinity rho_inf"),
    "rtol": ("1", "relative tolerance"),
    "initial_condition": ("", "initial condition"),
    "T": ("s", "final time"),
    # time series
    "q": ("[q]", "generalized coordinates q (units of each: coord_units)"),
    "v": ("[q]/s", "generalized velocities v"),
    "a": ("[q]/s^2", "generalized accelerations a"),
    "lam": ("[lambda]", "Lagrange multipliers"),
    "violation": ("[Phi]/s^k", "constraint violation max-norm at each level "
                             "(k = 0, 1, 2 time derivatives of the constraints)"),
    "energy": ("J", "total energy H"),
    "energy_error": ("1", "relative energy error (H(t) - H(0)) / |H(0)|"),
    # metrics (the seeds' violation and energy measures): maxima over the run
    "eps_pos": ("[Phi]", "position-level constraint violation eps(Phi) = max ||g(q)||_inf"),
    "eps_vel": ("[Phi]/s", "velocity-level constraint violation eps(Phi') = max ||G v||_inf or ||A v + b||_inf"),
    "eps_acc": ("[Phi]/s^2", "acceleration-level constraint violation eps(Phi'') = max ||G a + (G v)_q v||_inf"),
    "energy_drift": ("1", "energy drift delta(H) = max |H(t) - H(0)| / |H(0)|"),
    "error": ("[q]", "max error against the reference solution"),
    "order": ("1", "measured order: slope of log(error) against log(h)"),
    "cpu_time": ("s", "CPU time of the integration"),
    "newton_iterations": ("1", "total number of Newton iterations"),
    "jacobian_factorizations": ("1", "number of iteration-matrix factorizations"),
    "failed_steps": ("1", "number of failed or rejected steps"),
    "n_steps": ("1", "number of time steps"),
    "rhs_evaluations": ("1", "number of right-hand-side evaluations"),
    "orthogonality": ("1", "orthogonality error max ||R^T R - I||_F"),
    "direction_error": ("1", "direction-vector error max |e^T e - 1|"),
    # the runner's per-case bookkeeping
    "status": ("", "case status: ok, failed, crashed, skipped (or the study's own)"),
    "message": ("", "why the case did not end ok (empty when ok)"),
    "case_attrs": ("", "attributes of each case's own dataset (JSON)"),
}

