"""The one model interface (Python side).

A constrained mechanical system is written

    M(q) a = f(t, q, v) - G(t, q)^T lam_h - A(t, q)^T lam_n
    g(t, q) = 0                  (n_hol holonomic constraints, G = g_q)
    A(t, q) v + b(t, q) = 0      (n_nonhol nonholonomic constraints)

Subclass :class:`Model` and define at least ``mass`` and ``force`` (and
``hol`` and/or ``nh_A``/``nh_b`` when the system is constrained).  Every other
item has a central finite-difference fallback here, so a quick prototype
works at once and gets faster as analytic derivatives are added.  The Fortran
twin of this class is ``fortran/core/model.f90`` (same item names, same sign
conventions); a user model reaches the Fortran integrators through
:meth:`Model.fortran_callback`, a built-in one runs entirely in Fortran.

Acceleration-level constraints are ``G a + hol_gamma = 0`` and
``A a + nh_gamma = 0`` with

    hol_gamma = (G v)_q v + 2 G_t v + g_tt
    nh_gamma  = (A v + b)_q v + A_t v + b_t.
"""
from __future__ import annotations

import math

import numpy as np

from .. import _control
from ..errors import NonFiniteError
from ..options import CALLBACK_BUNDLE_SHIFT, CALLBACK_REQUEST_NAMES

#: Request code -> item of the Fortran callback (fortran/core/callback_model.f90; seam/seam.toml).
CALLBACK_REQUESTS = dict(CALLBACK_REQUEST_NAMES)


N_REQUESTS = len(CALLBACK_REQUESTS)
_SHAPES: dict = {}   # callback_shapes by model sizes (Model.checked, at every callback)
#: A bundled request is ``-(k + BUNDLE_SHIFT * mask)`` (fortran/core/callback_model.f90).
BUNDLE_SHIFT = CALLBACK_BUNDLE_SHIFT
_F64 = np.dtype(np.float64)


def bundle_layout(n, mh, mn):
    """{request code: (start, stop)} of each item in a bundle's output buffer, the layout
    of callback_model.f90's cache (the items one after the other, matrices row by row)."""
    shapes = callback_shapes(n, mh, mn)
    pos, layout = 0, {}
    for k in range(1, N_REQUESTS + 1):
        size = int(np.prod(shapes[CALLBACK_REQUESTS[k]]))
        layout[k] = (pos, pos + size)
        pos += size
    return layout


def callback_shapes(n, mh, mn):
    """The shape of every callback item of a model of sizes (n, mh, mn)."""
    return {"mass": (n, n), "mass_dq": (n, n), "force": (n,), "force_q": (n, n), "force_v": (n, n),
            "hol": (mh,), "hol_jac": (mh, n), "hol_t": (mh,), "hol_vel_q": (mh, n), "hol_gamma": (mh,),
            "hol_gtl_q": (n, n), "nh_A": (mn, n), "nh_b": (mn,), "nh_vel_q": (mn, n),
            "nh_gamma": (mn,), "nh_atl_q": (n, n), "energy": (), "mass_dqq": (n, n)}


def check_item_shape(model_name, item, value, shape):
    """ValueError unless ``value`` has ``shape`` (up to axes of length 1: a (1, n)
    Jacobian of one constraint may come as (n,), a 1 x 1 mass matrix as a scalar)."""
    got = np.shape(value)
    if got == shape or (int(np.prod(got)) == int(np.prod(shape))
                        and tuple(d for d in got if d != 1) == tuple(d for d in shape if d != 1)):
        return
    raise ValueError(f"model {model_name!r}: {item}() returned shape {got}, expected {shape}")


_FD_EPS = 6.0e-6  # ~ eps**(1/3): the relative step of central differences
#: Relative steps of the fourth-order central differences: ~ eps**(1/5) for a first
#: derivative (error ~ eps/h + h^4 ~ 3e-13), ~ eps**(1/6) for a second (~ 1e-10).  The
#: fallbacks whose values enter the constraint equations themselves (G, g_t, hol_gamma,
#: nh_gamma) use them: IDA's Newton iteration and error test see their noise directly,
#: and the second-order ones nested (hol_gamma as a difference of a differenced G) left
#: noise of ~1e-6 in hol_gamma.  Jacobian-only items keep second-order differences.
_FD_EPS4 = {1: 7.0e-4, 2: 2.5e-3}


