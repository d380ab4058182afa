"""The build side of a SymbolicModel (pyint/models/symbolic.py): its expressions made printable in
Fortran, the generated source, and the cache of compiled libraries (the compiler, the build, the
checked load).  The cache's layout and its guarantees are in pyint/models/symbolic.py's docstring.
"""
from __future__ import annotations

import contextlib
import ctypes
import glob
import hashlib
import os
import subprocess
import tempfile
import threading
import time

from .._files import remove_stale_temporaries, temporary_name, write_bytes_atomic
from .base import CALLBACK_REQUESTS

#: Matrix items, in the order of their sparsity patterns in ipar (MAT_REQ in fortran/core/compiled_model.f90).
MATRIX_ITEMS = ("mass", "mass_dq", "force_q", "force_v", "hol_jac", "hol_vel_q", "hol_gtl_q",
                "nh_A", "nh_vel_q", "nh_atl_q", "mass_dqq")
#: Vector items (and energy) of the compiled routine.
VECTOR_ITEMS = ("force", "hol", "hol_t", "hol_gamma", "nh_b", "nh_gamma", "energy")
#: gfortran flags (-frecursive: every local on the stack, so OpenMP batches may share the routine).
FFLAGS = ("-O2", "-fPIC", "-shared", "-frecursive", "-ffree-line-length-none")
_KEY_LEN = 64

_lock = threading.Lock()
_loaded: dict[str, ctypes.CDLL] = {}  # key -> library: loaded once per process, never unloaded


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


def _sp():
    try:
        import sympy
    except ImportError:  # pragma: no cover - sympy is pinned in requirements.lock
        raise ImportError("SymbolicModel needs SymPy (pip install sympy)") from None
    return sympy


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


def generate_source(model):
    """(key, Fortran source, sparsity patterns) of a SymbolicModel: one ``bind(C)`` routine
    ``pyint_model_eval(req, t, q, v, w, rpar, out)`` with a case per item (sympy.cse per item, SymPy's
    Fortran printer), and ``pyint_model_key``, the library's key (a hash of the source, the compiler's
    version and the flags)."""
    sp = _sp()
    from sympy.printing.fortran import fcode
    n, mh, mn = model.n, model.n_hol, model.n_nonhol
    # Fortran names: q(i), v(i), w(i), rpar(k), t
    ren = {s_: sp.Symbol(f"q({i + 1})") for i, s_ in enumerate(model._q)}
    ren.update({s_: sp.Symbol(f"v({i + 1})") for i, s_ in enumerate(model._v)})
    ren.update({s_: sp.Symbol(f"w({i + 1})") for i, s_ in enumerate(model._w)})
    ren.update({s_: sp.Symbol(f"rpar({k + 1})") for k, s_ in enumerate(model._p)})
    ren[model._t] = sp.Symbol("t")
    codes = {v_: k for k, v_ in CALLBACK_REQUESTS.items()}
    patterns = {}
    cases = []
    for name in MATRIX_ITEMS + VECTOR_ITEMS:
        e = model._items[name]
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
                f"the item {name} of model {model.name!r} cannot be written in Fortran by SymPy's printer "
                f"({type(exc).__name__}: {str(exc).splitlines()[0]}); write the model with functions "
                "Fortran has (elementary functions; the non-smooth Abs, Max, Min, Heaviside, sign, "
                "Piecewise)") from None
        decl = f"      real(c_double) :: {', '.join(str(s_) for s_, _ in tmps)}\n" if tmps else ""
        lines = "\n".join("      " + ln for b_ in body for ln in b_.splitlines())
        cases.append(f"  case ({codes[name]})  ! {name}\n    block\n{decl}{lines}\n    end block")
    head = (f"! pyint SymbolicModel {model.name!r}: n={n}, mh={mh}, mn={mn}, {len(model._p)} parameters.\n"
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
