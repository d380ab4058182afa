"""The model argument block of the Fortran API calls (``run``, ``run_batch``, ``model_query``).

Each takes ``model_id, ipar, rpar, usercb, n, mh, mn, mflags``:
``model_id > 0`` selects a built-in Fortran model (the whole time loop stays in
Fortran); ``model_id = 0`` makes the kernel call ``usercb`` (a Python callable
built by :meth:`Model.fortran_callback`) for every model item.
"""
from __future__ import annotations

import functools

import numpy as np

from .. import _fortran
from ..options import QUERY_CODES


def _never_called(*args):  # placeholder callback for built-in models
    raise RuntimeError("the Fortran kernel called the Python callback of a built-in model")


def uses_fortran_twin(model, backend="auto"):
    """True when a kernel call with ``backend`` evaluates the model's built-in Fortran twin or
    its compiled library (no Python callback)."""
    return backend != "callback" and (model.fortran_name is not None or hasattr(model, "compiled_ipar"))


@functools.cache
def builtin_id(name):
    """The id of the built-in model ``name`` (fortran/models/registry.f90: its place in a fixed
    table), -1 if unknown: looked up once per process.  A run checks the parameters and sizes
    itself (setup_model); :func:`check_builtin` says what it refused."""
    return int(_fortran.model_lookup(name, np.zeros(1, np.int32), np.zeros(1))[0])


def check_builtin(model):
    """Raise what is wrong with the parameters or sizes of ``model``'s built-in Fortran twin (a
    run refused its model block: STATUS_BAD_INPUT at the start); return when nothing is."""
    ipar, rpar = model.fortran_params()
    ipar = np.ascontiguousarray(ipar, dtype=np.int32)
    rpar = np.ascontiguousarray(rpar, dtype=np.float64)
    model_id, n, mh, mn, _, _, ierr = _fortran.model_lookup(model.fortran_name, ipar if ipar.size else
                                                            np.zeros(1, np.int32), rpar if rpar.size else np.zeros(1))
    if ierr != 0 or model_id < 1:
        raise ValueError(f"Fortran model {model.fortran_name!r} rejected its parameters")
    if (n, mh, mn) != (model.n, model.n_hol, model.n_nonhol):
        raise RuntimeError(f"Fortran and NumPy twins of {model.name!r} disagree on sizes: "
                           f"{(n, mh, mn)} vs {(model.n, model.n_hol, model.n_nonhol)}")


def model_args(model, backend="auto", checked=True):
    """Return the dict of Fortran model arguments for ``model``.

    backend: "fortran" (built-in Fortran twin; error if there is none),
    "callback" (always through Python), or "auto" (Fortran when available).
    checked: a built-in twin's parameters and sizes checked here (:func:`check_builtin`); False:
    by the run that receives the block (no call here once its id is known).
    """
    if backend not in ("auto", "fortran", "callback"):
        raise ValueError(f"backend must be 'auto', 'fortran' or 'callback', got {backend!r}")
    ipar, rpar = model.fortran_params()
    ipar = np.ascontiguousarray(ipar, dtype=np.int32)
    rpar = np.ascontiguousarray(rpar, dtype=np.float64)
    use_fortran = model.fortran_name is not None and backend != "callback"
    if backend == "fortran" and model.fortran_name is None:
        raise ValueError(f"model {model.name!r} has no built-in Fortran twin; use backend='callback'")
    if backend != "callback" and hasattr(model, "compiled_ipar"):
        # a SymbolicModel: its compiled library (pyint/models/symbolic.py), called by the kernel
        from .symbolic import COMPILED_MODEL_ID
        model_id, ipar, cb = COMPILED_MODEL_ID, model.compiled_ipar(), _never_called
    elif use_fortran:
        if checked:
            check_builtin(model)
        model_id = builtin_id(model.fortran_name)
        if model_id < 1:
            raise ValueError(f"Fortran model {model.fortran_name!r} rejected its parameters")
        cb = _never_called
    else:
        model_id = 0
        cb = model.fortran_callback()
    if ipar.size == 0:
        ipar = np.zeros(1, dtype=np.int32)
    if rpar.size == 0:
        rpar = np.zeros(1)
    mflags = np.array([int(model.constant_mass), int(model.has_energy),
                       int(not getattr(model, "callback_bundle", True))], dtype=np.int32)
    return dict(model_id=int(model_id), ipar=ipar, rpar=rpar, usercb=cb,
                mh=int(model.n_hol), mn=int(model.n_nonhol), mflags=mflags)


#: The query codes of ``_fortran.model_query`` (fortran/queries.f90: QUERY_*; seam/seam.toml).
QUERIES = dict(QUERY_CODES)


class QueryFailed(RuntimeError):
    """A ``model_query`` call returned a nonzero status (``ierr``: 3 bad model or sizes,
    else the status of the Fortran routine behind the query)."""

    def __init__(self, what, ierr, out=None):
        super().__init__(f"model_query {what!r} failed (ierr={ierr})")
        self.ierr = ierr
        self.out = out     # the query's packed output as the Fortran side left it


def model_query(model, what, x, shapes, iarg=(), backend="auto"):
    """``what`` (a key of :data:`QUERIES`) of ``model`` at given states, in one Fortran call.

    x: the query's real inputs in the order of fortran/queries.f90 (scalars and arrays, each
    flattened in Fortran order); iarg: its integer inputs; shapes: the shapes of its outputs
    in their order.  Returns the list of outputs (Fortran-ordered views of one buffer);
    raises :class:`QueryFailed` (holding the buffer) on a nonzero status.
    """
    args = model_args(model, backend)
    xs = np.concatenate([np.ravel(np.asarray(p, dtype=float), order="F") for p in x])
    sizes = [int(np.prod(shape)) for shape in shapes]
    out, ierr = _fortran.model_query(QUERIES[what], args["model_id"], args["ipar"], args["rpar"], args["usercb"],
                                     model.n, args["mh"], args["mn"], args["mflags"],
                                     np.array([*iarg, 0], dtype=np.int32), xs, sum(sizes))
    if ierr != 0:
        raise QueryFailed(what, int(ierr), out)
    ends = np.cumsum(sizes)
    return [out[e - k:e].reshape(shape, order="F") for e, k, shape in zip(ends, sizes, shapes)]


def fortran_eval(model, req, t, q, v, w=None, backend="fortran"):
    """Evaluate one model item through the Fortran model (for tests and checks)."""
    from .base import CALLBACK_REQUESTS, callback_shapes
    codes = {v_: k for k, v_ in CALLBACK_REQUESTS.items()}
    code = codes[req] if isinstance(req, str) else int(req)
    n, mh, mn = model.n, model.n_hol, model.n_nonhol
    wbuf = np.zeros(max(n, mh, mn, 1))
    if w is not None:
        wbuf[:len(w)] = w
    out, = model_query(model, "item", [t, q, v, wbuf], [(max(n, mh, mn, 1) * n,)], [code], backend)
    name = CALLBACK_REQUESTS[code]
    shape = callback_shapes(n, mh, mn)[name]
    size = int(np.prod(shape)) if shape else 1
    res = out[:size].reshape(shape, order="F") if shape else out[0]
    return res
