"""A model from SymPy expressions, compiled to Fortran: user models at built-in speed.

::

    import sympy as sp
    from pyint.models import SymbolicModel
    x, y, vx, vy, m, l, g = sp.symbols("x y vx vy m l g")
    model = SymbolicModel([x, y], [vx, vy], mass=sp.diag(m, m), potential=m * g * y,
                          hol=[(x**2 + y**2 - l**2) / 2], params={m: 1.0, l: 1.0, g: 9.81})

Every item of the model interface (pyint/models/base.py: mass, (M a)_q,
((M a)_q w)_q, f, f_q, f_v, g, G, g_t, (G v + g_t)_q, hol_gamma, (G^T lam)_q, A, b,
(A v + b)_q, nh_gamma, (A^T lam)_q, energy) is derived exactly by SymPy
differentiation, with common subexpressions eliminated (sympy.cse), and serves
twice:

* as NumPy functions (sympy.lambdify): the Python path and the callback backend
  until the library below is loaded; from then on (a Fortran run, pyint.reference,
  or :meth:`compiled_ipar`) the Python items call the compiled routine through
  ctypes, so pyint.reference's residuals come from the same compiled items;
* as Fortran source, one ``bind(C)`` routine ``eval(req, t, q, v, w, rpar, out)``
  compiled once with gfortran into a shared library.  The kernels call that
  routine through procedure pointers (fortran/core/compiled_model.f90), so the
  whole time loop stays in Fortran, and the Newton matrix is assembled from
  each item's structural nonzeros.

Parameters (``params``) are runtime inputs (``rpar``): :meth:`with_params`
returns the same model with other values and never recompiles.

The cache.  A compiled library lives in ``$PYINT_MODEL_CACHE`` (default
``~/.cache/pyint/models``) as ``<key>.so`` next to its source ``<key>.f90``;
the key is a hash of the generated source, the compiler's version and the flags
(so the same model written with other symbol names shares one library).  Files
are written to a temporary name and renamed, so a concurrent process never sees
half a file (the temporaries of killed writers are collected, pyint/_files.py).
A library is loaded only when the SHA-256 of its bytes is the one recorded in
``<key>.so.sha256`` when it was built, and it carries its key; otherwise (damaged,
replaced, stale) it is rebuilt.  ``<input key>.json`` maps a hash of the model's
expressions to the library's key and sparsity patterns, and records that input
key and the model's sizes (an entry under another model's name is not used): a
model loaded from the cache is not derived again (its NumPy items are derived on
first use).  A read-only cache serves the models compiled into it; compiling a
new one there is a SymbolicModelError naming the directory.
The compiler is ``$PYINT_FC`` or ``$FC`` or ``gfortran``.

Split by responsibility: the derivation and the items here; the generated source, the compiler and
the cache in :mod:`pyint.models.symbolic_build`; the constructors from sympy.physics.mechanics in
:mod:`pyint.models.symbolic_mechanics` (its names stay importable from here).
"""
from __future__ import annotations

import ctypes
import hashlib
import inspect
import json
import os

import numpy as np

from ._params import real
from .base import CALLBACK_REQUESTS, Model
# SymbolicModelError, cache_dir, compiler: public here too (pyint.models exports the error from here)
from .symbolic_build import (_KEY_LEN, FFLAGS, MATRIX_ITEMS, VECTOR_ITEMS, SymbolicModelError,  # noqa: F401
                             _cache_write, _compiler_version, _sp, _valid, cache_dir, compiler, generate_source,
                             load_library)
from . import symbolic_mechanics
from .symbolic_mechanics import _QDOT_HOWTO, _SPEEDS_HINT

#: model_id of a compiled model in the Fortran API (fortran/core/compiled_model.f90).
COMPILED_MODEL_ID = 1000
_REQUEST_CODES = {name: code for code, name in CALLBACK_REQUESTS.items()}
#: Version of the code generator (part of every cache key).
GENERATOR = "pyint-symbolic-3"