#: The model items, with their arguments: checked one by one when something came out non-finite,
#: to name the one that did (:func:`nonfinite_item`).
NONFINITE_ITEMS = (("mass", "q"), ("force", "tqv"), ("force_jac", "tqv"), ("mass_dq", "qa"), ("hol", "tq"),
                   ("hol_jac", "tq"), ("hol_t", "tq"), ("hol_gamma", "tqv"), ("hol_vel_q", "tqv"), ("nh_A", "tq"),
                   ("nh_b", "tq"), ("nh_gamma", "tqv"), ("nh_vel_q", "tqv"))


def nonfinite_item(model, t, q, v, a=None):
    """A :class:`pyint.errors.NonFiniteError` naming the first item of ``model`` that is non-finite
    at (t, q, v, a) (the item, its arguments, the value and its index, t and q), or None when every
    item is finite there (pyint.reference's IDA residuals; a kernel run stopped on a non-finite state)."""
    if not (np.all(np.isfinite(q)) and np.all(np.isfinite(v))):
        return None
    args = {"t": t, "q": q, "v": v, "a": np.zeros_like(v) if a is None else a}
    for name, sig in NONFINITE_ITEMS:
        if (name.startswith("hol") and not model.n_hol) or (name.startswith("nh") and not model.n_nonhol):
            continue
        vals = getattr(model, name)(*[args[c] for c in sig])
        for val in (vals if isinstance(vals, tuple) else (vals,)):
            val = np.asarray(val, dtype=float)
            if not np.all(np.isfinite(val)):
                bad = np.argwhere(~np.isfinite(np.atleast_1d(val)))[0].tolist()
                return NonFiniteError(
                    f"the model returned a non-finite value: {name}({', '.join(sig)}) at t = {t:.10g} has "
                    f"{np.atleast_1d(val)[tuple(bad)]} at index {bad} (q = {np.array2string(q, precision=6)})",
                    time=t)
    return None


def _step(x, eps=_FD_EPS):
    return eps * max(1.0, abs(float(x)))


def _central(fun, e, order):
    """Central difference quotient of the scalar-argument ``fun`` at 0 with step e (order 2 or 4)."""
    if order == 2:
        return (np.asarray(fun(e)) - np.asarray(fun(-e))) / (2 * e)
    return (8 * (np.asarray(fun(e)) - np.asarray(fun(-e)))
            - (np.asarray(fun(2 * e)) - np.asarray(fun(-2 * e)))) / (12 * e)


def fd_jacobian(fun, x, order=2):
    """Central-difference Jacobian of ``fun`` at ``x`` (the fallback of every model derivative).

    Parameters
    ----------
    fun : callable
        ``fun(x) -> array (m,)``.
    x : array_like, shape (n,)
        The point.
    order : {2, 4}, default 2
        The order of the central differences.

    Returns
    -------
    ndarray, shape (m, n)
        The Jacobian: column j is the derivative along x[j].

    Examples
    --------
    >>> import numpy as np
    >>> from pyint.models import fd_jacobian
    >>> jac = fd_jacobian(lambda x: np.array([x[0] * x[1], np.sin(x[0])]), [1.0, 2.0], order=4)
    >>> bool(np.allclose(jac, [[2.0, 1.0], [np.cos(1.0), 0.0]], atol=1e-9))
    True
    """
    x = np.asarray(x, dtype=float)
    f0 = np.atleast_1d(fun(x))
    jac = np.empty((f0.size, x.size))
    for j in range(x.size):
        e = _step(x[j], _FD_EPS if order == 2 else _FD_EPS4[1])

        def along(s, j=j):
            xs = x.copy(); xs[j] += s
            return np.atleast_1d(fun(xs))
        jac[:, j] = np.ravel(_central(along, e, order))
    return jac


def fd_derivative(fun, t, order=2):
    """Central difference of ``fun`` with respect to the scalar ``t``; order 2 or 4."""
    e = _step(t, _FD_EPS if order == 2 else _FD_EPS4[1])
    return _central(lambda s: fun(t + s), e, order)


def _second(fun, e):
    """Fourth-order central second difference of the scalar-argument ``fun`` at 0 with step e."""
    f = [np.asarray(fun(k * e)) for k in (-2, -1, 0, 1, 2)]
    return (-(f[0] + f[4]) + 16 * (f[1] + f[3]) - 30 * f[2]) / (12 * e * e)


