"""The result of a reference solve, and its NetCDF round trip (what the cache stores)."""
from __future__ import annotations

import json

import numpy as np

from ..results import Result

#: Columns of ``Result.residual``, as the ``constraint`` coordinate of the dataset.
RESIDUAL_COLUMNS = ("hol_position", "hol_velocity", "hol_acceleration", "nonhol_velocity",
                    "nonhol_acceleration")

#: Long names of the statistics (all counts except initial_correction).
STAT_NAMES = {
    "steps": "successful internal IDA steps",
    "residual_evaluations": "residual evaluations by IDA",
    "jacobian_evaluations": "Jacobian evaluations by IDA (analytic Jacobian of the form)",
    "failed_step_attempts": "rejected IDA step attempts (error-test and convergence failures)",
    "restarts": "IDA restarts after a re-selection of the dummy derivatives",
    "initial_correction": "largest change IDACalcIC made to the computed initial values, "
                          "in units of rtol |y| + atol",
    "output_correction": "largest change the completion of the algebraic q, v made at an output time, "
                         "in units of rtol |x| + atol",
    "step_residual_position": "largest |g| over the accepted IDA steps",
    "step_residual_velocity": "largest |G v + g_t|, |A v + b| over the accepted IDA steps",
    "step_residual_acceleration": "largest |G a + gamma|, |A a + gamma_n| over the accepted IDA steps",
}

#: Statistics that are counts (the others are floats).
_COUNTS = ("steps", "residual_evaluations", "jacobian_evaluations", "failed_step_attempts", "restarts")


class ReferenceResult(Result):
    r"""A :class:`pyint.results.Result` from IDA: ``method == "ida"``, ``params["form"]`` the form,
    ``stats`` IDA's statistics, ``h`` NaN (adaptive steps).  ``extra`` holds form-specific
    arrays over time (``mu`` for the GGL form) and, for the dummy-derivative form, the
    list ``selections`` of {t, q, v}: from time :math:`t` on, the coordinates whose :math:`\dot q` and
    :math:`\dot v` were dummies.  ``cache_file``/``from_cache``: set by ``pyint.reference.solve``
    (``cache_note`` says why a result was not cached).  ``error_estimate``: None, or
    {"q", "v", "lam"} -> arrays of the same shape as q, v, lam: the absolute difference
    to a solution at a tenfold tighter tolerance (``solve(..., error_estimate=True)``), with
    ``error_estimate_rtol`` that tolerance.

    Examples
    --------
    >>> import numpy as np
    >>> from pyint.models import PendulumChain
    >>> from pyint.reference import integrate
    >>> model = PendulumChain(n_links=2)
    >>> q0, v0 = model.initial_state()
    >>> r = integrate(model, np.linspace(0.0, 1.0, 5), q0, v0)
    >>> r.method, r.params["form"], r.q.shape
    ('ida', 'dummy_derivative', (5, 4))
    """

    cache_file = None
    from_cache = False
    cache_note = ""
    cache_key = None  # (key, description) when the result has a cache entry
    error_estimate = None
    error_estimate_rtol = None

    #: IDA's maxima over its accepted steps, under the names every Result uses (Result.step_max)
    STEP_MAX_STATS = {"eps_pos": "step_residual_position", "eps_vel": "step_residual_velocity",
                      "eps_acc": "step_residual_acceleration"}

    def step_max(self, key):
        """The maximum of ``key`` over IDA's accepted steps (its stats ``step_residual_*``), or NaN."""
        stat = self.STEP_MAX_STATS.get(key)
        return float(self.stats[stat]) if stat in self.stats else super().step_max(key)

    def error_estimate_max(self):
        """max over time and components of the estimated error in q and v (None without an estimate)."""
        if self.error_estimate is None:
            return None
        return float(max(np.max(self.error_estimate["q"], initial=0.0), np.max(self.error_estimate["v"], initial=0.0)))

    @property
    def form(self):
        return self.params["form"]

    @property
    def rtol(self):
        return self.params["rtol"]

    @property
    def atol(self):
        return self.params["atol"]

    def to_xarray(self):
        ds = super().to_xarray()
        ds = ds.assign_coords(constraint=("constraint", list(RESIDUAL_COLUMNS),
                                          {"units": "", "long_name": "constraint kind and level"}))
        ds["constraint_residual"] = (("time", "constraint"), self.residual,
                                     {"long_name": "constraint residual per kind and level (max norm)",
                                      "units": "model units"})
        for key, val in self.extra.items():
            if key == "selections":
                continue
            ds[key] = (("time", f"{key}_index"), np.asarray(val, dtype=float),
                       {"long_name": f"{key} (form variable)", "units": "model units"})
        for key in STAT_NAMES:
            if key in ds:
                ds[key].attrs["long_name"] = STAT_NAMES[key]
        if self.error_estimate is not None:
            dims = {"q": ("time", "coord"), "v": ("time", "coord"), "lam": ("time", "multiplier")}
            for key, val in self.error_estimate.items():
                ds[f"error_estimate_{key}"] = (dims[key], np.asarray(val, dtype=float), {
                    "long_name": f"estimated absolute error of {key}: |{key}(rtol) - {key}(rtol_estimate)|",
                    "units": ds[key].attrs.get("units", "model units")})
            ds.attrs["error_estimate_rtol"] = float(self.error_estimate_rtol)
        from .forms import FORMS

        ds.attrs.update({
            "form": self.form,
            "form_description": FORMS[self.form].description,
            "rtol": float(self.rtol),
            "atol": float(self.atol),
            "selections": json.dumps(self.extra.get("selections", []), default=float),
        })
        return ds

    @classmethod
    def from_xarray(cls, ds, model):
        """Rebuild the result of ``to_xarray`` (``model`` is the model it was computed for)."""
        params = json.loads(ds.attrs["method_params"])
        stats = {}
        for key in STAT_NAMES:
            if key in ds:
                val = ds[key].values.item()
                stats[key] = int(val) if key in _COUNTS else float(val)
        extra = {}
        for name in ds.data_vars:
            if f"{name}_index" in ds[name].dims and not name.startswith("error_estimate"):
                extra[name] = ds[name].values.reshape(ds.sizes["time"], -1)
        selections = json.loads(ds.attrs.get("selections", "[]"))
        if selections:
            extra["selections"] = selections
        nt = ds.sizes["time"]
        result = cls(method=ds.attrs["method"], model=model, t=ds["time"].values, q=ds["q"].values,
                   v=ds["v"].values, a=ds["a"].values, lam=ds["lam"].values.reshape(nt, -1),
                   residual=ds["constraint_residual"].values,
                   energy=ds["energy"].values if "energy" in ds else None, stats=stats, params=params,
                   h=float(ds.attrs["h"]), status=ds.attrs["status"], message=ds.attrs["message"],
                   cpu_time=float(ds["cpu_time"].values), extra=extra)
        if "error_estimate_q" in ds:
            result.error_estimate = {key: ds[f"error_estimate_{key}"].values.reshape(nt, -1)
                                     for key in ("q", "v", "lam")}
            result.error_estimate_rtol = float(ds.attrs["error_estimate_rtol"])
        return result
