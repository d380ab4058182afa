"""The result of one integration, and its xarray form."""
from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np

from . import _control
from ._docfrag import with_fragments
from .models._fortran_model import model_query
from .schema import CONSTRAINT_LEVELS, RESIDUAL_LEVELS, RESIDUAL_NAMES, STANDARD



def trajectory_residuals(model, t, q, v, a, backend="auto", keep_going=False):
    """Per-sample constraint residuals and energy, computed in Fortran.

    Returns (res, energy): res has shape (nt, 5) with columns
    |g|, |G v + g_t|, |G a + hol_gamma|, |A v + b|, |A a + nh_gamma| (max norms).
    A model item that raises: the exception is raised again after the Fortran
    call returned, or (keep_going) the residuals from there on are NaN.
    """
    nt = len(t)
    if not nt:
        return np.zeros((0, 5)), np.zeros(0)
    with _control.kernel_run() as run:
        res, energy = model_query(model, "residuals", [t, np.asarray(q).T, np.asarray(v).T, np.asarray(a).T],
                                  [(5, nt), (nt,)], [nt], backend)
    if run.error is not None and not keep_going:
        raise run.error
    return res.T.copy(), energy


@dataclass
@with_fragments
class Result:
    r"""One trajectory: what :meth:`pyint.Integrator.integrate` returns.

    Arrays are time-major: ``q[k]`` is the configuration at ``t[k]`` (nt samples).

    Attributes
    ----------
    method : str
        The method's registry name (e.g. "genalpha"; the dataset's ``method``).
    model : Model
        The model integrated.
    t : ndarray, shape (nt,)
        The sample times [s]: t0, every ``every``-th step, the final time (variable steps: the
        accepted steps, or ``t_eval``).
    q, v : ndarray, shape (nt, n)
        Configurations and velocities (for rigid bodies on a Lie group: flat x and R blocks, and
        the body velocities V; the views ``result.x``, ``result.R``, ``result.V``).
    a : ndarray, shape (nt, n)
        The method's acceleration variable: :math:`\ddot q` for the index-1 methods (RK4, block), the
        algorithmic acceleration for generalized-alpha (it differs from :math:`\ddot q` by :math:`O(h)`).
    lam : ndarray, shape (nt, n_hol + n_nonhol)
        The Lagrange multipliers :math:`\lambda = (\lambda_h, \lambda_n)`, holonomic first then
        nonholonomic.
    residual : ndarray, shape (nt, 5)
        The constraint residuals per sample (max norms), columns named by
        :attr:`residual_names`: ``|g|`` (holonomic position, :math:`\lvert g\rvert`), ``|G v + g_t|``
        (holonomic velocity, :math:`\lvert G v + g_t\rvert`), ``|G a + gamma_h|`` (holonomic
        acceleration, :math:`\lvert G a + \gamma_h\rvert`), ``|A v + b|`` (nonholonomic velocity,
        :math:`\lvert A v + b\rvert`), ``|A a + gamma_n|`` (nonholonomic acceleration,
        :math:`\lvert A a + \gamma_n\rvert`); zero where the model has no such
        constraint, NaN where a level does not apply to the method.  The dataset's
        ``violation`` (:meth:`to_xarray`) is :attr:`level_residuals`: per constraint level
        (position, velocity, acceleration), the maximum of that level's columns.
    energy : ndarray, shape (nt,), or None
        The total (mechanical) energy per sample [J]; None when the model defines none.
    stats : dict
        The method's counters: "steps", "newton_iterations", "jacobian_factorizations",
        "failed_steps", ...; variable steps add "accepted", "rejected", "newton_failures".
    params : dict
        The method's parameters (:meth:`pyint.Integrator.params`).
    h : float or ndarray
        The fixed step, or the accepted steps' sizes (variable steps).
    status : str
        "ok", or the failure ("newton_failed", "singular", "nonfinite", "interrupted", ...) of
        a run with ``raise_on_failure=False``.
    message : str
        Why the run stopped early, and what to try (empty when ok).
    cpu_time : float
        The CPU time of the run [s].
    extra : dict
        What else the method records by name: the momenta "p" (symplectic, Galerkin),
        "step_max" (the maxima over every step), "orthogonality" (rigid bodies), ...
    redundant : ndarray of int
        The constraint rows (0-based, holonomic first) that the start found dependent on the
        others and dropped (a redundant mechanism): the run kept an independent subset; their
        residuals are still measured, their multipliers are zero (the forces
        :math:`G^\mathsf{T}\lambda` are unique).

    Examples
    --------
    %(pendulum_start: GeneralizedAlpha)s
    >>> res = GeneralizedAlpha().integrate(model, q0, v0, t_end=1.0, h=1e-3, every=100)
    >>> res.residual.shape, res.residual_names[1]
    ((11, 5), 'holonomic_velocity')
    >>> res.level_names
    ('position', 'velocity', 'acceleration')
    >>> bool(np.all(res.to_xarray()["violation"].sel(constraint_level="velocity").values
    ...             == np.maximum(res.residual[:, 1], res.residual[:, 3])))
    True
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
    redundant: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=int))

    #: The names of the columns of :attr:`residual` (``pyint.schema.RESIDUAL_NAMES``).
    residual_names = RESIDUAL_NAMES
    #: The names of the columns of :attr:`level_residuals`: the dataset's ``constraint_level``.
    level_names = CONSTRAINT_LEVELS

    # -- metrics (the seeds' definitions, maxima over the run) -----------------
    def step_max(self, key):
        """The maximum of ``key`` (eps_pos, eps_vel, eps_acc, energy_change, ...) over every step
        as the method reported it (``extra["step_max"]``), or NaN when it reported none."""
        return float(self.extra.get("step_max", {}).get(key, np.nan))

    def _level_max(self, level, key):
        # NaN propagates (a sample the model could not evaluate; a level that does not apply, NaN
        # throughout: pyint.study.datasets.trajectory_dataset without a); 0 for no samples
        sampled = float(np.max(self.level_residuals[:, level], initial=0.0))
        return sampled if np.isnan(sampled) else float(np.fmax(sampled, self.step_max(key)))

    @property
    def eps_pos(self):
        """``max |g(q)|`` over the run: over the samples and, where the method reports it, over every step."""
        return self._level_max(0, "eps_pos")

    @property
    def eps_vel(self):
        """max of ``|G v + g_t|`` and ``|A v + b|`` over the run (samples, and every step where reported)."""
        return self._level_max(1, "eps_vel")

    @property
    def eps_acc(self):
        """max of ``|G a + gamma|`` and ``|A a + gamma_n|`` over the run (samples, and every step where reported)."""
        return self._level_max(2, "eps_acc")

    @property
    def energy_drift(self):
        """``max |H(t) - H(0)| / |H(0)|`` over the samples and, where the method reports it
        (``step_max["energy_change"]``), over every step (NaN when the model has no conserved
        energy; the absolute drift when H(0) = 0)."""
        if self.energy is None or len(self.energy) == 0 or not self.model.conservative:
            return float("nan")
        h0 = self.energy[0]
        change = float(np.max(np.abs(self.energy - h0)))
        step = self.step_max("energy_change")
        if np.isfinite(step):
            change = max(change, step)
        return change / (abs(h0) if h0 != 0 else 1.0)

    @property
    def level_residuals(self):
        """(nt, 3) residual per constraint level, columns :attr:`level_names` (position, velocity,
        acceleration): the maximum of the :attr:`residual` columns of that level (holonomic and
        nonholonomic; NaN where either is).  The dataset's ``violation``."""
        r = self.residual
        return np.stack([np.maximum.reduce([r[:, k] for k, lev in enumerate(RESIDUAL_LEVELS) if lev == level])
                         for level in CONSTRAINT_LEVELS], axis=1)

    def __getattr__(self, name):
        # the configuration space's own views of q and v (x, R, V of rigid bodies): the model's hook
        if name.startswith("_") or name in ("model", "q", "v"):
            raise AttributeError(name)
        views = getattr(self.model, "result_views", None)
        if views is not None:
            found = views(self)
            if name in found:
                return found[name]
        raise AttributeError(f"{type(self).__name__} has no attribute {name!r}")

    @property
    def ok(self):
        """True when the run ended normally (``status == "ok"``)."""
        return self.status == "ok"

    def summary(self):
        """One line: method, model, samples, status, eps_pos, eps_vel, eps_acc, Newton iterations, CPU time.

        Returns
        -------
        str
        """
        return (f"{self.method} on {self.model.name}: {len(self.t) - 1} samples to t={self.t[-1]:g}, "
                f"status={self.status}, eps_pos={self.eps_pos:.2e}, eps_vel={self.eps_vel:.2e}, "
                f"eps_acc={self.eps_acc:.2e}, newton={self.stats.get('newton_iterations', 0)}, "
                f"cpu={self.cpu_time:.3g}s")

    # -- tables ----------------------------------------------------------------
    @with_fragments
    def to_dataframe(self):
        """The trajectory as a pandas DataFrame: one row per sample, indexed by ``time`` (s).

        One column per time series of :meth:`to_xarray`, named by variable and component:
        ``q[x1]``, ``v[x1]``, ``a[x1]``, ``lam[hol1]``, ``violation[position]``, ``energy``,
        ``energy_error``, and a model's own (rigid bodies: ``x[1,x]``, ``R[1,1,2]``, ...).
        ``df.attrs["units"]`` maps each column to its unit; the run's maxima (``eps_pos``, ...),
        its stats and the attributes of :meth:`to_xarray` (method, model, status, ...) are in
        ``df.attrs`` too.

        Returns
        -------
        pandas.DataFrame
            One row per sample, one column per variable and component.

        Examples
        --------
        %(pendulum_start: GeneralizedAlpha)s
        >>> df = GeneralizedAlpha().integrate(model, q0, v0, t_end=1.0, h=1e-2).to_dataframe()
        >>> df.index.name, "violation[position]" in df.columns, df.attrs["units"]["q[x1]"]
        ('time', True, 'm')
        """
        import pandas as pd

        ds = self.to_xarray()
        columns, units = {}, {}
        for name, var in ds.data_vars.items():
            if not var.dims or var.dims[0] != "time":
                continue
            labels = [ds[d].values.tolist() if d in ds.coords else list(range(n))
                      for d, n in zip(var.dims[1:], var.shape[1:])]
            values = var.values.reshape(len(ds["time"]), -1)
            for j, index in enumerate(np.ndindex(*var.shape[1:])):
                key = f"{name}[{','.join(str(lab[i]) for lab, i in zip(labels, index))}]" if index else str(name)
                columns[key] = values[:, j]
                units[key] = var.attrs.get("units", "")
        df = pd.DataFrame(columns, index=pd.Index(ds["time"].values, name="time"))
        df.attrs = {"units": units, **{str(k): v.item() for k, v in ds.data_vars.items() if not v.dims},
                    **ds.attrs}
        return df

    # -- xarray ----------------------------------------------------------------
    def to_xarray(self):
        """The one trajectory Dataset of pyint (``docs/datasets.md``).

        ``q`` on (time, coord); ``v``, ``a`` on (time, coord) -- on (time, velocity) when the
        configuration space is a Lie group whose velocities are not the derivatives of q;
        ``lam`` on (time, multiplier); ``violation`` on (time, constraint_level) with its maxima
        ``eps_pos``, ``eps_vel``, ``eps_acc``; ``energy`` and ``energy_error``; the method's
        stats.  The model's hook ``dataset_variables(result)`` adds its configuration space's
        own variables (x, R, V of rigid bodies).  Every variable has units and long_name;
        ``violation`` has the columns of :attr:`level_residuals` (coordinate ``constraint_level``
        = :attr:`level_names`).

        Returns
        -------
        xarray.Dataset
            The trajectory with units, long names and the run's parameters as attributes.
        """
        import xarray as xr

        model = self.model
        names = list(model.names())
        units = list(model.units())
        vnames = list(model.velocity_names()) if hasattr(model, "velocity_names") else names
        vdim = "coord" if vnames == names else "velocity"
        nt = len(self.t)
        nmult = self.lam.shape[1] if self.lam.ndim == 2 else 0
        mult = ([f"hol{i + 1}" for i in range(model.n_hol)]
                + [f"nonhol{i + 1}" for i in range(getattr(model, "n_nonhol", 0))])[:nmult]

        def std(name, **over):
            unit, long = STANDARD[name]
            return {"units": over.get("units", unit), "long_name": over.get("long_name", long)}

        one_unit = units[0] if len(set(units)) == 1 else "[q]"
        coords = {
            "time": ("time", self.t, std("time")),
            "coord": ("coord", names, std("coord")),
            "coord_units": ("coord", units, std("coord_units")),
            "multiplier": ("multiplier", mult, std("multiplier")),
            "constraint_level": ("constraint_level", list(CONSTRAINT_LEVELS), std("constraint_level")),
        }
        if vdim != "coord":
            coords["velocity"] = ("velocity", vnames, std("velocity"))
        ds = xr.Dataset(coords=coords)
        vunit = "[v]" if vdim != "coord" else f"{one_unit}/s"
        ds["q"] = (("time", "coord"), self.q, std("q", units=one_unit))
        ds["v"] = (("time", vdim), self.v, std("v", units=vunit))
        if self.a is not None:
            ds["a"] = (("time", vdim), self.a, std("a", units=f"{vunit}/s" if vdim != "coord" else f"{one_unit}/s^2"))
        ds["lam"] = (("time", "multiplier"), np.asarray(self.lam).reshape(nt, nmult), std("lam"))
        ds["violation"] = (("time", "constraint_level"), self.level_residuals, std("violation"))
        for key in ("eps_pos", "eps_vel", "eps_acc"):
            ds[key] = ((), getattr(self, key), std(key))
        if self.energy is not None:
            conserved = bool(model.conservative)
            ds["energy"] = ("time", self.energy, std("energy", long_name="total energy H" if conserved
                                                     else "mechanical energy (not conserved)"))
            if conserved and nt:
                h0 = self.energy[0]
                if h0 != 0:
                    ds["energy_error"] = ("time", (self.energy - h0) / abs(h0), std("energy_error"))
                else:  # relative error undefined: absolute, and say so
                    ds["energy_error"] = ("time", self.energy - h0,
                                          {"units": "J", "long_name": "energy error H(t) - H(0) (H(0) = 0)"})
            ds["energy_drift"] = ((), self.energy_drift,
                                  std("energy_drift") if self.energy is None or not nt or self.energy[0] != 0
                                  else {"units": "J", "long_name": "energy drift max |H(t) - H(0)| (H(0) = 0)"})
        if np.isfinite(self.cpu_time):
            ds["cpu_time"] = ((), self.cpu_time, std("cpu_time"))
        for key, val in self.stats.items():
            ds[key] = ((), val, std(key) if key in STANDARD else {"long_name": key.replace("_", " "), "units": "1"})
        hook = getattr(model, "dataset_variables", None)
        if hook is not None:
            extra_coords, variables = hook(self)
            ds = ds.assign_coords(extra_coords)
            for key, var in variables.items():
                ds[key] = var
        variable_steps = np.ndim(self.h) > 0     # a variable-step run: h holds the accepted steps
        if variable_steps:
            ds["accepted_step"] = (("step",), np.asarray(self.h, dtype=float),
                                   {"long_name": "accepted step size", "units": "s"})
        if len(self.redundant):   # a redundant mechanism: which rows the run dropped
            ds.attrs["redundant_constraints"] = len(self.redundant)
            ds.attrs["redundant_rows"] = ",".join(mult[i] if i < len(mult) else str(i) for i in self.redundant)
        ds.attrs.update({
            "method": self.method,
            "model": model.name,
            "h": float("nan") if variable_steps else self.h,
            "status": self.status,
            "message": self.message,
            "method_params": json.dumps(self.params, sort_keys=True, default=str),
            "model_params": json.dumps(model.describe(), sort_keys=True, default=str),
        })
        return ds
