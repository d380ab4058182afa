"""The Python side of the Python-Fortran seam: options packed by name, ids, stat and status names.

seam/seam.toml describes each method once (its id, options, stats) and the status codes;
tools/gen_seam.py writes, at build time, both the Fortran module pyint_seam (the steppers'
init reads named slots: IOPT_GENALPHA_MAXIT, ...) and pyint/_seam.py, the description as
data with the slots derived, which this module reads.  So a slot is never written by hand on
either side: ``Options("genalpha").pack(rho_inf=0.9, tol=1e-10, ...)`` puts each value where
the stepper reads it (cf. the documented IWORK/WORK of RADAU5, Hairer-Wanner, Solving ODEs II,
IV.8; here the document is the source of both sides).
"""
import numpy as np

from . import _seam

_METHODS = {m["name"]: m for m in _seam.DESCRIPTION["method"]}

#: status name -> code (fortran/core/kinds.f90 re-exports the same codes from pyint_seam)
STATUS = dict(_seam.DESCRIPTION["status"])


def _method(name):
    try:
        return _METHODS[name]
    except KeyError:
        raise ValueError(f"{name!r} is no method of seam/seam.toml (described: {sorted(_METHODS)})") from None


def method_id(name):
    """The method's id: pyint_seam's METHOD_<NAME>, its case of the generated dispatch (Integrator.KERNEL)."""
    return _method(name)["id"]


def stat_names(name):
    """The names of the method's stats array, in the stepper's order (STAT_<METHOD>_<NAME>)."""
    return tuple(s["name"] for s in _method(name).get("stats", []))


def real_stats(name):
    """The stats that are reals (the others are counts)."""
    return frozenset(s["name"] for s in _method(name).get("stats", []) if s.get("real"))


#: code -> item name of the callback model's requests, and the bundle shift (fortran/core/callback_model.f90)
CALLBACK_REQUEST_NAMES = {k: r for k, r in enumerate(_seam.DESCRIPTION["callback"]["requests"], start=1)}
CALLBACK_BUNDLE_SHIFT = _seam.DESCRIPTION["callback"]["bundle_shift"]
#: name -> code of model_query (fortran/queries.f90)
QUERY_CODES = {q: k for k, q in enumerate(_seam.DESCRIPTION["queries"]["names"], start=1)}
#: dense-output mode name -> code (fortran/core/dense_output.f90)
DENSE_MODES = {d: k for k, d in enumerate(_seam.DESCRIPTION["dense"]["modes"])}
#: name -> value of the tolerances both sides test
TOLERANCES = dict(_seam.DESCRIPTION.get("tolerances", {}))
#: rigid_project's and the Lie dense output's failures, name -> code (fortran/core/rigid_body.f90)
RIGID_FAILURES = dict(_seam.DESCRIPTION["rigid_failures"])

#: name -> 0-based index in a variable-step run's aopt (fortran/core/driver.f90: drive_adaptive)
AOPT = {o["name"]: o["slot"] - 1 for o in _seam.DESCRIPTION.get("run", {}).get("aopt", [])}


def pack_aopt(**values):
    """A variable-step run's aopt from every option by name (a float array)."""
    if set(values) != set(AOPT):
        raise ValueError(f"aopt: missing {sorted(set(AOPT) - set(values))}, unknown {sorted(set(values) - set(AOPT))}")
    out = np.empty(len(AOPT))
    for name, k in AOPT.items():
        out[k] = float(values[name])
    return out


class Options:
    """The iopt/ropt arrays of one method, packed by option name.

    ``pack(**values)`` wants every option of the method (and with ``adaptive=True`` its
    variable-step options too); an int option with choices takes the choice's name; a
    real-array option takes a sequence (it ends the reals).  Returns (iopt, ropt) as tuples,
    in the slots the description derives.
    """

    def __init__(self, method):
        self.method = method
        self._desc = _method(method)
        # per adaptive flag: the options in slot order (ints, then reals), and their names
        self._order = {a: sorted(self._options(a), key=lambda o: (o["array"], o["slot"])) for a in (False, True)}
        self._names = {a: frozenset(o["name"] for o in self._order[a]) for a in (False, True)}

    def _options(self, adaptive):
        return self._desc.get("options", []) + (self._desc.get("adaptive_options", []) if adaptive else [])

    def choices(self, option):
        """{name: code} of an int option's named values."""
        for o in self._options(True):
            if o["name"] == option:
                return dict(o.get("choices", {}))
        raise ValueError(f"{self.method}: no option {option!r}")

    def pack(self, adaptive=False, **values):
        if values.keys() != self._names[adaptive]:
            names = self._names[adaptive]
            raise ValueError(f"{self.method} options: missing {sorted(names - set(values))}, "
                             f"unknown {sorted(set(values) - names)}")
        iopt, ropt = [], []
        for o in self._order[adaptive]:
            v = values[o["name"]]
            if o["type"] == "int":
                if isinstance(v, str):
                    choices = o.get("choices") or {}
                    if v not in choices:
                        raise ValueError(f"{self.method}: {o['name']} must be one of {sorted(choices)}, got {v!r}")
                    v = choices[v]
                iopt.append(int(v))
            elif o["type"] == "real":
                ropt.append(float(v))
            else:   # real-array: the last of the reals (gen_seam.py checks), its first value at its slot
                ropt.extend(float(x) for x in v)
        return tuple(iopt), tuple(ropt)
