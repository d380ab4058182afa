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
"""
from __future__ import annotations

import contextlib
import ctypes
import glob
import hashlib
import inspect
import json
import os
import subprocess
import tempfile
import threading
import time

import numpy as np

from .._files import remove_stale_temporaries, temporary_name, write_bytes_atomic
from ._params import real
from .base import CALLBACK_REQUESTS, Model

#: model_id of a compiled model in the Fortran API (fortran/core/compiled_model.f90).
COMPILED_MODEL_ID = 1000
#: Matrix items, in the order of their sparsity patterns in ipar (MAT_REQ there).
MATRIX_ITEMS = ("mass", "mass_dq", "force_q", "force_v", "hol_jac", "hol_vel_q", "hol_gtl_q",
                "nh_A", "nh_vel_q", "nh_atl_q", "mass_dqq")
#: Vector items (and energy) of the compiled routine.
VECTOR_ITEMS = ("force", "hol", "hol_t", "hol_gamma", "nh_b", "nh_gamma", "energy")
_REQUEST_CODES = {name: code for code, name in CALLBACK_REQUESTS.items()}
#: Version of the code generator (part of every cache key).
GENERATOR = "pyint-symbolic-3"
#: gfortran flags (-frecursive: every local on the stack, so OpenMP batches may share the routine).
FFLAGS = ("-O2", "-fPIC", "-shared", "-frecursive", "-ffree-line-length-none")
_KEY_LEN = 64

_lock = threading.Lock()
_loaded: dict[str, ctypes.CDLL] = {}  # key -> library: loaded once per process, never unloaded


#: How to get velocities that are the coordinates' derivatives (the refusals quote it).
_QDOT_HOWTO = (
    "pyint integrates q' = v, so every velocity must be its coordinate's time derivative. Choose the "
    "generalized speeds u = q': in KanesMethod, kd_eqs=[q1.diff(t) - u1, q2.diff(t) - u2, ...] and the "
    "frames oriented by their angles (orient/orientnew) instead of angular velocities set in u; with joints, "
    "speeds whose kdes are q' - u (every joint's default). "
    "Then pass the KanesMethod or System to SymbolicModel.from_kanes_method / from_system, or give "
    "v=[q1.diff(t), ...] (or plain symbols standing for q')")
#: What undefined functions of t usually are.
_SPEEDS_HINT = (
    "If they are generalized speeds u(t) of KanesMethod or of a System's joints, the kinematic equations "
    "(KM.kindiffdict(), system.kdes) relate them to q': use SymbolicModel.from_kanes_method(KM) or "
    "from_system(system), which read them; if they are specified inputs (dynamicsymbols of t), write them as "
    "expressions of t, or give specified={input: expression} to from_kanes_method, from_system or "
    "from_lagranges_method")


class SymbolicModelError(RuntimeError):
    """A SymbolicModel's library could not be built or loaded.

    The message names the compiler's command and its output.  ``compiler()`` names the compiler
    ($PYINT_FC, $FC or gfortran); ``cache_dir()`` where built models are kept.

    Examples
    --------
    >>> from pyint.models import SymbolicModelError
    >>> issubclass(SymbolicModelError, RuntimeError)
    True
    """


def cache_dir():
    """The directory of compiled models: $PYINT_MODEL_CACHE or ~/.cache/pyint/models."""
    d = os.environ.get("PYINT_MODEL_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "pyint", "models")
    return os.path.abspath(d)


def compiler():
    """The Fortran compiler that builds SymbolicModels: $PYINT_FC, $FC or gfortran."""
    return os.environ.get("PYINT_FC") or os.environ.get("FC") or "gfortran"


_versions: dict[str, str] = {}


def _compiler_version(fc):
    if fc not in _versions:
        _versions[fc] = _run_version(fc)
    return _versions[fc]


def _run_version(fc):
    try:
        out = subprocess.run([fc, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as exc:
        raise SymbolicModelError(f"the Fortran compiler {fc!r} cannot be run ({exc}); set $PYINT_FC to "
                                 "gfortran's path (pyint's own build needs it too)") from None
    return (out.stdout or out.stderr).splitlines()[0] if (out.stdout or out.stderr) else fc


def _cache_write(path, data: bytes):
    """Write one file of the model cache (atomically: pyint._files); an unwritable cache is a
    SymbolicModelError naming the directory and the way out, not a raw PermissionError on a
    temporary's name."""
    d = os.path.dirname(path)
    try:
        os.makedirs(d, exist_ok=True)
        write_bytes_atomic(path, data)
    except OSError as exc:
        raise SymbolicModelError(
            f"the model cache {d} is not writable ({exc.strerror or exc}); set $PYINT_MODEL_CACHE to a "
            "writable directory (a read-only cache serves only the models already compiled into it)") from None


def _hash_path(lib_path):
    """The file recording the SHA-256 of a compiled library's bytes (written with it by _build)."""
    return lib_path + ".sha256"


