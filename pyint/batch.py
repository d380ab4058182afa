"""Many trajectories at once: the building block of parameter sweeps.

:func:`integrate_cases` takes a list of cases (method, model, initial state,
span, step) and runs every group that one Fortran call can take -- the same
method object, the same kind and size of built-in model, the same t0, t_end,
h and sampling -- as one ``method.integrate_batch`` call (OpenMP threads
across trajectories, see ``Integrator.integrate_batch``); every other
case runs alone through ``method.integrate``.  Results come back in the order
of the cases, failures included (``raise_on_failure=False``: a sweep goes on
past a case that fails; look at ``Result.status``).

This is the hook for the study runner: wherever it loops over cases calling
``method.integrate(model, q0, v0, t_end, h, ...)``, it can build the list of
case dicts instead and call ``integrate_cases(cases, threads=...)``.
"""
from __future__ import annotations

import numpy as np

_KEYS = ("method", "model", "q0", "v0", "t_end", "h")


def _group_key(case):
    """Cases with equal keys can share one batch call (None: run alone): a method with a stepper of
    the driver (``KERNEL``) on a model its threads can evaluate (a Fortran twin or compiled library,
    or a rigid-body system)."""
    meth, model = case["method"], case["model"]
    if getattr(meth, "KERNEL", None) is None or case.get("backend", "auto") == "callback":
        return None
    if getattr(model, "fortran_name", None) is None and getattr(model, "configuration_space", "R^n") == "R^n":
        return None
    ipar, rpar = model.fortran_params()
    return (id(meth), type(model), getattr(model, "n", None), getattr(model, "n_hol", None),
            getattr(model, "n_nonhol", None), tuple(np.asarray(ipar).tolist()), np.asarray(rpar).size,
            float(case.get("t0", 0.0)), float(case["t_end"]), float(case["h"]), int(case.get("every", 1)),
            bool(case.get("project", False)))


def integrate_cases(cases, threads=None, min_batch=2):
    """Run every case; return the list of Results in case order.

    Each case is a dict with keys method (an Integrator instance), model, q0,
    v0, t_end, h and optionally t0, every, project, backend.  threads: OpenMP
    threads of the batched calls (default: every CPU).  Groups smaller than
    min_batch run one by one.
    """
    for i, c in enumerate(cases):
        missing = [k for k in _KEYS if k not in c]
        if missing:
            raise ValueError(f"case {i} lacks {missing}")
    results = [None] * len(cases)
    groups = {}
    for i, c in enumerate(cases):
        key = _group_key(c)
        groups.setdefault(key if key is not None else ("alone", i), []).append(i)
    for key, idx in groups.items():
        c0 = cases[idx[0]]
        opts = dict(t0=c0.get("t0", 0.0), every=c0.get("every", 1), project=c0.get("project", False))
        if key[0] == "alone" or len(idx) < min_batch:
            for i in idx:
                c = cases[i]
                results[i] = c["method"].integrate(
                    c["model"], c["q0"], c["v0"], c["t_end"], c["h"], t0=c.get("t0", 0.0), every=c.get("every", 1),
                    backend=c.get("backend", "auto"), project=c.get("project", False), raise_on_failure=False)
            continue
        batch = c0["method"].integrate_batch(
            [cases[i]["model"] for i in idx], [cases[i]["q0"] for i in idx], [cases[i]["v0"] for i in idx],
            c0["t_end"], c0["h"], threads=threads,
            raise_on_failure=False, **opts)
        for i, r in zip(idx, batch):
            results[i] = r
    return results