def _as_matrix(sp, x, what, shape=None):
    try:
        m = sp.Matrix(x)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{what} must be a SymPy matrix or a list of expressions ({exc})") from None
    if shape is not None:
        if shape[1] == 1 and m.shape == (1, shape[0]):
            m = m.T
        if m.shape != shape and not (m.shape[0] * m.shape[1] == 0 and shape[0] * shape[1] == 0):
            raise ValueError(f"{what} has shape {m.shape[0]}x{m.shape[1]}, expected {shape[0]}x{shape[1]}")
        if m.shape != shape:
            m = sp.zeros(*shape)
    return m


class SymbolicModel(Model):
    r"""A model of the shared interface from SymPy expressions, compiled to Fortran (see the module docstring).

    pyint integrates :math:`\dot q = v`.  Abs, Max, Min, Heaviside, sign and Piecewise are allowed:
    derivatives away from the kinks, sign(0) = 0, Heaviside(0) = 1/2 (every symbol is made
    real).  :meth:`from_kanes_method`, :meth:`from_system` and :meth:`from_lagranges_method`
    build one from ``sympy.physics.mechanics``.

    Parameters
    ----------
    q, v : sequence of sympy symbols
        The coordinates and velocities (equal lengths).  dynamicsymbols q(t) are accepted,
        named after their function (q1), with v their derivatives :math:`\dot q_1(t)` or plain symbols; a
        velocity that is a dynamicsymbol other than its coordinate's derivative (a generalized
        speed :math:`u(t)` of KanesMethod) is refused by name, as is a :math:`\dot q(t)` left in an expression
        whose velocity is a plain symbol (see :meth:`from_kanes_method` and
        :meth:`from_system` for Kane's speeds).
    t : sympy symbol, optional
        The time symbol (None: the model does not depend on time).
    mass : sympy Matrix
        The n x n mass matrix :math:`M(q)` (symmetric).
    force : sequence of expressions, optional
        The applied forces :math:`f(t, q, v)` (n).
    potential : expression, optional
        A potential energy :math:`V(t, q)`, whose forces :math:`-V_q` are added to ``force``.
    hol : expression or list of expressions, optional
        Holonomic constraints :math:`g(t, q) = 0`.
    nonhol : (Matrix, sequence or None), optional
        :math:`(A, b)` with :math:`A v + b = 0` (b may be None).
    params : dict, optional
        {symbol or its name: value} of every other symbol (runtime inputs of the compiled
        model, see :meth:`with_params`).
    name : str, default "symbolic"
        The model's name (results, datasets).
    coord_names, coord_units : sequence of str, optional
        One name and one unit per coordinate.
    energy : expression, optional
        The reported energy (default :math:`T + V` with :math:`T = v^\mathsf{T} M v / 2`).
    conservative : bool, optional
        Whether ``energy`` is conserved (default: no ``force`` term, nothing depends on t,
        b = 0).

    Raises
    ------
    SymbolicModelError
        The generated library could not be built or loaded (no Fortran compiler, an
        unwritable cache).
    ValueError
        Expressions of the wrong shape, or a symbol without a value in ``params``.

    Examples
    --------
    A pendulum of length l in Cartesian coordinates, compiled once (cached by its
    expressions):

    >>> import sympy as sp
    >>> from pyint import GeneralizedAlpha, SymbolicModel
    >>> x, y, vx, vy, l = sp.symbols("x y vx vy l")
    >>> model = SymbolicModel([x, y], [vx, vy], mass=sp.eye(2), potential=9.81 * y,
    ...                       hol=(x**2 + y**2 - l**2) / 2, params={l: 1.0}, name="pendulum")
    >>> res = GeneralizedAlpha().integrate(model, [1.0, 0.0], [0.0, 0.0], t_end=1.0, h=1e-3)
    >>> res.status, res.eps_pos < 1e-12
    ('ok', True)
    """

    constant_mass = True
    scleronomic = True
    conservative = False

    def __init__(self, q, v, t=None, mass=None, force=None, potential=None, hol=None, nonhol=None,
                 params=None, name="symbolic", coord_names=None, coord_units=None, energy=None,
                 conservative=None):
        sp = _sp()
        q, v, subs = self._coordinates(sp, q, v)
        n = len(q)
        tsym = t if t is not None else sp.Dummy("t")
        if mass is None:
            raise ValueError("SymbolicModel needs mass=M (an n x n matrix)")
        M = sp.Matrix(mass) if not isinstance(mass, sp.MatrixBase) else mass
        if M.shape[0] != M.shape[1]:
            raise ValueError(f"the mass matrix must be square; got {M.shape[0]}x{M.shape[1]}")
        if M.shape != (n, n):
            raise ValueError(f"the mass matrix is {M.shape[0]}x{M.shape[1]} but there are {n} coordinates")
        M = M.xreplace(subs)
        f = sp.zeros(n, 1) if force is None else _as_matrix(sp, force, "force", (n, 1)).xreplace(subs)
        V = sp.Integer(0) if potential is None else sp.sympify(potential).xreplace(subs)
        if potential is not None:
            f = f - sp.Matrix([V]).jacobian(q).T
        if hol is not None and isinstance(hol, sp.Basic) and not isinstance(hol, sp.MatrixBase):
            hol = [hol]  # one constraint given as a bare expression
        g = sp.zeros(0, 1) if hol is None else _as_matrix(sp, list(hol), "hol").xreplace(subs)
        if g.shape[1] != 1:
            g = g.reshape(g.shape[0] * g.shape[1], 1)
        mh = g.shape[0]
        if nonhol is None:
            A, b = sp.zeros(0, n), sp.zeros(0, 1)
        else:
            if not isinstance(nonhol, (tuple, list)) or len(nonhol) != 2:
                raise ValueError("nonhol must be a pair (A, b) with A v + b = 0 (b may be None)")
            A = sp.Matrix(nonhol[0]).xreplace(subs)
            if A.shape[1] != n:
                raise ValueError(f"nonhol A has {A.shape[1]} columns but there are {n} coordinates")
            b = sp.zeros(A.shape[0], 1) if nonhol[1] is None else \
                _as_matrix(sp, nonhol[1], "nonhol b", (A.shape[0], 1)).xreplace(subs)
        mn = A.shape[0]
        T = (sp.Matrix(v).T * M * sp.Matrix(v))[0, 0] / 2
        E = T + V if energy is None else sp.sympify(energy).xreplace(subs)

        # every symbol needs a value; params are keyed by Symbol or by name (as in with_params)
        exprs = {"mass": M, "force": f, "hol": g, "nh_A": A, "nh_b": b, "energy": sp.Matrix([E])}
        params = self._param_symbols(sp, params, exprs.values())
        for s_, val in params.items():
            if s_ in q or s_ in v or s_ == tsym:
                raise ValueError(f"{s_} is a coordinate, velocity or time and cannot be a parameter")
            params[s_] = real(f"parameter {s_} of SymbolicModel {name!r}", val)   # names it: not float()'s error
        psyms = sorted(params, key=lambda s_: s_.name)
        known = set(q) | set(v) | {tsym} | set(psyms)
        for what, e in exprs.items():
            left = sorted((s_ for s_ in e.free_symbols if s_ not in known), key=str)
            if left:
                raise ValueError(f"symbols without a value in {what}: {', '.join(map(str, left))} "
                                 "(give them in params={symbol: value}, or pass them as q, v or t)")
        from sympy.core.function import AppliedUndef
        for what, e in exprs.items():
            undef = sorted({str(x.func) for x in e.atoms(AppliedUndef)})
            if undef:
                raise ValueError(f"undefined functions in {what}: {', '.join(undef)} (write them out in SymPy "
                                 "functions; dynamicsymbols belong in q and v). " + _SPEEDS_HINT)
            # a q'(t) left in an expression is not one of the velocities (xreplace left Derivative(q1, t))
            ders = sorted({str(x) for x in e.atoms(sp.Derivative)})
            if ders:
                raise ValueError(f"{what} contains {', '.join(ders)}, a time derivative that is not one of the "
                                 "velocities v: " + _QDOT_HOWTO)
        for what, e, bad in (("mass", M, set(v) | {tsym}), ("hol", g, set(v)), ("nonhol A", A, set(v)),
                             ("nonhol b", b, set(v)), ("potential", sp.Matrix([V]), set(v))):
            dep = sorted((s_ for s_ in e.free_symbols if s_ in bad), key=str)
            if dep:
                raise ValueError(f"{what} must not depend on {', '.join(map(str, dep))}")
        asym = [(i, j) for i in range(n) for j in range(i + 1, n) if sp.expand(M[i, j] - M[j, i]) != 0]
        if asym:
            raise ValueError(f"the mass matrix is not symmetric: M[{asym[0][0]}, {asym[0][1]}] != "
                             f"M[{asym[0][1]}, {asym[0][0]}] (a KanesMethod's mass_matrix with dependent speeds "
                             "holds the constraints' rows: build the model with SymbolicModel.from_kanes_method)")

        # every variable and parameter real (SymPy's default is complex): d|x|/dx = sign(x),
        # d max(x, y)/dx = Heaviside(x - y), ... instead of re/im terms (see _derive for the kinks)
        realsyms = {s_: (sp.Dummy(s_.name, real=True) if isinstance(s_, sp.Dummy) else sp.Symbol(s_.name, real=True))
                for s_ in [*q, *v, tsym, *psyms] if not s_.is_real}
        names = [s_.name for s_ in [*q, *v, *psyms]]
        dup = sorted({x for x in names if names.count(x) > 1})
        if dup:
            raise ValueError(f"two symbols of the model share the name {dup[0]!r} (coordinates, velocities and "
                             "parameters need distinct names)")
        q = [realsyms.get(s_, s_) for s_ in q]
        v = [realsyms.get(s_, s_) for s_ in v]
        psyms = [realsyms.get(s_, s_) for s_ in psyms]
        params = {realsyms.get(s_, s_): x for s_, x in params.items()}
        tsym = realsyms.get(tsym, tsym)
        M, f, g, A, b, E, V = (x.xreplace(realsyms) for x in (M, f, g, A, b, sp.sympify(E), sp.sympify(V)))

        self.name = str(name)
        self.n, self.n_hol, self.n_nonhol = n, mh, mn
        if coord_names is not None:
            if len(coord_names) != n:
                raise ValueError(f"coord_names has {len(coord_names)} names for {n} coordinates")
            self.coord_names = tuple(coord_names)
        else:
            self.coord_names = tuple(str(s_) for s_ in q)
        if coord_units is not None:
            if len(coord_units) != n:
                raise ValueError(f"coord_units has {len(coord_units)} units for {n} coordinates")
            self.coord_units = tuple(coord_units)
        self.constant_mass = not (M.free_symbols & set(q))
        self.scleronomic = tsym not in g.free_symbols
        if conservative is None:
            conservative = force is None and all(tsym not in e.free_symbols for e in (M, g, A, b, sp.Matrix([V]))) \
                and all(sp.simplify(x) == 0 for x in b)
        self.conservative = bool(conservative)
        self.fortran_name = f"symbolic:{self.name}"
        self._q, self._v, self._t, self._p = list(q), list(v), tsym, psyms
        self._pvals = np.array([float(params[s_]) for s_ in psyms])
        self._inputs = (M, f, g, A, b, E)
        self._derived = None  # the items, derived on first use (_items)
        self._num = {}
        self._lib_state = None  # (key, source, patterns) once generated
        self._w = [sp.Dummy(f"w{i}") for i in range(max(n, mh, mn, 1))]

    # -- construction helpers --------------------------------------------------
    @staticmethod
    def _coordinates(sp, q, v):
        """Plain symbols for q and v (dynamicsymbols q1(t) -> q1, q1'(t) -> q1_d), refusing velocities
        that are not the coordinates' derivatives: pyint integrates q' = v (pyint/models/base.py)."""
        from sympy.core.function import AppliedUndef
        q, v = list(q), list(v)
        if len(q) == 0 or len(q) != len(v):
            raise ValueError(f"q and v must be non-empty and of equal length; got {len(q)} and {len(v)}")
        subs = {}
        qs, vs, wrong = [], [], []
        for i, (qi, vi) in enumerate(zip(q, v)):
            if isinstance(qi, sp.Symbol):
                qs.append(qi)
            elif isinstance(qi, AppliedUndef):  # a dynamicsymbol q(t): the function's name
                s_ = sp.Symbol(qi.func.__name__)
                subs[qi] = s_
                qs.append(s_)
            else:
                raise ValueError(f"q[{i}] = {qi!r} is not a SymPy symbol")
            if isinstance(vi, sp.Symbol):
                vs.append(vi)
            elif isinstance(vi, sp.Derivative) and isinstance(qi, AppliedUndef) and vi == qi.diff(qi.args[0]):
                s_ = sp.Symbol(f"{qs[-1].name}_d")  # q(t)'
                subs[vi] = s_
                vs.append(s_)
            elif isinstance(vi, (sp.Derivative, AppliedUndef)):  # u(t), or the derivative of something else
                wrong.append(f"v[{i}] = {vi} is not q[{i}]' = "
                             + (f"{qi}'" if not isinstance(qi, AppliedUndef) else f"{qi.func.__name__}'(t)"))
                vs.append(None)
            else:
                raise ValueError(f"v[{i}] = {vi!r} is not a SymPy symbol")
        if wrong:
            raise ValueError("the velocities are not the coordinates' derivatives (" + "; ".join(wrong)
                             + "): " + _QDOT_HOWTO)
        if len(set(qs) | set(vs)) != 2 * len(qs):
            raise ValueError("q and v must be distinct symbols")
        return qs, vs, subs  # applied with xreplace: q'(t) is replaced whole, before the q(t) inside it

    @staticmethod
    def _param_symbols(sp, params, exprs):
        """{Symbol: value} from params keyed by Symbol or by name (a name is the symbol of that name in the
        expressions, as in :meth:`with_params`)."""
        by_name = {}
        for e in exprs:
            for s_ in sp.sympify(e).free_symbols:
                by_name.setdefault(s_.name, s_)
        out = {}
        for k, val in dict(params or {}).items():
            if isinstance(k, str):
                if k not in by_name:
                    raise ValueError(f"params names {k!r}, which is no symbol of the model (symbols: "
                                     f"{', '.join(sorted(by_name))})")
                k = by_name[k]
            elif not isinstance(k, sp.Symbol):
                raise ValueError(f"params keys must be SymPy symbols or their names, got {k!r}")
            if k in out:
                raise ValueError(f"parameter {k} is given twice (by symbol and by name)")
            out[k] = val
        return out

    @property
    def _items(self):
        if self._derived is None:
            self._derived = self._derive(_sp(), *self._inputs)
        return self._derived

    def _derive(self, sp, M, f, g, A, b, E):
        q, v, t = sp.Matrix(self._q), sp.Matrix(self._v), self._t
        n, mh, mn = self.n, self.n_hol, self.n_nonhol
        wn, wh, wl = sp.Matrix(self._w[:n]), sp.Matrix(self._w[:mh]), sp.Matrix(self._w[:mn])

        def jac(x, y):
            # entry by entry, differentiating only where the variable occurs (most entries are zero)
            x = sp.Matrix(x)
            out = sp.zeros(x.shape[0], len(y))
            for i in range(x.shape[0]):
                e = x[i, 0]
                fs = e.free_symbols
                for j, yj in enumerate(y):
                    if yj in fs:
                        out[i, j] = e.diff(yj)
            return out

        G = jac(g, q)
        gt = g.diff(t)
        hv = G * v + gt
        av = A * v + b
        items = {
            # mass_dqq(q, a, w) = d/dq [(M a)_q w]: its a is the routine's v (compiled_model.f90)
            "mass": M, "mass_dq": jac(M * wn, q), "mass_dqq": jac(jac(M * v, q) * wn, q), "force": f, "force_q": jac(f, q), "force_v": jac(f, v),
            "hol": g, "hol_jac": G, "hol_t": gt, "hol_jac_t": G.diff(t), "hol_tt": gt.diff(t),
            "hol_vel_q": jac(hv, q), "hol_gamma": jac(hv, q) * v + hv.diff(t),
            "hol_gtl_q": jac(G.T * wh, q) if mh else sp.zeros(n, n),
            "nh_A": A, "nh_b": b, "nh_vel_q": jac(av, q), "nh_dt": av.diff(t),
            "nh_gamma": jac(av, q) * v + av.diff(t),
            "nh_atl_q": jac(A.T * wl, q) if mn else sp.zeros(n, n),
            "energy": E,
        }
        # Non-smooth functions (the symbols are real): SymPy differentiates |x| to sign(x), max(x, y) to
        # Heaviside(x - y), sign and Heaviside to DiracDelta; the items take the derivative away from the
        # kink everywhere, so DiracDelta is 0 (a classical derivative, not the distribution). At the kink the
        # values are sign(0) = 0 and Heaviside(0) = 1/2 (SymPy's default; Heaviside(x, H0) keeps its H0), so
        # d|x|/dx = 0 and d max(x, y)/dx = 1/2 at x = y.
        # floor and ceiling are piecewise constant: their derivative is 0 away from the jumps, as Heaviside's.
        def stepwise(d):
            return isinstance(d, sp.Derivative) and isinstance(d.expr, (sp.floor, sp.ceiling))
        for k, e in items.items():
            if e.has(sp.DiracDelta):
                e = items[k] = e.replace(sp.DiracDelta, lambda *a: sp.S.Zero)
            if e.has(sp.Derivative):
                e = items[k] = e.replace(stepwise, lambda d: sp.S.Zero)
                left = sorted({str(d) for d in e.atoms(sp.Derivative)})
                if left:
                    raise ValueError(f"SymPy cannot differentiate {left[0]} (in the item {k} of model "
                                     f"{self.name!r}): write that part of the model with functions SymPy "
                                     "differentiates (or as a Piecewise of such functions)")
        return items

    def with_params(self, values=None, /, **kw):
        """The same model with other parameter values; never recompiles.

        ``values`` is a dict keyed by Symbol or by name (as ``params=`` of the constructor), ``kw``
        by name: ``model.with_params({g: 1.62})`` and ``model.with_params(g=1.62)`` are the same.
        """
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        names = {s_.name: k for k, s_ in enumerate(self._p)}
        pv = self._pvals.copy()
        items = [(getattr(k, "name", k), x) for k, x in dict(values or {}).items()] + list(kw.items())
        for nm, val in items:
            if nm not in names:
                raise ValueError(f"{nm!r} is not a parameter of {self.name!r} (parameters: {', '.join(names)})")
            pv[names[nm]] = real(f"parameter {nm} of {self.name!r}", val)
        new._pvals = pv
        return new

    def __getstate__(self):
        """Picklable (process pools, Dask): the lambdified items and the loaded library stay behind and are
        rebuilt on first use in the other process (the library from the cache)."""
        state = dict(self.__dict__)
        state["_num"] = {}
        state.pop("_lib", None)
        state.pop("_eval_fn", None)
        return state

    @property
    def params(self):
        """{name: value} of the parameters."""
        return {s_.name: float(x) for s_, x in zip(self._p, self._pvals)}

    # -- NumPy items ---------------------------------------------------------------
    def _shape(self, name):
        n, mh, mn = self.n, self.n_hol, self.n_nonhol
        return {"mass": (n, n), "mass_dq": (n, n), "mass_dqq": (n, n), "force": (n,), "force_q": (n, n), "force_v": (n, n),
                "hol": (mh,), "hol_jac": (mh, n), "hol_t": (mh,), "hol_jac_t": (mh, n), "hol_tt": (mh,),
                "hol_vel_q": (mh, n), "hol_gamma": (mh,), "hol_gtl_q": (n, n), "nh_A": (mn, n), "nh_b": (mn,),
                "nh_vel_q": (mn, n), "nh_dt": (mn,), "nh_gamma": (mn,), "nh_atl_q": (n, n), "energy": ()}[name]

    def _eval_compiled(self, lib, name, shape, t, q, v, w):
        """Item ``name`` from the loaded compiled library (ctypes): the same Fortran the kernels call.
        One buffer per call holds q, v, w, rpar and the output (one address taken, the rest offsets)."""
        pattern = self._lib_state[2].get(name) if name in MATRIX_ITEMS else None
        if name in MATRIX_ITEMS and not pattern:
            return np.zeros(shape)   # no structural nonzero: no case in the routine
        size = 1 if shape == () else (len(pattern[0]) if pattern else int(np.prod(shape)))
        fn = self.__dict__.get("_eval_fn")
        if fn is None or fn[0] is not lib:
            f = lib.pyint_model_eval
            f.argtypes = [ctypes.c_int, ctypes.c_double] + [ctypes.c_void_p] * 5
            f.restype = None
            fn = self._eval_fn = (lib, f)
        n, nw, rp = self.n, max(self.n, self.n_hol, self.n_nonhol, 1), self._pvals
        npar = max(rp.size, 1)
        buf = np.zeros(2 * n + nw + npar + size)
        if q is not None:
            buf[:n] = q
        if v is not None:
            buf[n:2 * n] = v
        if w is not None:
            buf[2 * n:2 * n + len(w)] = w
        o = 2 * n + nw
        buf[o:o + rp.size] = rp
        base = buf.ctypes.data
        fn[1](_REQUEST_CODES[name], float(t), base, base + 8 * n, base + 16 * n, base + 8 * o, base + 8 * (o + npar))
        out = buf[o + npar:]
        if shape == ():
            return float(out[0])
        if name in MATRIX_ITEMS:
            full = np.zeros(shape)
            full[pattern[0], pattern[1]] = out
            return full
        return out.reshape(shape)

    def _eval(self, name, t=0.0, q=None, v=None, w=None):
        shape = self._shape(name)
        if 0 in shape:
            return np.zeros(shape)
        lib = self.__dict__.get("_lib")
        if lib is not None and name in MATRIX_ITEMS + VECTOR_ITEMS:
            # once compiled (a Fortran run or pyint.reference loaded it): the compiled items
            return self._eval_compiled(lib, name, shape, t, q, v, w)
        fun = self._num.get(name)
        if fun is None:
            sp = _sp()
            fun = sp.lambdify([self._t, self._q, self._v, self._w, self._p], self._items[name],
                              modules="numpy", cse=True)
            self._num[name] = fun
        z = np.zeros(self.n)
        nw = len(self._w)
        wv = np.zeros(nw)
        if w is not None:
            wv[:len(w)] = w
        out = fun(float(t), np.asarray(q if q is not None else z, dtype=float),
                  np.asarray(v if v is not None else z, dtype=float), wv, self._pvals)
        if shape == ():
            return float(np.asarray(out, dtype=float).ravel()[0])
        out = np.array(out, dtype=float)
        return out.reshape(shape) if out.size == int(np.prod(shape)) else np.broadcast_to(out, shape).copy()

    # mass, force, hol, ..., energy: each evaluates its item (_eval); generated below the class
    def force_jac(self, t, q, v):
        return self._eval("force_q", t, q, v), self._eval("force_v", t, q, v)

    def describe(self):
        d = super().describe()
        d.update(symbolic=1, **{f"param_{k}": x for k, x in self.params.items()})
        return d

    # -- the compiled library ------------------------------------------------------
    def fortran_source(self):
        """(key, Fortran source, 0-based patterns {item: (rows, cols)}) of the compiled routine."""
        if self._lib_state is None or self._lib_state[1] is None:
            self._lib_state = self._generate()
            self._write_index()
        return self._lib_state

    def _input_key(self):
        """Hash of the model's expressions (before derivation), the generator and the compiler."""
        sp = _sp()
        tfix = {self._t: sp.Symbol("__pyint_time")}
        text = sp.srepr((tuple(self._q), tuple(self._v), tuple(self._p),
                         tuple((sp.ImmutableMatrix(x.xreplace(tfix)) if x.shape[0] * x.shape[1] else x.shape)
                               if isinstance(x, sp.MatrixBase) else x.xreplace(tfix) for x in self._inputs)))
        return hashlib.sha256("\0".join([text, GENERATOR, sp.__version__, _compiler_version(compiler()),
                                          " ".join(FFLAGS)]).encode()).hexdigest()[:_KEY_LEN]

    def _write_index(self):
        key, _, patterns = self._lib_state
        data = json.dumps({"input_key": self._input_key(), "key": key, "sizes": [self.n, self.n_hol, self.n_nonhol],
                           "patterns": {k: [list(r), list(c)] for k, (r, c) in patterns.items()}})
        _cache_write(os.path.join(cache_dir(), f"{self._input_key()}.json"), data.encode())

    def _cached_state(self):
        """(key, None, patterns) from the cache's index when this model was generated before, else None.

        The entry is used only when it is this model's: it records the input key it was written for
        (an entry copied or swapped under another model's name would make this model run the other's
        library), this model's sizes, and patterns within the items' shapes."""
        input_key = self._input_key()
        try:
            with open(os.path.join(cache_dir(), f"{input_key}.json")) as fh:
                data = json.load(fh)
            key = str(data["key"])
            patterns = {k: (list(map(int, r)), list(map(int, c))) for k, (r, c) in data["patterns"].items()}
            mine = data["input_key"] == input_key and list(data["sizes"]) == [self.n, self.n_hol, self.n_nonhol]
        except (OSError, ValueError, KeyError, TypeError):
            return None
        # an index of another generator (a matrix item more or less) is stale: derived and written again
        if not mine or set(patterns) != set(MATRIX_ITEMS) or not _valid(os.path.join(cache_dir(), f"{key}.so"), key):
            return None
        for name, (rows, cols) in patterns.items():
            shape = self._shape(name)
            if len(rows) != len(cols) or any(not 0 <= r < shape[0] for r in rows) \
                    or any(not 0 <= c < shape[1] for c in cols):
                return None
        return key, None, patterns

    def _generate(self):
        return generate_source(self)


    def compiled_ipar(self):
        """ipar of the compiled model (fortran/core/compiled_model.f90): compiles or loads on first use."""
        if self._lib_state is None:
            self._lib_state = self._cached_state()  # no derivation when the cache has the model
        if self._lib_state is None:
            self.fortran_source()
        key, _, patterns = self._lib_state
        lib = load_library(lambda: self.fortran_source()[1], key, compiler())
        addr = ctypes.cast(lib.pyint_model_eval, ctypes.c_void_p).value
        lo, hi = addr & 0xFFFFFFFF, addr >> 32
        as_i32 = lambda x: x - (1 << 32) if x >= (1 << 31) else x  # noqa: E731
        nnz = [len(patterns.get(k, ((), ()))[0]) for k in MATRIX_ITEMS]
        rows = [r + 1 for k in MATRIX_ITEMS for r in patterns.get(k, ((), ()))[0]]
        cols = [c + 1 for k in MATRIX_ITEMS for c in patterns.get(k, ((), ()))[1]]
        self._lib = lib  # keep it referenced with the model
        return np.array([as_i32(lo), as_i32(hi), self.n, self.n_hol, self.n_nonhol, *nnz, *rows, *cols],
                        dtype=np.int32)

    def fortran_params(self):
        rp = self._pvals if self._pvals.size else np.zeros(1)
        return np.zeros(0, dtype=np.int32), rp.copy()