def _valid(lib_path, key):
    """Whether the library at ``lib_path`` is the one _build wrote for ``key``: the SHA-256 of its
    bytes is the one recorded beside it (a damaged or replaced library that still carries its key
    string would otherwise be loaded, and could crash the process) and it carries its key."""
    try:
        with open(lib_path, "rb") as fh:
            data = fh.read()
        with open(_hash_path(lib_path)) as fh:
            recorded = fh.read().strip()
    except OSError:
        return False
    return hashlib.sha256(data).hexdigest() == recorded and f"pyint-model-key:{key}".encode() in data


def _build(src, key, fc):
    d = cache_dir()
    src_path = os.path.join(d, f"{key}.f90")
    lib_path = os.path.join(d, f"{key}.so")
    _cache_write(src_path, src.encode())
    remove_stale_temporaries(d)  # those of compilers and writers killed before their rename
    for old in glob.glob(os.path.join(d, ".tmp-*")):
        # the unnamed temporaries (mkstemp) of older pyint versions: by age, past the compile timeout
        with contextlib.suppress(OSError):
            if time.time() - os.path.getmtime(old) > 3600:
                os.unlink(old)
    tmp = str(temporary_name(lib_path))
    try:
        with tempfile.TemporaryDirectory() as moddir:  # gfortran may write .mod files: not in the cache
            proc = subprocess.run([fc, *FFLAGS, "-J", moddir, "-o", tmp, src_path],
                                  capture_output=True, text=True, timeout=600, cwd=moddir)
        if proc.returncode != 0:
            raise SymbolicModelError(f"compiling the generated model failed ({fc} exit {proc.returncode}); "
                                     f"source: {src_path}\n{proc.stderr.strip() or proc.stdout.strip()}")
        with open(tmp, "rb") as fh:
            digest = hashlib.sha256(fh.read()).hexdigest()
        _cache_write(_hash_path(lib_path), digest.encode())
        os.replace(tmp, lib_path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return lib_path


def load_library(src, key, fc):
    """The loaded library of key ``key`` (built from ``src()`` into the cache unless it is there and
    valid: its bytes hash to the recorded SHA-256, see :func:`_valid`)."""
    with _lock:
        if key in _loaded:
            return _loaded[key]
        lib_path = os.path.join(cache_dir(), f"{key}.so")
        lib = None
        if _valid(lib_path, key):
            try:
                lib = ctypes.CDLL(lib_path)
            except OSError:
                lib = None  # corrupt: rebuilt below
        if lib is None:
            lib_path = _build(src(), key, fc)
            if not _valid(lib_path, key):  # replaced since the rename (a concurrent build): once more
                lib_path = _build(src(), key, fc)
            try:
                lib = ctypes.CDLL(lib_path)
            except OSError as exc:
                raise SymbolicModelError(f"the compiled model {lib_path} cannot be loaded: {exc}") from None
        buf = ctypes.create_string_buffer(_KEY_LEN)
        lib.pyint_model_key(buf)
        if buf.raw.decode(errors="replace") != key:
            raise SymbolicModelError(f"the compiled model {lib_path} carries key {buf.raw!r}, expected {key}")
        _loaded[key] = lib
        return lib


# -- the symbolic derivation -------------------------------------------------------

def _sp():
    try:
        import sympy
    except ImportError:  # pragma: no cover - sympy is pinned in requirements.lock
        raise ImportError("SymbolicModel needs SymPy (pip install sympy)") from None
    return sympy


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


def _fortran_ready(sp, e):
    """``e`` with sign, Heaviside, Max and Min written as Piecewise (Fortran merge): SymPy's Fortran printer
    has no Heaviside, prints sign(x) as Fortran's sign(1, x) (which is 1 at x = 0, not SymPy's 0) and
    max/min of mixed integer and real arguments, which gfortran refuses."""
    if not e.has(sp.sign, sp.Heaviside, sp.Max, sp.Min, sp.Piecewise):
        return e

    def heaviside(x, h0=sp.S.Half):
        return sp.Piecewise((0, x < 0), (h0, sp.Eq(x, 0)), (1, True))
    e = e.replace(sp.Heaviside, heaviside)
    e = e.replace(sp.sign, lambda x: sp.Piecewise((1, x > 0), (-1, x < 0), (0, True)))
    e = e.replace(lambda x: isinstance(x, (sp.Max, sp.Min)), lambda x: x.rewrite(sp.Piecewise))

    # merge(tsource, fsource, mask) needs both values real: integer and rational branches become reals
    def real_branches(*args):
        return sp.Piecewise(*[(sp.Float(x, 20) if x.is_Number else x, c) for x, c in args])
    return e.replace(sp.Piecewise, real_branches)


# -- sympy.physics.mechanics: the pieces of from_kanes_method / from_system ----------------------

def _mech_t():
    from sympy.physics.mechanics import dynamicsymbols
    return dynamicsymbols._t


def _random_values(sp, exprs, rng, fixed=None):
    """{symbol: value} for every free symbol of exprs (values in [0.6, 1.4]: away from zeros and poles of the
    usual trigonometric and length expressions), ``fixed`` overriding."""
    syms = set()
    for e in exprs:
        syms |= sp.sympify(e).free_symbols
    vals = {s_: float(rng.uniform(0.6, 1.4)) for s_ in sorted(syms, key=str)}
    vals.update(fixed or {})
    return vals


def _plain(sp, exprs, dyn):
    """exprs with the dynamicsymbols (and derivatives) of ``dyn`` replaced by plain Dummies (for numbers)."""
    rep = {d: sp.Dummy(str(d).replace("(t)", "").replace("Derivative", "d")) for d in dyn}
    ders = {d: r for d, r in rep.items() if isinstance(d, sp.Derivative)}
    rest = {d: r for d, r in rep.items() if not isinstance(d, sp.Derivative)}
    return [sp.sympify(e).xreplace(ders).xreplace(rest) for e in exprs]


def _speeds_are_qdot(sp, who, q, u, kdes):
    """{u_j: q_i'} when the kinematic differential equations say the speeds are the q' (in some order);
    else a ValueError quoting the equations solved for q' (q' = N(q) u + c) and how to choose u = q'."""
    t = _mech_t()
    qd = [x.diff(t) for x in q]
    K = sp.Matrix(kdes)
    if len(u) != len(q) or K.shape[0] != len(q):
        raise ValueError(f"{who}: {len(q)} coordinates, {len(u)} speeds and {K.shape[0]} kinematic differential "
                         "equations; pyint needs one speed u = q' per coordinate. " + _QDOT_HOWTO)
    Kqd, Ku = K.jacobian(qd), K.jacobian(u)
    c = K.xreplace(dict.fromkeys(qd, 0)).xreplace(dict.fromkeys(u, 0))
    if Kqd.has(*qd, *u) or Ku.has(*qd, *u):
        raise ValueError(f"{who}: the kinematic differential equations are not linear in q' and u: "
                         f"{', '.join(f'{x} = 0' for x in kdes)}")
    N = sp.simplify(-Kqd.LUsolve(Ku))
    c = sp.simplify(-Kqd.LUsolve(c))
    usub = {}
    ok = all(x == 0 for x in c)
    for i in range(len(q)):
        ones = [j for j in range(len(u)) if N[i, j] != 0]
        if len(ones) != 1 or N[i, ones[0]] != 1 or u[ones[0]] in usub:
            ok = False
            break
        usub[u[ones[0]]] = qd[i]
    if not ok:
        solved = "; ".join(f"{q[i].func.__name__}' = {sp.Add(*[N[i, j] * u[j] for j in range(len(u))], c[i])}"
                           for i in range(len(q)))
        raise ValueError(f"{who}: the speeds are not the coordinates' derivatives; the kinematic differential "
                         f"equations {', '.join(f'{x} = 0' for x in kdes)} say q' = N(q) u + c with N != I: "
                         f"{solved}. " + _QDOT_HOWTO)
    return usub


def _load_potential(sp, frame, origin, point, force, in_qd, q, qd, rng=None):
    """The potential V(q) of a constant force on ``point`` (a gravity load), or None.

    The force must have constant components in ``frame`` (no dynamicsymbol); V = -F . r, r the point's
    position from ``origin`` (System.fixed_point) or, without one, from a point of the point's position tree.
    Accepted only when dV/dt + F . v_P = 0 at three random states (v_P: the point's velocity, u = q'):
    then -V_q are exactly the load's generalized forces (the check rejects an origin that moves, such as
    a contact point, along F)."""
    from sympy.physics.mechanics import find_dynamicsymbols
    if force == 0:
        return None
    comps = force.to_matrix(frame)
    if find_dynamicsymbols(comps):
        return None
    try:
        vP = in_qd(point.vel(frame).dot(force))
    except ValueError:
        return None
    if origin is not None:
        cands = [origin]
    else:   # the points of the position tree, nearest first
        seen, cands, todo = {point}, [], [point]
        while todo:
            p = todo.pop(0)
            for o in p._pos_dict:
                if o not in seen:
                    seen.add(o)
                    cands.append(o)
                    todo.append(o)
    t = _mech_t()
    rng = rng or np.random.default_rng(12345)
    for o in cands:
        try:
            V = in_qd(-force.dot(point.pos_from(o)))
        except ValueError:
            continue
        if find_dynamicsymbols(sp.Matrix([V])) - set(q):
            continue
        dV = V.diff(t)   # the total derivative: q are functions of t
        resid, scale = _plain(sp, [dV + vP, vP], set(qd) | set(q))
        good = True
        for _ in range(3):
            vals = _random_values(sp, [resid, scale], rng)
            r_, s_ = float(resid.evalf(subs=vals)), float(scale.evalf(subs=vals))
            if abs(r_) > 1e-10 * max(1.0, abs(s_)):
                good = False
                break
        if good:
            return V
    return None


def _spring_potential(sp, frame, act, in_qd, q, rng=None):
    """k (L - L0)^2 / 2 of a sympy.physics.mechanics.LinearSpring (L: its pathway's length), or None for
    another actuator; accepted when its rate is minus the power of the spring's loads at three random states
    (as :func:`_load_potential`)."""
    from sympy.physics.mechanics import LinearSpring, Point, find_dynamicsymbols
    if not isinstance(act, LinearSpring):
        return None
    try:
        V = in_qd(act.stiffness * (act.pathway.length - act.equilibrium_length) ** 2 / 2)
        power = in_qd(sum(ld[1].dot(ld[0].vel(frame)) for ld in act.to_loads() if isinstance(ld[0], Point)))
    except ValueError:
        return None
    if find_dynamicsymbols(sp.Matrix([V])) - set(q):
        return None
    t = _mech_t()
    qd = [x.diff(t) for x in q]
    resid, scale = _plain(sp, [V.diff(t) + power, power], set(qd) | set(q))
    rng = rng or np.random.default_rng(54321)
    for _ in range(3):
        vals = _random_values(sp, [resid, scale], rng)
        if abs(float(resid.evalf(subs=vals))) > 1e-10 * max(1.0, abs(float(scale.evalf(subs=vals)))):
            return None
    return V


def _check_symmetric(sp, M, dyn, rng=None):
    rng = rng or np.random.default_rng(7)
    n = M.shape[0]
    (Mp,) = _plain(sp, [M], set(dyn))
    vals = _random_values(sp, [Mp], rng)
    Mn = np.array(Mp.evalf(subs=vals).tolist(), dtype=float)
    # Kane's generalized inertia matrix is symmetric when every speed is independent (as formed here)
    if np.max(np.abs(Mn - Mn.T)) > 1e-10 * max(1.0, np.max(np.abs(Mn))):  # pragma: no cover
        raise ValueError(f"Kane's mass matrix is not symmetric (n = {n}): is every speed independent?")


def _independent_of_hol(sp, A, g, q, rng=None):
    """Rows of A not in the span of G = g_q and of the rows kept before (at a random state): the velocity
    constraints that are not the derivatives of the configuration constraints."""
    rng = rng or np.random.default_rng(11)
    G = sp.Matrix(g).jacobian(q) if g else sp.zeros(0, len(q))
    Gp, Ap = _plain(sp, [G, A], set(q))
    vals = _random_values(sp, [Gp, Ap], rng)
    rows = [np.array(Gp.evalf(subs=vals).tolist(), dtype=float).reshape(G.shape)] if G.shape[0] else []
    An = np.array(Ap.evalf(subs=vals).tolist(), dtype=float).reshape(A.shape)
    def rank(a):
        return np.linalg.matrix_rank(a, tol=1e-9 * max(1.0, np.max(np.abs(a), initial=0.0))) if a.size else 0
    keep = []
    base = np.vstack(rows) if rows else np.zeros((0, len(q)))
    for i in range(A.shape[0]):
        trial = np.vstack([base, An[i:i + 1]])
        if rank(trial) > rank(base):
            keep.append(i)
            base = trial
    return keep


def _specified(sp, who, exprs, q, qd, specified):
    """exprs with the specified inputs (dynamicsymbols of t other than q, q') replaced by their values;
    (exprs, number of inputs)."""
    from sympy.core.function import AppliedUndef
    t = _mech_t()
    known = set(q)
    found = set()
    for e in exprs:
        for x in sp.sympify(e).atoms(AppliedUndef):
            if x not in known and x.args == (t,):
                found.add(x)
    specified = dict(specified or {})
    bad = [k for k in specified if k not in found]
    if bad:
        raise ValueError(f"{who}: specified names {', '.join(map(str, bad))}, which the equations do not contain "
                         f"(their inputs: {', '.join(sorted(map(str, found))) or 'none'})")
    left = sorted(str(x) for x in found if x not in specified)
    if left:
        raise ValueError(f"{who}: specified inputs without a value: {', '.join(left)}; give "
                         "specified={input: expression of t and parameters (or a parameter Symbol)}")
    if not specified:
        return exprs, 0
    ders = {}
    for e in exprs:
        for d in sp.sympify(e).atoms(sp.Derivative):
            if d.expr in specified:
                ders[d] = sp.sympify(specified[d.expr]).diff(*d.variable_count)
    out = [sp.sympify(e).xreplace(ders).xreplace({k: sp.sympify(x) for k, x in specified.items()}) for e in exprs]
    return out, len(specified)


def _inline_conditions(sp, tmps, red):
    """cse's temporaries that are conditions (x1 = q(2) <= 0.1, from a Piecewise) put back in place: the
    temporaries are declared real(c_double)."""
    from sympy.logic.boolalg import Boolean
    cond = {}
    kept = []
    for s_, x in tmps:
        x = x.xreplace(cond) if cond else x
        if isinstance(x, Boolean):
            cond[s_] = x
        else:
            kept.append((s_, x))
    if not cond:
        return tmps, red
    return kept, [r.xreplace(cond) for r in red]


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
        named after their function (q1), with v their derivatives q1'(t) or plain symbols; a
        velocity that is a dynamicsymbol other than its coordinate's derivative (a generalized
        speed u(t) of KanesMethod) is refused by name, as is a q'(t) left in an expression
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

    @classmethod
    def from_lagranges_method(cls, lm, params=None, name="lagranges_method", coord_names=None,
                              coord_units=None, conservative=None, specified=None):
        r"""The model of a ``sympy.physics.mechanics.LagrangesMethod``.

        :math:`M` = the dynamic mass matrix, :math:`f` = the forcing (Coriolis, potential and
        ``forcelist`` terms), :math:`g` = its ``hol_coneqs``, :math:`(A, b)` from its
        ``nonhol_coneqs`` (linear in the :math:`\dot q`), energy = the Jacobi integral
        :math:`\dot q^\mathsf{T} L_{\dot q} - L`.  Multipliers follow pyint's convention
        (:math:`M a = f - G^\mathsf{T}\lambda_h - A^\mathsf{T}\lambda_n`).  Conservative by default
        when there is no ``forcelist``, nothing depends on :math:`t` explicitly and :math:`b = 0`.
        ``specified``: {dynamicsymbol T(t): expression of t and parameters} for
        specified inputs, as in :meth:`from_kanes_method`.  A Lagrangian (or a
        load's point velocity) written in generalized speeds u(t) of joints is
        refused, naming them and pointing to ``system.kdes`` and :meth:`from_system`.
        """
        sp = _sp()
        from sympy.physics.mechanics import LagrangesMethod, dynamicsymbols
        if not isinstance(lm, LagrangesMethod):
            raise TypeError(f"from_lagranges_method needs a sympy.physics.mechanics.LagrangesMethod, got {type(lm)}")
        t = dynamicsymbols._t
        qs, qds = list(lm.q), list(lm._qdots)
        # a Lagrangian of bodies whose velocities are written in joint speeds u(t) holds u, not q': its
        # equations would treat u as given functions (and the loads' partial velocities w.r.t. q' as 0)
        from sympy.core.function import AppliedUndef
        from sympy.physics.mechanics import Point, find_dynamicsymbols
        given = set(specified or {})
        speeds = {x for x in sp.sympify(lm._L).atoms(AppliedUndef)
                  if x not in qs and x not in given and x.args == (t,)}
        for load in lm.forcelist or []:
            if isinstance(load[0], Point) and lm.inertial is not None:
                vel = load[0].vel(lm.inertial).to_matrix(lm.inertial)
                speeds |= {x for x in find_dynamicsymbols(vel) if x not in qs and x not in qds and x not in given}
        if speeds:
            names = ", ".join(sorted(str(x) for x in speeds))
            raise ValueError(f"from_lagranges_method: the Lagrangian or the loads' velocities contain {names}, "
                             "neither coordinates nor their derivatives: generalized speeds u of joints or of "
                             "KanesMethod-style kinematics. Their kinematic equations (system.kdes) relate them "
                             "to q': build the model with SymbolicModel.from_system(system) (or "
                             "from_kanes_method), which reads them, or substitute u in terms of q' before "
                             "forming the Lagrangian (L.xreplace(solve(system.kdes, system.u)))")
        if lm.eom is None:
            lm.form_lagranges_equations()
        n = len(qs)
        hol = list(lm._hol_coneqs)
        nonhol = list(lm.coneqs)[len(hol):]
        nh = None
        if nonhol:
            cons = sp.Matrix(nonhol)
            A = cons.jacobian(qds)
            if A.has(*qds):
                raise ValueError("nonhol_coneqs must be linear in the velocities (A(t, q) q' + b(t, q) = 0)")
            b = cons.subs(dict.fromkeys(qds, 0))
            nh = (A, b)
        L = lm._L[0, 0]
        energy = (sp.Matrix([L]).jacobian(qds) * sp.Matrix(qds))[0, 0] - L
        # specified inputs (dynamicsymbols of t only) -> their expressions, as in from_kanes_method
        exprs = [lm._m_d[:, :n], sp.Matrix(lm._f_d), sp.Matrix([energy, L, *hol])] + (list(nh) if nh else [])
        exprs, n_inputs = _specified(sp, "from_lagranges_method", exprs, qs, qds, specified)
        M, f, rest = exprs[:3]
        energy, L, hol = rest[0], rest[1], list(rest[2:])
        if nh:
            nh = (exprs[3], exprs[4])
        if conservative is None:  # explicit time dependence: t left once q(t), q'(t) are symbols
            plain = {x: sp.Dummy() for x in qds + qs}
            explicit = any(t in sp.sympify(e).xreplace(plain).free_symbols for e in [L, *hol])
            conservative = not lm.forcelist and not explicit and not n_inputs and \
                (nh is None or all(sp.simplify(x) == 0 for x in nh[1]))
        return cls(qs, qds, t=t, mass=M, force=list(f), hol=hol or None, nonhol=nh,
                   params=params, name=name, coord_names=coord_names, coord_units=coord_units,
                   energy=energy, conservative=conservative)

    @classmethod
    def from_kanes_method(cls, km, params=None, specified=None, name="kanes_method", coord_names=None,
                          coord_units=None):
        r"""The model of a ``sympy.physics.mechanics.KanesMethod``, if its speeds are the q'.

        pyint integrates :math:`M(q)\, \ddot q = f(t, q, \dot q) - G^\mathsf{T}\lambda_h - A^\mathsf{T}\lambda_n`:
        its velocities are the
        coordinates' derivatives. The kinematic differential equations (``kd_eqs``) are read and
        solved for q'; when they say u = q' (up to the order of the speeds, possibly after a linear
        solve), Kane's equations of the system with every speed independent are formed again
        (Kane & Levinson, *Dynamics: Theory and Applications*, 1985, ch. 6: Fr + Fr* = 0 with the
        partial velocities of all u) from the KanesMethod's bodies and loads, and u is replaced by
        q'. With the constraints removed from Kane's equations, their forces are pyint's
        multipliers: M = the generalized inertia matrix (symmetric), f = Kane's forcing.

        What is read:

        * configuration constraints (``configuration_constraints``) become g(t, q) = 0;
        * velocity constraints (``velocity_constraints``) become A v + b = 0, except those that are
          the time derivatives of the configuration constraints (tested numerically at a random
          state: their rows lie in the span of G), which g already imposes;
        * loads become forces, except a **constant force on a point** (the same vector in the
          inertial frame at every state, such as gravity m*g*N.z on a mass centre): it becomes the
          potential V = -F . r_P, r_P the point's position from a point of its position tree,
          accepted when dV/dt = -F . v_P at three random states (so V's forces are exactly the
          load's generalized forces), and the energy T + V is then monitored;
        * specified inputs, dynamicsymbols of t that are neither q nor u, take their values from
          ``specified``.

        The model is conservative when every load became a potential, nothing depends on t
        explicitly and b = 0.

        Parameters
        ----------
        km : sympy.physics.mechanics.KanesMethod
            With ``kanes_equations(bodies, loads)`` called (or bodies and forcelist given to it).
        params : dict, optional
            {Symbol or name: value} of every other symbol (runtime inputs, see :meth:`with_params`).
        specified : dict, optional
            {dynamicsymbol T(t): expression of t and parameters (or a parameter Symbol)}.
        name, coord_names, coord_units : optional
            As for the constructor; coordinate names default to the dynamicsymbols' names.

        Returns
        -------
        SymbolicModel

        Raises
        ------
        ValueError
            When the kinematic differential equations are not u = q' (q' = N(q) u + c with N not a
            permutation or c != 0): the message quotes them and says how to choose u = q'; when a
            specified input has no value; when auxiliary speeds are present.
        TypeError
            When ``km`` is not a KanesMethod.

        Examples
        --------
        >>> import sympy as sp
        >>> from sympy.physics.mechanics import (KanesMethod, Particle, Point, ReferenceFrame,
        ...                                      dynamicsymbols)
        >>> q, u = dynamicsymbols("q u")
        >>> m, k = sp.symbols("m k")
        >>> N = ReferenceFrame("N"); O = Point("O"); O.set_vel(N, 0)
        >>> P = O.locatenew("P", q * N.x); P.set_vel(N, u * N.x)
        >>> km = KanesMethod(N, [q], [u], kd_eqs=[q.diff() - u])
        >>> _ = km.kanes_equations([Particle("p", P, m)], [(P, -k * q * N.x)])
        >>> model = SymbolicModel.from_kanes_method(km, params={"m": 1.0, "k": 4.0})
        >>> model.coord_names, model.n
        (('q',), 1)
        """
        from sympy.physics.mechanics import KanesMethod
        if not isinstance(km, KanesMethod):
            raise TypeError(f"from_kanes_method needs a sympy.physics.mechanics.KanesMethod, got {type(km)}")
        if km._uaux:
            raise ValueError("from_kanes_method: the KanesMethod has auxiliary speeds (u_auxiliary); pyint's "
                             "multipliers are the constraint forces: build it without them")
        if not km._bodylist:
            raise ValueError("from_kanes_method: the KanesMethod has no bodies; call "
                             "KM.kanes_equations(bodies, loads) first")
        q, u = list(km.q), list(km.u)
        qd = [x.diff(_mech_t()) for x in q]
        if not km._k_kqdot_implicit:
            raise ValueError("from_kanes_method: the KanesMethod has no kinematic differential equations")
        kdes = list(km._k_kqdot_implicit * _sp().Matrix(qd) + km._k_ku_implicit * _sp().Matrix(u)
                    + km._f_k_implicit)
        vel = list(km._k_nh * _sp().Matrix(u) + km._f_nh) if km._k_nh else []
        return cls._from_mechanics("from_kanes_method", km._inertial, None, q, u, kdes, list(km._f_h), vel, True,
                                   km._bodylist, list(km._forcelist or []), params, specified, name, coord_names,
                                   coord_units)

    @classmethod
    def from_system(cls, system, params=None, specified=None, name="system", coord_names=None, coord_units=None):
        """The model of a ``sympy.physics.mechanics.System`` (bodies, joints, loads, actuators).

        As :meth:`from_kanes_method`, from the system's ``q``, ``u``, ``kdes`` (the joints' and
        the user's), ``holonomic_constraints`` (g), ``nonholonomic_constraints`` (A v + b), bodies,
        loads and the actuators' loads (a LinearSpring becomes the potential k (L - L0)^2 / 2);
        whatever ``eom_method`` the system would use (Kane or Lagrange), Kane's equations of the
        unconstrained system give M and f. The joints' default
        speeds are u = q' (PinJoint, PrismaticJoint, CylindricalJoint, PlanarJoint, SphericalJoint
        in SymPy 1.14); speeds given other kinematic equations (body rates) are refused.
        A constant force on a point becomes a potential with the system's ``fixed_point`` as the
        origin (see :meth:`from_kanes_method`).

        Parameters
        ----------
        system : sympy.physics.mechanics.System
        params, specified, name, coord_names, coord_units : optional
            As for :meth:`from_kanes_method`.

        Returns
        -------
        SymbolicModel

        Raises
        ------
        ValueError
            When the kdes are not u = q' (quoted, with how to choose u = q'), a specified input has
            no value, or the system has no bodies.
        TypeError
            When ``system`` is not a System.

        Examples
        --------
        A rod on a pin, gravity as a load (it becomes the potential m g (l/2) sin(theta)):

        >>> import sympy as sp
        >>> from sympy.physics.mechanics import PinJoint, RigidBody, System, dynamicsymbols
        >>> m, l, g = sp.symbols("m l g")
        >>> theta, omega = dynamicsymbols("theta omega")
        >>> ground, rod = RigidBody("ground"), RigidBody("rod", mass=m)
        >>> rod.central_inertia = (m * l**2 / 12) * rod.z.outer(rod.z)
        >>> system = System.from_newtonian(ground)
        >>> system.add_joints(PinJoint("pin", ground, rod, coordinates=theta, speeds=omega,
        ...                            joint_axis=ground.z, child_point=-l / 2 * rod.x))
        >>> system.add_loads((rod.masscenter, -m * g * ground.y))
        >>> model = SymbolicModel.from_system(system, params={"m": 1.0, "l": 1.0, "g": 9.81})
        >>> model.coord_names, model.conservative
        (('theta',), True)
        """
        from sympy.physics.mechanics import System
        if not isinstance(system, System):
            raise TypeError(f"from_system needs a sympy.physics.mechanics.System, got {type(system)}")
        if not system.bodies:
            raise ValueError("from_system: the system has no bodies")
        return cls._from_mechanics("from_system", system.frame, system.fixed_point, list(system.q), list(system.u),
                                   list(system.kdes), list(system.holonomic_constraints),
                                   list(system.nonholonomic_constraints), False, list(system.bodies),
                                   list(system.loads), params, specified, name, coord_names, coord_units,
                                   actuators=list(system.actuators))

    @classmethod
    def _from_mechanics(cls, who, frame, origin, q, u, kdes, hol, vel, vel_has_hol, bodies, loads, params,
                        specified, name, coord_names, coord_units, actuators=()):
        """The model of a sympy.physics.mechanics description (from_kanes_method, from_system)."""
        sp = _sp()
        from sympy.physics.mechanics import KanesMethod, Point
        t = _mech_t()
        qd = [x.diff(t) for x in q]
        usub = _speeds_are_qdot(sp, who, q, u, kdes)         # {u_j: q_i'} or a ValueError quoting the kdes
        u_of_q = [next(uj for uj, d in usub.items() if d == qd[i]) for i in range(len(q))]
        udsub = {uj.diff(t): d.diff(t) for uj, d in usub.items()}

        def in_qd(e):   # u -> q', u' -> q''
            return sp.sympify(e).xreplace(udsub).xreplace(usub)

        # loads: a constant force on a point becomes a potential, the rest stays a force
        V, forces = sp.S.Zero, []
        for load in loads:
            loc, vec = load[0], load[1]
            pot = _load_potential(sp, frame, origin, loc, vec, in_qd, q, qd) if isinstance(loc, Point) else None
            if pot is None:
                forces.append((loc, vec))
            else:
                V += pot
        for act in actuators:   # a linear spring's potential, the other actuators' loads
            pot = _spring_potential(sp, frame, act, in_qd, q)
            if pot is None:
                forces.extend((ld[0], ld[1]) for ld in act.to_loads())
            else:
                V += pot
        # Kane's equations with every speed independent and u ordered as q (Kane & Levinson 1985, ch. 6)
        kane = KanesMethod(frame, q_ind=q, u_ind=u_of_q, kd_eqs=[qd[i] - u_of_q[i] for i in range(len(q))])
        kane.kanes_equations(list(bodies), forces or None)
        M, f = in_qd(kane.mass_matrix), in_qd(kane.forcing)
        # M_rs = sum m v_r . v_s + w_r . I . w_s is symmetric; SymPy's entries need not be identical
        # expressions: the mean of M and M^T, after a numerical check that they agree
        _check_symmetric(sp, M, q + qd)
        M = (M + M.T) / 2
        g = [in_qd(x) for x in hol]
        A = b = None
        vel = [in_qd(x) for x in vel]
        if vel:
            cons = sp.Matrix(vel)
            A_ = cons.jacobian(qd)
            if A_.has(*qd):
                raise ValueError(f"{who}: the velocity constraints are not linear in the speeds")
            b_ = cons.xreplace(dict.fromkeys(qd, 0))
            keep = _independent_of_hol(sp, A_, g, q) if vel_has_hol else list(range(A_.shape[0]))
            if keep:
                A, b = A_.extract(keep, list(range(len(q)))), b_.extract(keep, [0])
        exprs = [M, f, sp.Matrix(g or [0]), sp.Matrix([V])] + ([A, b] if A is not None else [])
        exprs, n_inputs = _specified(sp, who, exprs, q, qd, specified)
        M, f, gm, Vm = exprs[:4]
        if A is not None:
            A, b = exprs[4], exprs[5]
        plain = {x: sp.Dummy() for x in qd + q}
        explicit = any(t in sp.sympify(e).xreplace(plain).free_symbols for e in exprs)
        conservative = not forces and not n_inputs and not explicit and \
            (b is None or all(sp.simplify(x) == 0 for x in b))
        return cls(q, qd, t=t, mass=M, force=f, potential=Vm[0] if V != 0 else None,
                   hol=list(gm) if g else None, nonhol=(A, b) if A is not None else None, params=params,
                   name=name, coord_names=coord_names, coord_units=coord_units, conservative=conservative)

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
        sp = _sp()
        from sympy.printing.fortran import fcode
        n, mh, mn = self.n, self.n_hol, self.n_nonhol
        # Fortran names: q(i), v(i), w(i), rpar(k), t
        ren = {s_: sp.Symbol(f"q({i + 1})") for i, s_ in enumerate(self._q)}
        ren.update({s_: sp.Symbol(f"v({i + 1})") for i, s_ in enumerate(self._v)})
        ren.update({s_: sp.Symbol(f"w({i + 1})") for i, s_ in enumerate(self._w)})
        ren.update({s_: sp.Symbol(f"rpar({k + 1})") for k, s_ in enumerate(self._p)})
        ren[self._t] = sp.Symbol("t")
        from .base import CALLBACK_REQUESTS
        codes = {v_: k for k, v_ in CALLBACK_REQUESTS.items()}
        patterns = {}
        cases = []
        for name in MATRIX_ITEMS + VECTOR_ITEMS:
            e = self._items[name]
            if name == "energy":
                entries = [((0, 0), e)]
            elif name in MATRIX_ITEMS:
                mat = sp.Matrix(e)
                entries = [((i, j), mat[i, j]) for j in range(mat.shape[1]) for i in range(mat.shape[0])
                           if mat[i, j] != 0]
                patterns[name] = ([ij[0] for ij, _ in entries], [ij[1] for ij, _ in entries])
            else:
                mat = sp.Matrix(e)
                entries = [((i, 0), mat[i, 0]) for i in range(mat.shape[0])]
            if not entries:
                continue
            exprs = [_fortran_ready(sp, sp.sympify(x)).xreplace(ren) for _, x in entries]
            tmps, red = sp.cse(exprs, symbols=sp.numbered_symbols("x"), optimizations="basic")
            tmps, red = _inline_conditions(sp, tmps, red)
            body = []
            try:
                for s_, x in tmps:
                    body.append(fcode(x, assign_to=s_, source_format="free", standard=2008))
                for k, x in enumerate(red):
                    body.append(fcode(x, assign_to=sp.Symbol(f"out({k + 1})"), source_format="free",
                                      standard=2008))
            except Exception as exc:  # SymPy's printer: PrintMethodNotImplementedError, ValueError, ...
                raise SymbolicModelError(
                    f"the item {name} of model {self.name!r} cannot be written in Fortran by SymPy's printer "
                    f"({type(exc).__name__}: {str(exc).splitlines()[0]}); write the model with functions "
                    "Fortran has (elementary functions; the non-smooth Abs, Max, Min, Heaviside, sign, "
                    "Piecewise)") from None
            decl = f"      real(c_double) :: {', '.join(str(s_) for s_, _ in tmps)}\n" if tmps else ""
            lines = "\n".join("      " + ln for b_ in body for ln in b_.splitlines())
            cases.append(f"  case ({codes[name]})  ! {name}\n    block\n{decl}{lines}\n    end block")
        head = (f"! pyint SymbolicModel {self.name!r}: n={n}, mh={mh}, mn={mn}, {len(self._p)} parameters.\n"
                "! Generated by pyint/models/symbolic.py; every item exact (SymPy), see\n"
                "! fortran/core/compiled_model.f90 for the calling convention.\n")
        body = (
            "subroutine pyint_model_eval(req, t, q, v, w, rpar, out) bind(C, name='pyint_model_eval')\n"
            "  use iso_c_binding, only: c_int, c_double\n  implicit none\n"
            "  integer(c_int), value :: req\n  real(c_double), value :: t\n"
            "  real(c_double), intent(in) :: q(*), v(*), w(*), rpar(*)\n"
            "  real(c_double), intent(inout) :: out(*)\n"
            "  select case (req)\n" + "\n".join(cases) + "\n  end select\nend subroutine\n")
        fc = compiler()
        key = hashlib.sha256("\0".join([head + body, _compiler_version(fc), " ".join(FFLAGS)]).encode()).hexdigest()
        key = key[:_KEY_LEN]
        keyfun = (
            "subroutine pyint_model_key(buf) bind(C, name='pyint_model_key')\n"
            "  use iso_c_binding, only: c_char\n  implicit none\n"
            f"  character(kind=c_char), intent(out) :: buf({_KEY_LEN})\n"
            f"  character(len={_KEY_LEN + 16}), parameter :: key = 'pyint-model-key:{key}'\n"
            "  integer :: i\n"
            f"  do i = 1, {_KEY_LEN}\n    buf(i) = key(16 + i:16 + i)\n  end do\nend subroutine\n")
        return key, head + body + "\n" + keyfun, patterns

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