def fd_second_derivative(fun, t):
    """Fourth-order central second difference of ``fun`` with respect to the scalar ``t``."""
    return _second(lambda s: fun(t + s), _step(t, _FD_EPS4[2]))


def _along_motion(q, v):
    """(c, x0): ``s -> (t + s/c, q + s v/c)`` parametrizes the line through (t, q) along (1, v),
    c = max(1, |v|) so that a step in s moves q by at most its size, and the reference point
    x0 = max(1, |q|) that scales the step."""
    c = max(1.0, float(np.max(np.abs(v), initial=0.0)))
    return c, max(1.0, float(np.max(np.abs(q), initial=0.0)))


class Model:
    r"""Base class of every model: built-in ones and the ones users write.

    The model is the constrained mechanical system

    .. math::

        M(q)\, a = f(t, q, v) - G(t, q)^\mathsf{T} \lambda_h - A(t, q)^\mathsf{T} \lambda_n,

        g(t, q) = 0, \qquad A(t, q)\, v + b(t, q) = 0,

    with :math:`G = g_q`, :math:`n_\text{hol}` holonomic and :math:`n_\text{nonhol}` nonholonomic
    constraints.  A subclass sets the class attributes below and defines at least ``mass`` and
    ``force`` (and ``hol`` and/or ``nh_A``/``nh_b`` when it is constrained); every
    other item has a finite-difference fallback.

    Attributes
    ----------
    name : str
        Short identifier used in results and datasets.
    n : int
        Number of coordinates.
    n_hol : int
        Number of holonomic constraints :math:`g(t, q) = 0`.
    n_nonhol : int
        Number of nonholonomic constraints :math:`A(t, q)\, v + b = 0`.
    coord_names : tuple of str or None
        One name per coordinate (defaults q0, q1, ...).
    coord_units : tuple of str or None
        One unit string per coordinate (defaults "1").
    constant_mass : bool
        True when :math:`M` does not depend on :math:`q`.
    scleronomic : bool
        True when :math:`g` does not depend on :math:`t` (:math:`g_t`, :math:`G_t`, :math:`g_{tt}` are zero).
    conservative : bool
        True when ``energy`` is a conserved total energy (models that define
        ``energy`` without conserving it report it, but no drift).
    fortran_name : str or None
        Name of the built-in Fortran twin, or None.
    callback_bundle : bool
        False to have the callback path ask one item per Python call (default
        True: the items of one point in one call).
    configuration_space : str
        ``"R^n"``: :math:`q \in \mathbb{R}^n` is a vector with additive updates (a rigid-body system on
        :math:`(\mathbb{R}^3 \times SO(3))^{n_b}` says so, and supplies the hooks of pyint.models.rigid_bodies).

    Examples
    --------
    A planar pendulum of unit length in Cartesian coordinates, from mass, force and constraint
    alone (every derivative by finite differences):

    >>> import numpy as np
    >>> from pyint import Model, GeneralizedAlpha
    >>> class Pendulum(Model):
    ...     name, n, n_hol = "my_pendulum", 2, 1
    ...     def mass(self, q):
    ...         return np.eye(2)
    ...     def force(self, t, q, v):
    ...         return np.array([0.0, -9.81])
    ...     def hol(self, t, q):
    ...         return np.array([(q @ q - 1.0) / 2])
    >>> res = GeneralizedAlpha().integrate(Pendulum(), [1.0, 0.0], [0.0, 0.0], t_end=1.0, h=1e-3)
    >>> res.status, res.eps_pos < 1e-12
    ('ok', True)
    """

    name = "model"
    n = 0
    n_hol = 0
    n_nonhol = 0
    coord_names: tuple[str, ...] | None = None
    coord_units: tuple[str, ...] | None = None
    constant_mass = True
    scleronomic = False
    conservative = False
    fortran_name: str | None = None
    # False: the callback path asks one item per Python call (no per-point bundles)
    callback_bundle = True
    configuration_space = "R^n"

    # -- what a subclass must define ------------------------------------------
    def mass(self, q):
        r"""Mass matrix :math:`M(q)`, shape (n, n)."""
        raise NotImplementedError(f"{type(self).__name__} must define mass(q)")

    def force(self, t, q, v):
        r"""Applied forces :math:`f(t, q, v)`, shape (n,)."""
        raise NotImplementedError(f"{type(self).__name__} must define force(t, q, v)")

    def hol(self, t, q):
        r"""Holonomic constraints :math:`g(t, q)`, shape (n_hol,)."""
        if self.n_hol:
            raise NotImplementedError(f"{type(self).__name__} declares n_hol > 0 but defines no hol(t, q)")
        return np.zeros(0)

    def nh_A(self, t, q):
        r"""Nonholonomic constraint matrix :math:`A(t, q)`, shape (n_nonhol, n)."""
        if self.n_nonhol:
            raise NotImplementedError(f"{type(self).__name__} declares n_nonhol > 0 but defines no nh_A(t, q)")
        return np.zeros((0, self.n))

    def nh_b(self, t, q):
        r"""Nonholonomic constraint offset :math:`b(t, q)`, shape (n_nonhol,). Default zero."""
        return np.zeros(self.n_nonhol)

    def energy(self, t, q, v):
        """Total energy (only meaningful when ``conservative``)."""
        return np.nan

    # -- derived items: finite-difference fallbacks ----------------------------
    def mass_dq(self, q, a):
        r"""The derivative :math:`\partial (M(q)\, a) / \partial q`, shape (n, n); zero for a constant mass matrix."""
        if self.constant_mass:
            return np.zeros((self.n, self.n))
        return fd_jacobian(lambda x: self.mass(x) @ a, q)

    def mass_dqq(self, q, a, w):
        r""":math:`\partial [(M(q)\, a)_q\, w] / \partial q` (:math:`w` held fixed), shape (n, n): the second
        derivatives of :math:`M` the canonical and dual-variable forms' Newton matrices need (at
        :math:`a = w = v`); zero for a constant mass matrix."""
        if self.constant_mass:
            return np.zeros((self.n, self.n))
        return fd_jacobian(lambda x: self.mass_dq(x, a) @ w, q)

    def force_jac(self, t, q, v):
        r"""The force Jacobians :math:`(f_q, f_v)`, each (n, n)."""
        return (fd_jacobian(lambda x: self.force(t, x, v), q),
                fd_jacobian(lambda x: self.force(t, q, x), v))

    def hol_jac(self, t, q):
        r"""The constraint Jacobian :math:`G = g_q`, shape (n_hol, n)."""
        return fd_jacobian(lambda x: self.hol(t, x), q, order=4).reshape(self.n_hol, self.n)

    def hol_t(self, t, q):
        r""":math:`g_t`, shape (n_hol,); zero for a scleronomic model."""
        if self.scleronomic:
            return np.zeros(self.n_hol)
        return np.asarray(fd_derivative(lambda s: self.hol(s, q), t, order=4)).reshape(self.n_hol)

    def hol_jac_t(self, t, q):
        r""":math:`G_t`, shape (n_hol, n); zero for a scleronomic model."""
        if self.scleronomic:
            return np.zeros((self.n_hol, self.n))
        return np.asarray(fd_derivative(lambda s: self.hol_jac(s, q), t, order=4)).reshape(self.n_hol, self.n)

    def hol_tt(self, t, q):
        r""":math:`g_{tt}`, shape (n_hol,); zero for a scleronomic model."""
        if self.scleronomic:
            return np.zeros(self.n_hol)
        return np.asarray(fd_second_derivative(lambda s: self.hol(s, q), t)).reshape(self.n_hol)

    def hol_vel(self, t, q, v):
        r"""Velocity-level residual :math:`G v + g_t`."""
        return self.hol_jac(t, q) @ v + self.hol_t(t, q)

    def hol_vel_q(self, t, q, v):
        r""":math:`(G v + g_t)_q`, shape (n_hol, n)."""
        return fd_jacobian(lambda x: self.hol_vel(t, x, v), q).reshape(self.n_hol, self.n)

    def hol_gamma(self, t, q, v):
        r""":math:`\gamma_h = (G v)_q v + 2 G_t v + g_{tt}`: the acceleration constraint is
        :math:`G a + \gamma_h = 0`.

        Fallback: :math:`\gamma_h = \frac{d^2}{ds^2} g(t + s, q + s v)` at :math:`s = 0`, one
        fourth-order directional difference: of :math:`G v + g_t` (a first derivative) when the
        model defines :math:`G` and :math:`g_t`, else of :math:`g` itself (a second derivative)."""
        if not self.n_hol:
            return np.zeros(0)       # (2 n finite differences of an empty G otherwise)
        c, x0 = _along_motion(q, v)
        cls = type(self)
        if cls.hol_jac is not Model.hol_jac and (self.scleronomic or cls.hol_t is not Model.hol_t):
            d = _central(lambda s: self.hol_vel(t + s / c, q + (s / c) * v, v), _step(x0, _FD_EPS4[1]), 4)
            return c * np.asarray(d).reshape(self.n_hol)
        d = _second(lambda s: self.hol(t + s / c, q + (s / c) * v), _step(x0, _FD_EPS4[2]))
        return c * c * np.asarray(d).reshape(self.n_hol)

    def hol_acc(self, t, q, v, a):
        r"""Acceleration-level residual :math:`G a + \gamma_h`."""
        return self.hol_jac(t, q) @ a + self.hol_gamma(t, q, v)

    def hol_gtl_q(self, t, q, lam):
        r""":math:`(G^\mathsf{T}\lambda)_q`, shape (n, n)."""
        return fd_jacobian(lambda x: self.hol_jac(t, x).T @ lam, q)

    def nh_vel(self, t, q, v):
        r"""Nonholonomic residual :math:`A v + b`."""
        return self.nh_A(t, q) @ v + self.nh_b(t, q)

    def nh_vel_q(self, t, q, v):
        r""":math:`(A v + b)_q`, shape (n_nonhol, n)."""
        return fd_jacobian(lambda x: self.nh_vel(t, x, v), q).reshape(self.n_nonhol, self.n)

    def nh_dt(self, t, q, v):
        r""":math:`A_t v + b_t`, shape (n_nonhol,)."""
        return np.asarray(fd_derivative(lambda s: self.nh_vel(s, q, v), t, order=4)).reshape(self.n_nonhol)

    def nh_gamma(self, t, q, v):
        r""":math:`\gamma_n = (A v + b)_q v + A_t v + b_t`: the acceleration constraint is
        :math:`A a + \gamma_n = 0`.

        Fallback: :math:`\gamma_n = \frac{d}{ds} [A v + b](t + s, q + s v)` at :math:`s = 0` with
        :math:`v` held fixed, one fourth-order directional difference."""
        if not self.n_nonhol:
            return np.zeros(0)
        c, x0 = _along_motion(q, v)
        d = _central(lambda s: self.nh_vel(t + s / c, q + (s / c) * v, v), _step(x0, _FD_EPS4[1]), 4)
        return c * np.asarray(d).reshape(self.n_nonhol)

    def nh_acc(self, t, q, v, a):
        r"""Acceleration-level nonholonomic residual :math:`A a + \gamma_n`."""
        return self.nh_A(t, q) @ a + self.nh_gamma(t, q, v)

    def nh_atl_q(self, t, q, lam):
        r""":math:`(A^\mathsf{T}\lambda)_q`, shape (n, n)."""
        return fd_jacobian(lambda x: self.nh_A(t, x).T @ lam, q)

    # -- conveniences ----------------------------------------------------------
    @property
    def has_energy(self):
        """True when the model defines ``energy`` (conserved or not)."""
        return type(self).energy is not Model.energy

    @property
    def n_constraints(self):
        return self.n_hol + self.n_nonhol

    def names(self):
        return tuple(self.coord_names) if self.coord_names else tuple(f"q{i}" for i in range(self.n))

    def units(self):
        return tuple(self.coord_units) if self.coord_units else ("1",) * self.n

    #: The model's scalar parameters as (name, attribute): named so in :meth:`describe`, and in this
    #: order the real parameters (rpar) of the built-in Fortran twin (:meth:`fortran_params`).
    PARAMETERS: tuple[tuple[str, str], ...] = ()

    def fortran_params(self):
        """(ipar, rpar) of the built-in Fortran twin: int32 and float64 arrays (rpar: :attr:`PARAMETERS`)."""
        return np.zeros(0, dtype=np.int32), np.array([getattr(self, attr) for _, attr in self.PARAMETERS], dtype=float)

    def describe(self):
        """Scalar parameters for provenance attributes (:attr:`PARAMETERS`; override to add more)."""
        return {"model": self.name, "n": self.n, "n_hol": self.n_hol, "n_nonhol": self.n_nonhol,
                **{name: getattr(self, attr) for name, attr in self.PARAMETERS}}

    def checked(self, item, value, t=None):
        """``value`` of model item ``item`` as a float array of its declared shape:
        ValueError naming the item, the expected and the got shape; TypeError when
        it is no array of numbers; NonFiniteError when it holds NaN or Inf (at t)."""
        sizes = (self.n, self.n_hol, self.n_nonhol)
        shapes = _SHAPES.get(sizes)
        if shapes is None:
            shapes = _SHAPES.setdefault(sizes, callback_shapes(*sizes))
        shape = shapes[item]
        try:
            arr = np.asarray(value, dtype=float)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"model {self.name!r}: {item}() must return an array of numbers "
                            f"of shape {shape}: {exc}") from None
        if arr.shape != shape:
            check_item_shape(self.name, item, arr, shape)
            arr = arr.reshape(shape)
        # a sum is finite when every term is (and cheaper than isfinite on small arrays);
        # a non-finite sum (NaN, Inf, or an overflow of finite terms) is looked at term by term
        if item != "energy" and not math.isfinite(arr.sum()) and not np.all(np.isfinite(arr)):
            where = "" if t is None else f" at t = {float(t):.6g}"
            raise NonFiniteError(f"model {self.name!r}: {item}() returned a non-finite value{where}")
        return arr

    def consistent_acceleration(self, t, q, v):
        """Solve the index-1 system for (a, lam_h, lam_n) at (t, q, v)."""
        from .. import _validate as V
        n, mh, mn = self.n, self.n_hol, self.n_nonhol
        c = V.constraint_matrix(self, t, q)
        k = np.zeros((n + mh + mn, n + mh + mn))
        k[:n, :n] = self.checked("mass", self.mass(q), t)
        k[:n, n:] = c.T
        k[n:, :n] = c
        rhs = np.concatenate([self.checked("force", self.force(t, q, v), t),
                              -self.checked("hol_gamma", self.hol_gamma(t, q, v), t),
                              -self.checked("nh_gamma", self.nh_gamma(t, q, v), t)])
        try:
            sol = np.linalg.solve(k, rhs)
        except np.linalg.LinAlgError:   # say which part is singular, not NumPy's "Singular matrix"
            raise V.singular_mass(self, t, q) or ValueError(
                f"the index-1 matrix [M C^T; C 0] of model {self.name!r} is singular at t={t}: the constraint "
                "Jacobian [G; A] is rank deficient (redundant or degenerate constraints)") from None
        return sol[:n], sol[n:n + mh], sol[n + mh:]

    # -- the bridge to Fortran ---------------------------------------------------
    def fortran_callback(self):
        """The callable the Fortran callback model calls: ``cb(req, t, q, v, w, out)``.

        ``req > 0``: item ``CALLBACK_REQUESTS[req]`` into ``out``, checked (shape,
        finiteness; the error names the item).  ``req < 0``: a bundle
        (fortran/core/callback_model.f90): ``-req = k + 32 * mask``, item k needed now
        and the items of ``mask`` (bit j-1 for item j) expected at the same point, all
        in one call, each to its offset of :func:`bundle_layout`.  The bundle is the hot
        path: an item that is a float64 array of its declared shape (a float for the
        energy) is copied as it is, anything else goes through :meth:`checked`; an item
        that raises is left as the Fortran side filled it (NaN), and an item that is not
        finite is asked again on its own when the kernel needs it, so its error is the
        per-item path's.  Matrices are written row by row (C order)."""
        n, mh, mn = self.n, self.n_hol, self.n_nonhol
        layout = bundle_layout(n, mh, mn)
        shapes = callback_shapes(n, mh, mn)

        # request code -> f(t, q, v, w), the model method of each item (looked up at every
        # call: a model may replace a method between runs)
        fns = {
            1: lambda t, q, v, w: self.mass(q),
            2: lambda t, q, v, w: self.mass_dq(q, w[:n]),
            3: lambda t, q, v, w: self.force(t, q, v),
            4: lambda t, q, v, w: self.force_jac(t, q, v)[0],
            5: lambda t, q, v, w: self.force_jac(t, q, v)[1],
            6: lambda t, q, v, w: self.hol(t, q),
            7: lambda t, q, v, w: self.hol_jac(t, q),
            8: lambda t, q, v, w: self.hol_t(t, q),
            9: lambda t, q, v, w: self.hol_vel_q(t, q, v),
            10: lambda t, q, v, w: self.hol_gamma(t, q, v),
            11: lambda t, q, v, w: self.hol_gtl_q(t, q, w[:mh]),
            12: lambda t, q, v, w: self.nh_A(t, q),
            13: lambda t, q, v, w: self.nh_b(t, q),
            14: lambda t, q, v, w: self.nh_vel_q(t, q, v),
            15: lambda t, q, v, w: self.nh_gamma(t, q, v),
            16: lambda t, q, v, w: self.nh_atl_q(t, q, w[:mn]),
            17: lambda t, q, v, w: self.energy(t, q, v),
            18: lambda t, q, v, w: self.mass_dqq(q, v, w[:n]),
        }
        # the items one method computes together: one call for both when a bundle holds both
        pairs = {(4, 5): lambda t, q, v, w: self.force_jac(t, q, v),
                 (12, 13): lambda t, q, v, w: (self.nh_A(t, q), self.nh_b(t, q))}
        timeless = {1, 2, 18}   # mass, mass_dq, mass_dqq: no t in an error message
        plans = {}   # bundle request -> (items alone, pairs): (f, name, lo, hi, shape, timed), (f, (...), (...))

        def one(req, t, q, v, w):
            return self.checked(CALLBACK_REQUESTS[req], fns[req](t, q, v, w), None if req in timeless else t)

        def plan(req):
            k, mask = (-req) % BUNDLE_SHIFT, (-req) // BUNDLE_SHIFT
            target = {j: (CALLBACK_REQUESTS[j], *layout[j], shapes[CALLBACK_REQUESTS[j]], j not in timeless)
                      for j in range(1, N_REQUESTS + 1) if (mask >> (j - 1)) & 1 or j == k}
            both = tuple((f, tuple(target.pop(j) for j in pair))
                         for pair, f in pairs.items() if all(j in target for j in pair))
            return plans.setdefault(req, (tuple((fns[j], *tj) for j, tj in target.items()), both))

        def put(out, x, name, lo, hi, shape, timed, t):
            """Item x into out[lo:hi]: as it is when it is a float64 array of its shape (or a
            float for a scalar), else through checked (which raises on a bad shape)."""
            if type(x) is np.ndarray and x.dtype is _F64 and x.shape == shape:
                out[lo:hi] = x.ravel()
            elif isinstance(x, float) and not shape:
                out[lo] = x
            else:
                out[lo:hi] = self.checked(name, x, t if timed else None).ravel()

        def cb(req, t, q, v, w, out):
            # Inside an integrator's kernel call no exception may unwind through the
            # Fortran frames (f2py would longjmp over them, leaking the kernel's
            # workspace): it is kept, the item is NaN and the kernel stops at its
            # next poll (pyint/_control.py); the integrator raises it again.
            run = _control.current()
            if run is not None and run.aborted:
                if req > 0:
                    out[:] = np.nan
                return                 # a bundle: its items stay NaN (each is asked alone)
            if req > 0:
                try:
                    out[:] = one(req, t, q, v, w).ravel()
                except BaseException as exc:
                    if run is None:
                        raise
                    out[:] = np.nan
                    run.keep(exc)
                return
            alone, both = plans.get(req) or plan(req)
            try:
                # an item that raises is left NaN: asked again on its own, where the error is reported
                for f, name, lo, hi, shape, timed in alone:
                    try:
                        x = f(t, q, v, w)
                        if type(x) is np.ndarray and x.dtype is _F64 and x.shape == shape:   # (put's first case)
                            out[lo:hi] = x.ravel()
                        else:
                            put(out, x, name, lo, hi, shape, timed, t)
                    except Exception:
                        pass
                for f, targets in both:
                    try:
                        for x, target in zip(f(t, q, v, w), targets):
                            put(out, x, *target, t)
                    except Exception:
                        pass
            except BaseException as exc:   # KeyboardInterrupt, SystemExit: kept as always
                if run is None:
                    raise
                run.keep(exc)

        return cb