# -- SymbolicModel's items as Model methods ---------------------------------------------------
#: The Model items a SymbolicModel evaluates as they are (force_jac pairs force_q and force_v).
_ITEMS = ("mass", "mass_dq", "mass_dqq", "force", "hol", "hol_jac", "hol_t", "hol_jac_t", "hol_tt", "hol_vel_q", "hol_gamma",
          "hol_gtl_q", "nh_A", "nh_b", "nh_vel_q", "nh_dt", "nh_gamma", "nh_atl_q", "energy")
#: Model's argument names -> SymbolicModel._eval's (a, lam: the vector w of the contractions;
#: mass_dqq(q, a, w): a is v, as in the compiled routine).
_EVAL_ARGUMENT = {"t": "t", "q": "q", "v": "v", "a": "w", "lam": "w"}
_EVAL_ARGUMENT_OF = {"mass_dqq": {"q": "q", "a": "v", "w": "w"}}


def _item_method(name):
    """``SymbolicModel.<name>``: its item evaluated, with the arguments of ``Model.<name>``."""
    signature = inspect.signature(getattr(Model, name))
    arg = _EVAL_ARGUMENT_OF.get(name, _EVAL_ARGUMENT)
    keys = [arg[k] for k in list(signature.parameters)[1:]]

    def item(self, *args, **kwargs):
        return self._eval(name, **dict(zip(keys, args)), **{arg[k]: x for k, x in kwargs.items()})
    item.__name__, item.__qualname__, item.__signature__ = name, f"SymbolicModel.{name}", signature
    item.__doc__ = f"The item {name} of the model's expressions (compiled once the library is loaded)."
    return item


for _name in _ITEMS:
    setattr(SymbolicModel, _name, _item_method(_name))


# -- the constructors from sympy.physics.mechanics (pyint/models/symbolic_mechanics.py) -------
for _name in ("from_lagranges_method", "from_kanes_method", "from_system"):
    _fn = getattr(symbolic_mechanics, _name)
    _fn.__qualname__ = f"SymbolicModel.{_name}"
    setattr(SymbolicModel, _name, classmethod(_fn))
