"""The result of one integration, and its xarray form."""
from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np

from . import _control, _fortran
from .models._fortran_model import model_args

#: Constraint levels, in the order of the ``residual`` columns.
CONSTRAINT_LEVELS = ("position", "velocity", "acceleration")


def trajectory_residuals(model, t, q, v, a, backend="auto", keep_going=False):
    """Per-sample constraint residuals and energy, computed in Fortran.

    Returns (res, energy): res has shape (nt, 5) with columns
    |g|, |G v + g_t|, |G a + hol_gamma|, |A v + b|, |A a + nh_gamma| (max norms).
    A model item that raises: the exception is raised again after the Fortran
    call returned, or (keep_going) the residuals from there on are NaN.
    """
    nt = len(t)
    args = model_args(model, backend)
    res = np.zeros((5, nt), order="F")
    energy = np.zeros(nt)
    if nt:
        with _control.kernel_run() as run:
            ierr = _fortran.model_residuals(
                args["model_id"], args["ipar"], args["rpar"], args["usercb"], args["mh"], args["mn"],
                args["mflags"], np.asarray(t, dtype=float), np.asfortranarray(np.asarray(q).T),
                np.asfortranarray(np.asarray(v).T), np.asfortranarray(np.asarray(a).T), res, energy)
        if run.error is not None and not keep_going:
            raise run.error
        if ierr != 0:
            raise RuntimeError(f"model_residuals failed (ierr={ierr})")
    return res.T.copy(), energy


@dataclass
class Result:
    """One trajectory.

    Arrays are time-major: ``q[k]`` is the configuration at ``t[k]``.
    ``lam`` holds the multipliers, holonomic first then nonholonomic.
    ``residual[k]`` holds ``|g|, |Gv+g_t|, |Ga+gamma|, |Av+b|, |Aa+gamma_n|`` at
    ``t[k]`` (max norms; zero where the model has no such constraint).
    ``a`` is the method's acceleration variable (for generalized-alpha the
    algorithmic acceleration, which differs from qddot by O(h)).
    """

    method: str
    model: object
    t: np.ndarray
    q: np.ndarray
    v: np.ndarray
    a: np.ndarray
    lam: np.ndarray
    residual: np.ndarray
    energy: np.ndarray | None
    stats: dict
    params: dict
    h: float
    status: str = "ok"
    message: str = ""
    cpu_time: float = float("nan")
    extra: dict = field(default_factory=dict)

    # -- metrics (the seeds' definitions, maxima over the run) -----------------
    # Maxima over the run: over every step where the kernel tracked them (the driver,
    # fortran/core/driver.f90: ``extra["step_max"]``), so a transient between samples counts.
    def _step_max(self, key):
        return float(self.extra.get("step_max", {}).get(key, 0.0))

    @property
    def eps_pos(self):
        """``max |g(q)|`` over the run."""
        return max(float(np.max(self.residual[:, 0], initial=0.0)), self._step_max("eps_pos"))

    @property
    def eps_vel(self):
        """max of ``|G v + g_t|`` and ``|A v + b|`` over the run."""
        return max(float(np.max(self.residual[:, [1, 3]], initial=0.0)), self._step_max("eps_vel"))

    @property
    def eps_acc(self):
        """max of ``|G a + gamma|`` and ``|A a + gamma_n|`` over the run."""
        return max(float(np.max(self.residual[:, [2, 4]], initial=0.0)), self._step_max("eps_acc"))

    @property
    def energy_drift(self):
        """``max |H(t) - H(0)| / |H(0)|`` (NaN when the model has no conserved energy;
        the absolute drift when H(0) = 0)."""
        if self.energy is None or len(self.energy) == 0 or not self.model.conservative:
            return float("nan")
        h0 = self.energy[0]
        change = max(float(np.max(np.abs(self.energy - h0))), self._step_max("energy_change"))
        return change / (abs(h0) if h0 != 0 else 1.0)

    @property
    def level_residuals(self):
        """(nt, 3) residual per constraint level: position, velocity, acceleration."""
        r = self.residual
        return np.stack([r[:, 0], np.maximum(r[:, 1], r[:, 3]), np.maximum(r[:, 2], r[:, 4])], axis=1)

    @property
    def ok(self):
        return self.status == "ok"

    def summary(self):
        return (f"{self.method} on {self.model.name}: {len(self.t) - 1} samples to t={self.t[-1]:g}, "
                f"status={self.status}, eps_pos={self.eps_pos:.2e}, eps_vel={self.eps_vel:.2e}, "
                f"eps_acc={self.eps_acc:.2e}, newton={self.stats.get('newton_iterations', 0)}, "
                f"cpu={self.cpu_time:.3g}s")

    # -- xarray ----------------------------------------------------------------
    def to_xarray(self):
        """Dataset with dimensions time, coord, multiplier, constraint_level."""
        import xarray as xr

        names = list(self.model.names())
        units = list(self.model.units())
        nmult = self.lam.shape[1]
        mult = [f"hol{i}" for i in range(self.model.n_hol)] + [f"nonhol{i}" for i in range(self.model.n_nonhol)]
        ds = xr.Dataset(
            coords={
                "time": ("time", self.t, {"units": "s", "long_name": "time"}),
                "coord": ("coord", names, {"units": "", "long_name": "generalized coordinate"}),
                "multiplier": ("multiplier", mult[:nmult], {"units": "", "long_name": "Lagrange multiplier"}),
                "constraint_level": ("constraint_level", list(CONSTRAINT_LEVELS),
                                     {"units": "", "long_name": "constraint level"}),
            }
        )
        ds["q"] = (("time", "coord"), self.q, {"long_name": "generalized coordinates",
                                               "units": ",".join(units)})
        ds["v"] = (("time", "coord"), self.v, {"long_name": "generalized velocities",
                                               "units": ",".join(f"({u})/s" for u in units)})
        ds["a"] = (("time", "coord"), self.a, {"long_name": "acceleration variable of the method",
                                               "units": ",".join(f"({u})/s^2" for u in units)})
        ds["lam"] = (("time", "multiplier"), self.lam, {"long_name": "Lagrange multipliers",
                                                        "units": "model force units"})
        ds["residual"] = (("time", "constraint_level"), self.level_residuals,
                          {"long_name": "constraint residual (max norm)", "units": "model units"})
        if self.energy is not None:
            ds["energy"] = ("time", self.energy, {"long_name": "total energy" if self.model.conservative
                                                  else "mechanical energy (not conserved)", "units": "J"})
        scalars = {
            "eps_pos": (self.eps_pos, "max |g(q)| over the run"),
            "eps_vel": (self.eps_vel, "max |G v + g_t|, |A v + b| over the run"),
            "eps_acc": (self.eps_acc, "max |G a + gamma|, |A a + gamma_n| over the run"),
            "energy_drift": (self.energy_drift, "max |H - H0| / |H0|"),
            "cpu_time": (self.cpu_time, "CPU time of the integration"),
        }
        for key, (val, long) in scalars.items():
            ds[key] = ((), val, {"long_name": long, "units": "s" if key == "cpu_time" else "1"})
        for key, val in self.stats.items():
            ds[key] = ((), val, {"long_name": key.replace("_", " "), "units": "1"})
        ds.attrs.update({
            "method": self.method,
            "model": self.model.name,
            "h": self.h,
            "status": self.status,
            "message": self.message,
            "method_params": json.dumps(self.params, sort_keys=True, default=str),
            "model_params": json.dumps(self.model.describe(), sort_keys=True, default=str),
        })
        return ds
