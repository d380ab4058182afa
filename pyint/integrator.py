"""Base class of every integrator, and the method registry that feeds the tests.

Adding a method (the checklist):

1. ``fortran/<method>.f90``: a stepper, an extension of ``stepper_t``
   (fortran/core/driver.f90) with ``init`` (read the options, complete the
   start state, allocate its stats) and ``step`` (one step); the driver owns
   the loop, sampling, the per-step maxima, status, NaN checks, interrupts and
   OpenMP batches.  Its options and stats are read and written by the named
   slots of the generated module ``pyint_seam`` (``IOPT_<METHOD>_<OPTION>``,
   ``STAT_<METHOD>_<NAME>``).
2. ``seam/seam.toml``: one ``[[method]]`` table (id, stepper file, module and type,
   options, stats); the build generates the Fortran constants, the dispatch from
   the id to the stepper and ``pyint._seam`` from it.
3. ``pyint/methods/<family>.py``: a subclass of :class:`Integrator` that declares the
   class attributes below plus ``KERNEL`` (``method_id(name)``), ``STATS`` (the
   description's stat names) and ``kernel_options`` (its options packed by name,
   ``pyint.options.Options``), validating them in ``__init__``.  ``_run``
   and ``integrate_batch`` come from the base class.  Optional hooks:
   ``kernel_aux`` (the stepper's auxiliary vector per sample, by name, into
   ``Result.extra``: the momenta of the symplectic and Galerkin methods),
   ``kernel_start`` (real start data of one trajectory, after the real
   options), ``kernel_model`` (the model block, nq, nv and the number of
   multipliers: for a configuration that is not a vector model).
4. Register it (:func:`register`): it joins ``METHODS`` and with it
   ``integrate_batch`` and the studies (by name).  A method pyint ships is
   decorated with ``@register`` and its module imported in
   ``pyint/methods/__init__.py``: the shared tests (convergence order, agreement
   with the IDA reference, the invariants it claims, the batch and
   per-step-maxima tests of test_driver.py) then run it, and its golden cases
   are recorded (tests/golden_outputs.py; the old cases must not change).

The worked example is explicit Euler on the index-1 form: fortran/explicit_euler.f90 (a
template, compiled into the library but registered by no module of pyint), its table in
seam/seam.toml and tests/test_add_method.py, which registers its class.
"""
from __future__ import annotations

import inspect
import os
import time

import numpy as np

from . import _control, _fortran
from . import _validate as V
from ._progress import run_progress
from ._status import STATUS_ERRORS, STATUS_INTERRUPTED, STATUS_NAMES, STATUS_NEWTON_FAILED, STATUS_NONFINITE, STATUS_OK, \
    STATUS_RANK_DEFICIENT, STATUS_STEP_TOO_LARGE, STATUS_TEXT
from .models._fortran_model import model_args, uses_fortran_twin
from .models.base import nonfinite_item
from .options import AOPT, pack_aopt
from .errors import Interrupted, LapackError
from .results import Result, trajectory_residuals

#: Every registered method by name: ``METHODS["genalpha"]`` is :class:`GeneralizedAlpha` (the
#: name is the ``method`` of results and datasets); every registered method is in the shared test list.
METHODS: dict[str, type] = {}


def register(cls):
    """Add ``cls`` to :data:`METHODS` under ``cls.name`` (a class decorator).  Refused with a
    ValueError: a name another class holds, and a ``KERNEL`` that is no stepper of pyint's Fortran
    library (no stepper for its id in seam/seam.toml)."""
    if not isinstance(cls.name, str) or not cls.name:
        raise ValueError(f"{cls.__qualname__}: a method needs a name (the class attribute 'name')")
    if METHODS.get(cls.name, cls) is not cls:
        held = METHODS[cls.name]
        raise ValueError(f"{cls.__qualname__}: the method name {cls.name!r} is taken by "
                         f"{held.__module__}.{held.__qualname__}")
    if cls.KERNEL is not None and not _fortran.method_known(cls.KERNEL):
        raise ValueError(f"{cls.__qualname__}: KERNEL = {cls.KERNEL} is no stepper of pyint's Fortran "
                         "library (seam/seam.toml describes no method with that id)")
    METHODS[cls.name] = cls
    return cls


class Integrator:
    r"""The base of every integrator of :math:`M(q)\, a = f - G^\mathsf{T}\lambda_h - A^\mathsf{T}\lambda_n` with constraints.

    A method is one subclass (:class:`GeneralizedAlpha`, :class:`RK4Index1`, ...): its
    constructor takes the method's options, :meth:`integrate` runs one trajectory and
    :meth:`integrate_batch` many in threads.  Every registered method is in
    :data:`pyint.METHODS` by name.  The hooks a new method implements are on the developer
    page of the API reference.

    Attributes
    ----------
    name : str
        Registry name (also the ``method`` coordinate in datasets).
    order : int
        Claimed convergence order in q and v (``lambda_order``: in lam, if claimed).
    order_source : str
        Where the claimed orders come from: the seed paper and its section or
        equation, or the classical result (measured by pyint.convergence).
    supports : frozenset
        Subset of {"holonomic", "nonholonomic"}.
    spaces : frozenset
        The configuration spaces of the models it integrates (``model.configuration_space``:
        "R^n", or "(R^3 x SO(3))^nb" for rigid bodies on a Lie group).
    backends : frozenset
        The ``backend`` values it takes (the Lie-group methods, whose whole loop runs in
        Fortran: "auto", "fortran").
    keeps : dict
        Constraint levels kept to round-off, per kind of constraint:
        ``{"holonomic": {"position", ...}, "nonholonomic": {"velocity"}}``.
    invariants : frozenset
        Other claims the tests check, e.g. {"energy_bounded", "symplectic"}.
    """

    name = "integrator"
    order = 1
    order_source = ""
    supports: frozenset = frozenset()
    backends: tuple = ("auto", "fortran", "callback")
    spaces: tuple = ("R^n",)
    keeps: dict = {}
    invariants: frozenset = frozenset()

    def __new__(cls, *args, **kwargs):
        """Check the keyword options against the class's own signature first: a misspelt one is a
        TypeError naming the public class, its close matches (difflib) and its options, instead of
        Python's, which names the (often private) base class whose __init__ received it."""
        if kwargs:
            import difflib

            params = inspect.signature(cls.__init__).parameters
            if not any(p.kind is p.VAR_KEYWORD for p in params.values()):
                names = [k for k, p in params.items() if k != "self" and p.kind in (p.POSITIONAL_OR_KEYWORD,
                                                                                    p.KEYWORD_ONLY)]
                for key in kwargs:
                    if key not in names:
                        close = difflib.get_close_matches(key, names, n=3, cutoff=0.6)
                        hint = f"; did you mean {' or '.join(map(repr, close))}?" if close else ""
                        raise TypeError(f"{cls.__name__} has no option {key!r}{hint} (its options: "
                                        f"{', '.join(names) or 'none'})")
        return super().__new__(cls)

    def __init_subclass__(cls, **kwargs):
        """The signature of a method class is its ``__init__``'s (without self), not the
        ``(*args, **kwargs)`` of the checking ``__new__`` above: what ``inspect.signature`` and
        the API pages show."""
        super().__init_subclass__(**kwargs)
        sig = inspect.signature(cls.__init__)
        cls.__signature__ = sig.replace(parameters=list(sig.parameters.values())[1:])

    def params(self):
        """The method's parameters (scalars) for results and provenance.

        Returns
        -------
        dict
            name -> value: its options (and derived constants, e.g. alpha_m, alpha_f), as
            stored in ``Result.params`` and in a dataset's ``method_params``.
        """
        return {}

    # -- the kernel contract (fortran/core/driver.f90 + the method's stepper) ----
    #: The method id of the method's Fortran stepper (seam/seam.toml); None: the
    #: method overrides ``_run`` (its own kernel entry).
    KERNEL: int | None = None
    #: The names of the stepper's stats array, in its order; ``STATS_REALS``: those that are floats.
    STATS: tuple = ()
    STATS_REALS: frozenset = frozenset()
    #: The stepper's init checks the rank of [G; A] (fortran/core/driver.f90: consistent_start).
    START_CHECKS_RANK = False
    #: The residuals the stepper reports per sample (the driver's nres).
    NRES = 5

    def kernel_options(self, model):
        """(iopt, ropt): the method's integer and real options, in the order its stepper's
        ``init`` reads them."""
        return (), ()

    def kernel_start(self, model, t0, q0, v0):
        """Real start data of one trajectory that its stepper reads after the real options
        (``ropt = kernel_options()[1] + kernel_start()``); default none."""
        return ()

    def _ropt_start(self, model, t0, q0, v0):
        iopt, ropt = self.kernel_options(model)
        return iopt, (*ropt, *self.kernel_start(model, t0, q0, v0))

    def kernel_aux(self, model):
        """The stepper's auxiliary vector per sample: {name: length} in its order; each part
        becomes ``Result.extra[name]`` (time-major), e.g. the momenta ``{"p": n}``."""
        return {}

    def kernel_model(self, model, backend):
        """(args, nq, nv, nl): the model argument block of the driver entries (see
        ``_fortran_model.py``) and the state sizes of the driver for ``model``."""
        return model_args(model, backend), model.n, model.n, model.n_hol + model.n_nonhol

    def decode_stats(self, istat, stats):
        """``Result.stats`` of one run from the kernel's istat and stats arrays."""
        return kernel_stats(self.STATS, istat, stats, self.STATS_REALS)

    def _driver_raw(self, model, buf, nl, istat, aux_parts=None):
        """Time-major views of the driver's outputs of one trajectory (:func:`driver_raw`) with
        the stepper's auxiliary vector split into ``extra`` (``aux_parts``, default :meth:`kernel_aux`)."""
        raw = driver_raw(buf, nl, istat, self.decode_stats(istat, buf["stats"]))
        aux, k = buf["auxout"].T, 0
        raw["extra"] = {}
        for name, size in (self.kernel_aux(model) if aux_parts is None else aux_parts).items():
            raw["extra"][name] = aux[:, k:k + size]
            k += size
        return raw

    def _run(self, model, t0, h, nsteps, every, q0, v0, backend):
        """Call the Fortran kernel; return dict with t, q, v, a, lam (time-major), istat, stats,
        residual and energy per sample, step_max (maxima over every step), and optionally extra
        (name -> time-major array, e.g. momenta p) for ``Result.extra``."""
        if self.KERNEL is None:  # pragma: no cover - a method without a stepper overrides _run
            raise NotImplementedError(f"{type(self).__name__} declares no KERNEL")
        args, nq, nv, nl = self.kernel_model(model, backend)
        iopt, ropt = _option_arrays(self._ropt_start(model, t0, q0, v0))
        buf = driver_buffers(nq, nv, nl, nsteps, every, nstats=len(self.STATS),
                             naux=sum(self.kernel_aux(model).values()), nres=self.NRES)
        istat = _fortran.run(
            self.KERNEL, args["model_id"], args["ipar"], args["rpar"], args["usercb"], nv, args["mh"],
            args["mn"], args["mflags"], iopt, ropt, t0, h, nsteps, every, q0, v0, *(buf[k] for k in _OUT))
        return self._driver_raw(model, buf, nl, istat)

    def integrate_batch(self, models, q0s, v0s, t_end, h=None, t0=0.0, every=1, threads=None, project=False,
                        raise_on_failure=True, *, rtol=None, atol=None, h0=None, h_min=None, h_max=None,
                        t_eval=None, max_steps=100_000, per_unit_step=None):
        """Integrate many trajectories of one built-in model in one Fortran call (OpenMP threads).

        Parameters
        ----------
        models : Model or sequence of Model
            One model (every trajectory uses it) or one model per trajectory: models of the
            same built-in kind and sizes that differ only in their real parameters (masses,
            lengths, ...: a parameter sweep).
        q0s, v0s : array_like, shape (nb, n) or (n,)
            One initial state per trajectory ((n,): the same start for all, with a list of
            models).
        t_end, h, t0, every, project, raise_on_failure
            As for :meth:`integrate`.
        threads : int, optional
            OpenMP threads across the trajectories (default: every CPU).
        rtol, atol, h0, h_min, h_max, t_eval, max_steps, per_unit_step
            Variable steps, as for :meth:`integrate`: every trajectory has its own steps (up to
            ``max_steps`` each).

        Returns
        -------
        list of Result
            One per trajectory, identical to what :meth:`integrate` returns for it
            (``cpu_time``: the batch's CPU time divided by nb; ``stats`` also holds
            ``batch_size`` and ``threads``).

        Raises
        ------
        ValueError
            Models of different kinds or sizes, states of the wrong shape, or any error of
            :meth:`integrate`'s checks.
        IntegrationError
            A trajectory failed (with ``raise_on_failure``); ``exc.result`` holds it.
        Interrupted
            Ctrl-C; ``exc.result`` is the list of the results computed so far.

        Notes
        -----
        A model without a Fortran twin cannot run in threads (its items are Python calls), nor
        can a method without a stepper: such trajectories run one after another through
        :meth:`integrate`.

        Examples
        --------
        >>> import numpy as np
        >>> from pyint import GeneralizedAlpha, PendulumChain
        >>> models = [PendulumChain(n_links=2, length=[1.0, L]) for L in (0.5, 1.0, 2.0)]
        >>> starts = [m.initial_state([0.5, 0.0]) for m in models]      # (q0, v0) of each
        >>> q0s, v0s = np.array([s[0] for s in starts]), np.array([s[1] for s in starts])
        >>> runs = GeneralizedAlpha().integrate_batch(models, q0s, v0s, t_end=1.0, h=1e-3)
        >>> [r.status for r in runs]
        ['ok', 'ok', 'ok']
        """
        models, q0s, v0s = self._batch_inputs(models, q0s, v0s)
        nb = len(models)
        if threads is None:
            threads = os.cpu_count() or 1
        threads = V.as_int(threads, "threads", minimum=1)
        first = models[0]
        adaptive = dict(rtol=rtol, atol=atol, h0=h0, h_min=h_min, h_max=h_max, t_eval=t_eval,
                        max_steps=max_steps, per_unit_step=per_unit_step)
        if not self._batch_runs_in_threads(first):
            results = []
            try:
                for m, q, v in zip(models, q0s, v0s):
                    results.append(self.integrate(m, q, v, t_end, h, t0=t0, every=every, project=project,
                                                  raise_on_failure=raise_on_failure, **adaptive))
            except KeyboardInterrupt as e:   # Ctrl-C: the list of the finished trajectories and the interrupted one
                part = getattr(e, "result", None)
                raise Interrupted(str(e) or f"{self.name}: interrupted (Ctrl-C) after {len(results)} of {nb} "
                                  "trajectories", result=results + ([] if part is None else [part]),
                                  step=getattr(e, "step", None), time=getattr(e, "time", None)) from e
            return results
        for m in models:
            self.check_model(m)
        self._check_step_choice(h, rtol, atol, h0, h_min, h_max, t_eval, per_unit_step)
        if rtol is not None:
            t0, aopt, t_eval, max_steps = self._adaptive_setup(first, t0, t_end, rtol, atol, h0, h_min, h_max,
                                                               t_eval, max_steps, per_unit_step, every)
            h, nsteps = 0.0, 0
        else:
            h, t0, every, nsteps = V.time_grid(h, t0, t_end, every)
            aopt = FIXED_STEP
        kms = [self.kernel_model(m, "fortran") for m in models]
        args = [km[0] for km in kms]
        for m, km in zip(models, kms):
            a = km[0]
            if (type(m) is not type(first) or km[1:] != kms[0][1:] or a["mh"] != args[0]["mh"]
                    or a["mn"] != args[0]["mn"] or not np.array_equal(a["ipar"], args[0]["ipar"])
                    or a["rpar"].size != args[0]["rpar"].size):
                raise ValueError(f"integrate_batch needs models of one kind and size; {m.name!r} differs "
                                 f"from {first.name!r}")
        _, nq, nv, nl = kms[0]
        q0f = np.zeros((nq, nb), order="F")
        v0f = np.zeros((nv, nb), order="F")
        for k, m in enumerate(models):
            q0f[:, k], v0f[:, k] = self._start_state(m, t0, q0s[k], v0s[k], project, "fortran", f"s[{k}]")
        rpar = np.asfortranarray(np.stack([a["rpar"] for a in args], axis=1))
        opts = [self._ropt_start(m, t0, q0f[:, k], v0f[:, k]) for k, m in enumerate(models)]
        if rtol is not None:
            opts = [self.adaptive_options(m, *o) for m, o in zip(models, opts)]
            buf = self._adaptive_buffers(first, nq, nv, nl, max_steps, aopt, nb=nb)
        else:
            buf = driver_buffers(nq, nv, nl, nsteps, every, nstats=len(self.STATS),
                                 naux=sum(self.kernel_aux(first).values()), nres=self.NRES, nb=nb)
        opts = [_option_arrays(o) for o in opts]
        iopt = opts[0][0]
        ropt = np.asfortranarray(np.stack([o[1] for o in opts], axis=1))
        a = args[0]
        cpu = time.process_time()
        with _control.kernel_run() as run:
            istat = _fortran.run_batch(
                self.KERNEL, a["model_id"], a["ipar"], rpar, nv, a["mh"], a["mn"], a["mflags"], iopt, ropt,
                t0, h, nsteps, every, threads, q0f, v0f, *(buf[k] for k in _OUT_BATCH), aopt, buf["hout"],
                buf["counts"])
        cpu = (time.process_time() - cpu) / nb
        results = []
        stopped = run.interrupted or run.lapack is not None   # raised below with every result
        for k, m in enumerate(models):
            one = {key: x[..., k] for key, x in buf.items()}
            one["q0"] = q0f[:, k]
            if rtol is not None:
                result = self._adaptive_result(m, one, nl, istat[:, k], aopt, t0, t_eval, cpu, "fortran",
                                               raise_on_failure and not stopped, None)
                result.stats.update(batch_size=nb, threads=threads)
            else:
                raw = self._driver_raw(m, one, nl, istat[:, k])
                raw["stats"].update(batch_size=nb, threads=threads)
                raw["q0"] = q0f[:, k]
                result = self._make_result(m, raw, t0, h, cpu, "fortran", raise_on_failure and not stopped)
            results.append(result)
        if stopped:
            raise_recorded(run, results, int(istat[0, 0]), int(istat[1, 0]), t0, h if rtol is None else results[0].h)
        return results

    def _batch_inputs(self, models, q0s, v0s):
        """(list of models, q0s, v0s) with one model and one initial state per trajectory."""
        return _batch_inputs(models, q0s, v0s)

    def _batch_runs_in_threads(self, model):
        """Can a batch of ``model`` run in one threaded Fortran call (a stepper and a model
        whose items are Fortran: a built-in twin)?"""
        return model.fortran_name is not None and self.KERNEL is not None

    def _start_state(self, model, t0, q0, v0, project, backend, suffix=""):
        """The driver's start vectors (q0, v0) from the user's, checked (``q0{suffix}`` names
        them in errors) and consistent with the constraints (projected when ``project``).  A
        model whose configuration space is not R^n checks its own (``checked_initial_state``)."""
        hook = getattr(model, "checked_initial_state", None)
        if hook is not None:
            return hook(t0, q0, v0, project=project)
        q0 = V.as_vector(q0, model.n, f"q0{suffix}")
        v0 = V.as_vector(v0, model.n, f"v0{suffix}")
        return self._initial_state(model, t0, q0, v0, project, backend)

    def _initial_state(self, model, t0, q0, v0, project, backend):
        """(q0, v0) checked against the constraints (projected when ``project``); the rank of
        [G; A] and the model's items are left to the kernel when its stepper checks them at the
        start (``START_CHECKS_RANK``) on the model's Fortran twin."""
        kernel_checks = self.START_CHECKS_RANK and uses_fortran_twin(model, backend)
        levels = _twin_levels(model, backend) if uses_fortran_twin(model, backend) else None
        return V.consistent_initial_state(model, t0, q0, v0, project=project, kernel_checks=kernel_checks,
                                          levels=levels)

    @classmethod
    def accepts(cls, model):
        """Does this method integrate ``model``?

        Parameters
        ----------
        model : Model
            A model (its configuration space and its kinds of constraints are checked).

        Returns
        -------
        bool
            True when the method handles the model's configuration space and constraints.

        Examples
        --------
        >>> from pyint import GeneralizedAlpha, Rattle, ChaplyginSleigh
        >>> GeneralizedAlpha.accepts(ChaplyginSleigh()), Rattle.accepts(ChaplyginSleigh())
        (True, False)
        """
        try:
            cls.check_model(cls.__new__(cls), model)
        except (TypeError, ValueError):
            return False
        return True

    def check_model(self, model):
        space = getattr(model, "configuration_space", "R^n")
        if space not in self.spaces:
            raise TypeError(f"{self.name} integrates models whose configuration space is "
                            f"{' or '.join(self.spaces)}; model {getattr(model, 'name', type(model).__name__)!r} "
                            f"lives on {space} (methods for it: "
                            f"{sorted(k for k, c in METHODS.items() if space in c.spaces)})")
        n = getattr(model, "n", None)
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise ValueError(f"model {getattr(model, 'name', type(model).__name__)!r} has n = {n!r} coordinates; "
                             "an integrator needs at least 1")
        if n > V.C_INT_MAX:
            raise ValueError(f"model {model.name!r} has n = {n} coordinates, above the kernels' limit 2**31 - 1")
        if model.n_hol and "holonomic" not in self.supports:
            raise ValueError(f"{self.name} does not handle holonomic constraints (model {model.name!r} has {model.n_hol})")
        if model.n_nonhol and "nonholonomic" not in self.supports:
            raise ValueError(f"{self.name} does not handle nonholonomic constraints (model {model.name!r} has {model.n_nonhol})")

    #: Why the method does not run with variable steps (rtol), or None when it does (its stepper
    #: sets est_power: fortran/core/driver.f90, drive_adaptive).
    ADAPTIVE_REFUSAL: str | None = ("it has no local error estimate yet (docs/adaptive_steps.md; generalized-alpha, "
                                    "alpha-RATTLE, lie_genalpha_s2, rk4_index1 and the block methods have one)")

    #: The error of a variable-step run is controlled per equal share of the steps (None: the local
    #: error of the solution the method advances at most tol / N, N the steps the run is expected to
    #: take; global error ~ tol, docs/adaptive_steps.md section 5.1), per unit step (True: at most
    #: tol h / span) or per step (False: an embedded lower-order estimate with local extrapolation:
    #: RK4), docs/adaptive_steps.md sections 2, 5.
    ADAPTIVE_PER_UNIT_STEP = None
    #: ``a`` at a sample is qddot there (not an algorithmic acceleration): outputs at t_eval
    #: interpolate v with it (cubic Hermite in (v, a), O(h^4)) instead of differentiating q's.
    ACCELERATION_IS_QDDOT = False
    #: Outputs at t_eval by quintic Hermite in (q, v, a) (q: O(h^6), v its derivative: O(h^5); needs
    #: ACCELERATION_IS_QDDOT): for a method of order above 4, whose steps cubic Hermite would spoil.
    OUTPUT_QUINTIC = False

    def adaptive_refusal(self, model):
        """None when the method runs ``model`` with variable steps, else the reason it does not."""
        return self.ADAPTIVE_REFUSAL

    def adaptive_options(self, model, iopt, ropt):
        """(iopt, ropt) of a variable-step run (default: the fixed-step ones)."""
        return iopt, ropt

    def adaptive_aux(self, model):
        """The stepper's auxiliary vector per sample of a variable-step run (as :meth:`kernel_aux`;
        default: the fixed-step one)."""
        return self.kernel_aux(model)

    def integrate(self, model, q0, v0, t_end, h=None, t0=0.0, every=1, backend="auto", project=False,
                  raise_on_failure=True, *, rtol=None, atol=None, h0=None, h_min=None, h_max=None, t_eval=None,
                  max_steps=100_000, per_unit_step=None, progress=None):
        """Integrate from (t0, q0, v0) to t_end, at a fixed step h or with variable steps (rtol).

        Parameters
        ----------
        model : Model
            The system (:class:`pyint.models.Model`, a built-in model, a
            :class:`~pyint.models.SymbolicModel`, or rigid bodies for the Lie-group methods).
        q0, v0 : array_like, shape (n,)
            The initial configuration and velocity; they must satisfy the constraints
            (position and velocity level) unless ``project`` is True.
        t_end : float
            The final time.
        h : float, optional
            The fixed step (give either ``h`` or ``rtol``, never both).  The last step ends
            exactly at t_end.
        t0 : float, default 0.0
            The initial time.
        every : int, default 1
            Keep every ``every``-th step as a sample (the last sample is always the final
            state, also when ``every`` does not divide the number of steps).
        backend : {"auto", "fortran", "callback"}, default "auto"
            "auto": the model's Fortran twin when it has one (built-in and symbolic models:
            the whole loop runs in Fortran), else Python callbacks; "callback": the model
            evaluated in Python (a prototype, or to check a twin).
        project : bool, default False
            Project an inconsistent initial state onto the constraints (M-orthogonal)
            instead of raising a ValueError.
        raise_on_failure : bool, default True
            On a failure (Newton, a singular matrix, NaN) raise an
            :class:`~pyint.errors.IntegrationError` whose ``result`` holds the steps
            computed so far; False: return that result with ``status`` set instead.
        rtol : float, optional
            Variable steps (keyword only): the relative tolerance of the one step controller
            (docs: adaptive steps), for a method with a local error estimate
            (generalized-alpha, alpha-RATTLE, lie_genalpha_s2, rk4_index1, the block
            methods; the others raise a ValueError naming why).  The RMS norm of the
            estimate is scaled by ``atol + rtol |y|``; PI control; a step is rejected on the
            error test or a Newton failure.
        atol : float, optional
            The absolute tolerance (default: rtol).
        h0 : float, optional
            The first step (default: Hairer, Norsett and Wanner's starting step, Solving ODEs I,
            II.4).
        h_min, h_max : float, optional
            Bounds of the step (default 1e-12 (t_end - t0) and t_end - t0); the run stops with
            an IntegrationError below h_min.
        t_eval : array_like, optional
            Output times of a variable-step run: cubic Hermite interpolation over the
            accepted step, then re-imposed onto the constraints (:math:`q` onto :math:`g = 0`,
            :math:`v` onto the velocity constraints, M-orthogonal; :math:`a` and the multipliers
            from the index-1 system).  Default:
            the samples are the accepted steps.
        max_steps : int, default 100000
            The step attempts a variable-step run may take (beyond: an IntegrationError).
        per_unit_step : bool, optional
            What the error of a variable-step run is controlled per: None (the method's
            default: the alpha family per equal share of the steps, RK4 per step, the block
            methods per unit step), True (per unit step) or False (per step).
        progress : bool, optional
            A progress line on stderr (the time reached, elapsed and remaining wall time),
            redrawn every second once a run has taken 2 s (a shorter run prints nothing).  None
            (default): when stderr is a terminal; True: always; False: never.  It costs the
            time loop nothing (the kernel already polls for Ctrl-C once per step).

        Returns
        -------
        Result
            The trajectory: time-major samples ``t, q, v, a, lam``, the constraint residuals
            (``residual``, columns named by ``Result.residual_names``), the energy, the
            maxima ``eps_pos``, ``eps_vel``, ``eps_acc``, ``energy_drift``, the method's
            ``stats`` and ``status`` ("ok" unless ``raise_on_failure`` is False).

        Raises
        ------
        ValueError
            Inconsistent inputs: wrong shapes, both or neither of h and rtol, an option of
            variable steps at a fixed step, an initial state off the constraints (without
            ``project``), a model the method does not handle.
        IntegrationError
            The run failed (:class:`~pyint.errors.NewtonConvergenceError`,
            :class:`~pyint.errors.SingularMatrixError`, :class:`~pyint.errors.NonFiniteError`,
            ...); ``exc.result`` holds the trajectory up to the failure.
        Interrupted
            Ctrl-C (a KeyboardInterrupt) with the steps computed so far in ``exc.result``.
        LapackError
            A LAPACK argument error (a bug in pyint).

        The exception a model item raises (a wrong shape: ValueError; NaN or Inf:
        NonFiniteError) is raised again, with ``result`` attached where it can be.

        Examples
        --------
        >>> import numpy as np
        >>> from pyint import GeneralizedAlpha, PendulumChain
        >>> model = PendulumChain(n_links=2)
        >>> q0, v0 = model.initial_state([np.pi / 3, np.pi / 2])
        >>> res = GeneralizedAlpha().integrate(model, q0, v0, t_end=1.0, h=1e-3, every=10)
        >>> res.status, len(res.t)
        ('ok', 101)
        >>> res.eps_pos < 1e-12        # index 3: g(q) = 0 to round-off at every step
        True
        >>> var = GeneralizedAlpha().integrate(model, q0, v0, t_end=1.0, rtol=1e-6)
        >>> var.status, var.stats["accepted"] > 0
        ('ok', True)
        """
        self.check_model(model)
        if backend not in self.backends:
            raise ValueError(f"{self.name}: backend must be one of {list(self.backends)}, got {backend!r}")
        self._check_step_choice(h, rtol, atol, h0, h_min, h_max, t_eval, per_unit_step)
        with run_progress(f"{self.name} {getattr(model, 'name', '')}".strip(), t0, t_end, enabled=progress):
            if rtol is not None:
                return self._integrate_adaptive(model, q0, v0, t_end, t0, backend, project, raise_on_failure, rtol,
                                                atol, h0, h_min, h_max, t_eval, max_steps, per_unit_step, every)
            return self._integrate_fixed(model, q0, v0, t_end, h, t0, every, backend, project, raise_on_failure)

    def _integrate_fixed(self, model, q0, v0, t_end, h, t0, every, backend, project, raise_on_failure):
        """A fixed-step run of :meth:`integrate` (its options checked)."""
        h, t0, every, nsteps = V.time_grid(h, t0, t_end, every)
        q0, v0 = self._start_state(model, t0, q0, v0, project, backend)

        cpu = time.process_time()
        with _control.kernel_run() as run:
            raw = self._run(model, t0, h, nsteps, every, q0, v0, backend)
        cpu = time.process_time() - cpu
        raw["q0"] = q0
        return self._make_result(model, raw, t0, h, cpu, backend, raise_on_failure, run)

    def _check_step_choice(self, h, rtol, atol, h0, h_min, h_max, t_eval, per_unit_step):
        """Exactly one of h (a fixed step) and rtol (variable steps), and no option of variable
        steps with a fixed step (integrate and integrate_batch)."""
        if rtol is not None:
            if h is not None:
                raise ValueError(f"{self.name}: give either h (a fixed step) or rtol (variable steps), not both")
            return
        if h is None:
            raise ValueError(f"{self.name}: give the step h (a fixed step) or rtol (variable steps)")
        for name, value in (("atol", atol), ("h0", h0), ("h_min", h_min), ("h_max", h_max), ("t_eval", t_eval),
                            ("per_unit_step", per_unit_step)):
            if value is not None:
                raise ValueError(f"{self.name}: {name} is an option of variable steps (rtol); a fixed-step run "
                                 f"(h = {h!r}) takes none")

    def _adaptive_setup(self, model, t0, t_end, rtol, atol, h0, h_min, h_max, t_eval, max_steps, per_unit_step,
                        every):
        """The checked options of a variable-step run: (t0, aopt, t_eval, max_steps); aopt is the
        driver's [t_end, rtol, atol, h0, h_min, h_max, norm_mode] (fortran/api/api_run.f90)."""
        why = self.adaptive_refusal(model)
        if why is not None:
            raise ValueError(f"{self.name} runs at a fixed step only (give h, not rtol): {why}")
        if self.KERNEL is None:  # pragma: no cover - every method with an estimate has a stepper
            raise ValueError(f"{self.name} has no stepper of the one driver: no variable steps")
        if every != 1:
            raise ValueError(f"{self.name}: every is an option of fixed steps; with rtol the samples are the accepted "
                             "steps, or t_eval")
        t0 = V.as_real(t0, "t0")
        t_end = V.as_real(t_end, "t_end")
        if not t_end > t0:
            raise ValueError(f"t_end = {t_end!r} must be after t0 = {t0!r}")
        span = t_end - t0
        rtol = V.as_real(rtol, "rtol", positive=True)
        if rtol < 1e-13 or rtol >= 1:
            raise ValueError(f"rtol = {rtol!r} must lie in [1e-13, 1) (below, round-off dominates the estimate)")
        atol = rtol if atol is None else V.as_real(atol, "atol")
        if not atol > 0:   # the norm divides by atol + rtol |y|: 0/0 at a component that is zero
            raise ValueError(f"atol = {atol!r} must be > 0: atol + rtol |y| scales the error of each component, and "
                             "with atol = 0 a component at zero (a velocity at rest) has no scale; give atol > 0")
        h_min = 1e-12 * span if h_min is None else V.as_real(h_min, "h_min", positive=True)
        h_max = span if h_max is None else V.as_real(h_max, "h_max", positive=True)
        if h_max < h_min:
            raise ValueError(f"h_max = {h_max!r} is below h_min = {h_min!r}")
        h0 = 0.0 if h0 is None else V.as_real(h0, "h0", positive=True)
        if h0 and not h_min <= h0 <= h_max:
            raise ValueError(f"h0 = {h0!r} must lie in [h_min, h_max] = [{h_min!r}, {h_max!r}]")
        max_steps = V.as_int(max_steps, "max_steps", minimum=1)
        if per_unit_step is None:
            per_unit_step = self.ADAPTIVE_PER_UNIT_STEP
        if per_unit_step is not None and not isinstance(per_unit_step, (bool, np.bool_)):
            raise TypeError(f"per_unit_step must be True or False, got {per_unit_step!r}")
        if t_eval is not None:
            t_eval = np.asarray(t_eval, dtype=float)
            if t_eval.ndim != 1 or t_eval.size == 0 or not np.all(np.isfinite(t_eval)):
                raise ValueError(f"t_eval must be a non-empty 1-D array of finite times, got shape {t_eval.shape}")
            if np.any(np.diff(t_eval) < 0) or t_eval[0] < t0 or t_eval[-1] > t_end:
                raise ValueError(f"t_eval must be nondecreasing within [t0, t_end] = [{t0!r}, {t_end!r}]")
        mode = 2 if per_unit_step is None else int(per_unit_step)    # the driver's norm_mode
        aopt = pack_aopt(t_end=t_end, rtol=rtol, atol=atol, h0=h0, h_min=h_min, h_max=h_max, norm_mode=mode)
        return t0, aopt, t_eval, max_steps

    def _adaptive_buffers(self, model, nq, nv, nl, max_steps, aopt, nb=None):
        """The driver's outputs for max_steps accepted steps (per trajectory) and its variable-step block."""
        try:   # the driver writes every accepted step: buffers for max_steps of them
            buf = driver_buffers(nq, nv, nl, max_steps, 1, nstats=len(self.STATS),
                                 naux=sum(self.adaptive_aux(model).values()), nres=self.NRES, nb=nb, warn=False,
                                 room=True)
        except ValueError as e:
            raise ValueError(f"{self.name} on model {model.name!r}: {e}") from None
        buf.update(hout=np.empty((max_steps,) + (() if nb is None else (nb,)), order="F"))   # hout[:accepted] read
        if nb is None:
            buf.update(aopt=aopt)
        return buf

    def _adaptive_result(self, model, buf, nl, istat, aopt, t0, t_eval, cpu, backend, raise_on_failure, run):
        """The Result of one variable-step trajectory from its driver outputs (``buf`` of one trajectory)."""
        raw = self._driver_raw(model, buf, nl, istat, self.adaptive_aux(model))
        raw["q0"] = buf.get("q0")
        counts = buf["counts"]
        raw["stats"].update(accepted=int(counts[0]), rejected=int(counts[1]), newton_failures=int(counts[2]),
                            rtol=float(aopt[AOPT["rtol"]]), atol=float(aopt[AOPT["atol"]]),
                            norm_mode=int(aopt[AOPT["norm_mode"]]))    # 0 per step, 1 per unit step, 2 per equal share
        hs = buf["hout"][:int(istat[1])].copy()
        result = self._make_result(model, raw, t0, hs, cpu, backend, raise_on_failure, run)
        if t_eval is not None and result.status == "ok":
            result = self.outputs_at(result, t_eval, backend)
        return result

    def outputs_at(self, result, t_eval, backend):
        """``result`` (the accepted steps of a variable-step run) at the times t_eval, interpolated and
        re-imposed (:func:`_outputs_at`; a configuration space that is not R^n overrides it)."""
        return _outputs_at(result, t_eval, backend, self.ACCELERATION_IS_QDDOT,
                           self.ACCELERATION_IS_QDDOT and self.OUTPUT_QUINTIC)

    def _integrate_adaptive(self, model, q0, v0, t_end, t0, backend, project, raise_on_failure, rtol, atol, h0,
                            h_min, h_max, t_eval, max_steps, per_unit_step, every):
        """The variable-step run of :meth:`integrate` (fortran/core/driver.f90: drive_adaptive)."""
        t0, aopt, t_eval, max_steps = self._adaptive_setup(model, t0, t_end, rtol, atol, h0, h_min, h_max, t_eval,
                                                           max_steps, per_unit_step, every)
        q0, v0 = self._start_state(model, t0, q0, v0, project, backend)
        args, nq, nv, nl = self.kernel_model(model, backend)
        iopt, ropt = _option_arrays(self.adaptive_options(model, *self._ropt_start(model, t0, q0, v0)))
        buf = self._adaptive_buffers(model, nq, nv, nl, max_steps, aopt)
        cpu = time.process_time()
        with _control.kernel_run() as run:
            istat = _fortran.run(
                self.KERNEL, args["model_id"], args["ipar"], args["rpar"], args["usercb"], nv, args["mh"],
                args["mn"], args["mflags"], iopt, ropt, t0, 0.0, 0, 1, q0, v0, *(buf[k] for k in _OUT))
        cpu = time.process_time() - cpu
        buf["q0"] = q0
        return self._adaptive_result(model, buf, nl, istat, aopt, t0, t_eval, cpu, backend, raise_on_failure, run)

    def _make_result(self, model, raw, t0, h, cpu, backend="auto", raise_on_failure=True, run=None):
        """The Result of one trajectory from the raw kernel output (see ``_run``);
        raises the IntegrationError of a failed run when raise_on_failure (and
        always what ``run``, the kernel call's :class:`_control.KernelRun`, recorded)."""
        status, steps_done, nsamples = (int(x) for x in raw["istat"])
        if status == STATUS_RANK_DEFICIENT:   # bad input, found by the kernel's start: as check_rank says it
            mass = V.singular_mass(model, t0, raw.get("q0"))   # unless M is at fault, not the constraints
            if mass is not None:
                raise mass
            raise ValueError(f"the constraint Jacobian [G; A] is singular at t={t0} and its rank is higher at nearby "
                             "configurations: a start at a singular position (where the mechanism's mobility "
                             "jumps), not redundant constraints, or degenerate constraints with no independent "
                             f"subset of its {model.n_hol + model.n_nonhol} rows; start away from the singular "
                             "position (fortran/core/reduced_model.f90: drop_redundant_rows)")
        if run is not None and run.aborted:
            # samples written while a model item was failing (NaN-filled) are not results
            good = np.all(np.isfinite(raw["q"][:nsamples]), axis=1) & np.all(np.isfinite(raw["v"][:nsamples]), axis=1)
            nsamples = int(np.argmin(good)) if not good.all() else nsamples
        sl = slice(0, nsamples)
        t, q, v, a, lam = (raw[k][sl] for k in ("t", "q", "v", "a", "lam"))
        if "residual" in raw:   # from the driver, at every sample
            res, energy = raw["residual"][sl], raw["energy"][sl]
            hook = getattr(model, "sample_residuals", None)     # a configuration space's own columns
            res, extra = hook(res) if hook is not None else (res, {})
        else:
            # after a model item raised, residuals where it raises again are NaN
            res, energy, extra = model_residuals(model, t, q, v, a, backend,
                                                 keep_going=run is not None and run.aborted)
        extra.update({k: x[sl] for k, x in raw.get("extra", {}).items()})   # method-specific arrays (time-major)
        step_max = dict(raw.get("step_max", {}))       # maxima over every step, as the kernel tracked them
        if step_max:
            extra["step_max"] = step_max
        result = Result(
            method=self.name, model=model, t=t, q=q, v=v, a=a, lam=lam, residual=res,
            energy=energy if model.has_energy else None, stats=raw["stats"],
            params=self.params(), h=h, status=STATUS_NAMES.get(status, f"status{status}"),
            cpu_time=cpu, extra=extra, redundant=raw.get("redundant", np.zeros(0, dtype=int)))
        return report_failure(result, status, steps_done, t0, h, raise_on_failure, run)


#: The base class takes no options (its subclasses' signatures: Integrator.__init_subclass__).
Integrator.__signature__ = inspect.Signature()


def _twin_levels(model, backend):
    """(t, q, v) -> (max|g|, max|G v + g_t|, max|A v + b|) through the model's Fortran twin
    (fortran/core/metrics.f90: the structured items, O(nnz); the Python default of
    G v + g_t forms the dense G, O(N^2) for the N-link chain: 20 ms at N = 1024)."""
    def levels(t, q, v):
        res, _ = trajectory_residuals(model, [t], q[None, :], v[None, :], np.zeros((1, model.n)), backend)
        return res[0, 0], res[0, 1], res[0, 3]
    return levels


def _outputs_at(result, t_eval, backend, a_is_qddot=False, quintic=False):
    """``result`` (the accepted steps of a variable-step run) at the times t_eval: cubic Hermite
    interpolation in (q, v) over the step holding each time (v its derivative: errors O(h^4) in q,
    O(h^3) in v; with ``a_is_qddot`` v by cubic Hermite in (v, a): O(h^4); with ``quintic`` q by
    quintic Hermite in (q, v, a), v its derivative: O(h^6), O(h^5)), then re-imposed as pyint.reference does: q
    projected onto g = 0 (M-orthogonal Gauss-Newton), v onto G v + g_t = 0, A v + b = 0, a and lam
    from the index-1 system there (docs/adaptive_steps.md section 5), all samples in one Fortran
    call (fortran/core/model.f90: impose_constraints)."""
    model, t = result.model, result.t
    k = np.clip(np.searchsorted(t, t_eval, side="left") - 1, 0, t.size - 2)
    h = (t[k + 1] - t[k])[:, None]
    th = ((t_eval - t[k]) / h[:, 0])[:, None]
    q0, v0, q1, v1 = result.q[k], result.v[k], result.q[k + 1], result.v[k + 1]
    if quintic:
        a0, a1 = h * h * result.a[k], h * h * result.a[k + 1]
        b = (1 - 10 * th**3 + 15 * th**4 - 6 * th**5, th - 6 * th**3 + 8 * th**4 - 3 * th**5,
             (th**2 - 3 * th**3 + 3 * th**4 - th**5) / 2, 10 * th**3 - 15 * th**4 + 6 * th**5,
             -4 * th**3 + 7 * th**4 - 3 * th**5, (th**3 - 2 * th**4 + th**5) / 2)
        d = (-30 * th**2 + 60 * th**3 - 30 * th**4, 1 - 18 * th**2 + 32 * th**3 - 15 * th**4,
             (2 * th - 9 * th**2 + 12 * th**3 - 5 * th**4) / 2, 30 * th**2 - 60 * th**3 + 30 * th**4,
             -12 * th**2 + 28 * th**3 - 15 * th**4, (3 * th**2 - 8 * th**3 + 5 * th**4) / 2)
        q = b[0] * q0 + b[1] * h * v0 + b[2] * a0 + b[3] * q1 + b[4] * h * v1 + b[5] * a1
        v = (d[0] * q0 + d[1] * h * v0 + d[2] * a0 + d[3] * q1 + d[4] * h * v1 + d[5] * a1) / h
    else:
        h00, h10, h01, h11 = 2 * th**3 - 3 * th**2 + 1, th**3 - 2 * th**2 + th, -2 * th**3 + 3 * th**2, th**3 - th**2
        q = h00 * q0 + h10 * h * v0 + h01 * q1 + h11 * h * v1
        if a_is_qddot:
            v = h00 * v0 + h10 * h * result.a[k] + h01 * v1 + h11 * h * result.a[k + 1]
        else:
            d00, d10, d01, d11 = 6 * th**2 - 6 * th, 3 * th**2 - 4 * th + 1, -6 * th**2 + 6 * th, 3 * th**2 - 2 * th
            v = (d00 * q0 + d10 * h * v0 + d01 * q1 + d11 * h * v1) / h
    q, v, a, lam = impose_constraints(model, t_eval, q, v, backend, result)
    return replace_samples(result, t_eval, q, v, a, lam, backend)


def impose_constraints(model, t, q, v, backend="auto", result=None):
    """(q, v, a, lam) at the times t (nt,) from states (nt, n) near the constraints: q projected onto
    g = 0 (M-orthogonal Gauss-Newton, max |g| <= 1e-13), v onto G v + g_t = 0, A v + b = 0
    (M-orthogonal), a and lam from the index-1 system: one Fortran call for all samples through the
    model's Fortran twin, compiled library or callback (fortran/core/model.f90: impose_constraints).
    A model item's exception is raised again; a failure raises IntegrationError naming the sample's
    time, Ctrl-C Interrupted, each carrying ``result`` (the steps the outputs come from)."""
    from .errors import IntegrationError
    from .models._fortran_model import QueryFailed, model_query
    n, nl, nt = model.n, model.n_hol + model.n_nonhol, len(t)
    shapes = [(n, nt), (n, nt), (n, nt), (nl, nt)]
    x = [np.asarray(t, dtype=float), np.asarray(q).T, np.asarray(v).T]
    with _control.kernel_run() as run:
        try:
            *out, _ = model_query(model, "outputs", x, [*shapes, (1,)], [nt, 0], backend)   # solver 0: auto
            failed = None
        except QueryFailed as exc:
            failed, k = exc.ierr, int(exc.out[-1]) if exc.out is not None else 0
    if run.error is not None:
        raise run.error
    if failed is not None:
        where = f" at t = {t[k - 1]:.6g} (output {k} of {nt})" if 1 <= k <= nt else ""
        if run.interrupted or failed == STATUS_INTERRUPTED:
            raise Interrupted(f"interrupted while re-imposing the constraints at the outputs (t_eval){where}",
                              result=result)
        why = {1: "the index-1 matrix [M C^T; C 0] is singular", 2: "no linear solver could be set up",
               4: "the projection onto g = 0 did not converge"}.get(failed, f"status {failed}")
        raise IntegrationError(f"re-imposing the constraints at the outputs (t_eval) failed{where}: {why}",
                               result=result)
    return tuple(o.T.copy() for o in out)


def replace_samples(result, t_eval, q, v, a, lam, backend):
    """``result`` with its samples (the accepted steps) replaced by the outputs (q, v, a, lam) at t_eval,
    their residuals and energy measured; extra["steps_t"]: the accepted steps' end times."""
    model, t = result.model, result.t
    res, energy, extra = model_residuals(model, t_eval, q, v, a, backend)
    result.extra.update(extra)
    result.extra["steps_t"] = t.copy()      # the accepted steps' end times (t_eval replaces the samples)
    result.t, result.q, result.v, result.a, result.lam, result.residual = t_eval.copy(), q, v, a, lam, res
    result.energy = energy if model.has_energy else None
    return result


def model_residuals(model, t, q, v, a, backend="auto", keep_going=False):
    """(residual (nt, 5), energy (nt,), extra) of the samples: :func:`pyint.results.trajectory_residuals`,
    or the model's own ``trajectory_residuals`` (a configuration space that is not R^n), whose
    ``extra`` holds what else it measures per sample (rigid bodies: orthogonality)."""
    hook = getattr(model, "trajectory_residuals", None)
    if hook is not None:
        return hook(t, q, v, a, backend, keep_going)
    res, energy = trajectory_residuals(model, t, q, v, a, backend, keep_going=keep_going)
    return res, energy, {}


def report_failure(result, status, steps_done, t0, h, raise_on_failure=True, run=None):
    """Attach the failure message of a kernel status to ``result`` (which holds the
    steps computed before it) and raise its IntegrationError, or return it.
    What ``run`` (the kernel call's :class:`_control.KernelRun`) recorded is always
    raised: a model item's exception (again, with ``result`` attached where it can
    be), a LAPACK argument error, Ctrl-C."""
    if run is not None:
        raise_recorded(run, result, status, steps_done, t0, h)
    if status != STATUS_OK:
        t_fail = _fail_time(t0, h, steps_done)
        result.message = (f"{result.method}: {STATUS_TEXT.get(status, 'failure')} at step {steps_done + 1} "
                          f"(t = {t_fail:.6g}); returning the {steps_done} steps computed before it"
                          + _failure_cause(result, status, h))
        if raise_on_failure:
            raise STATUS_ERRORS.get(status, RuntimeError)(result.message, result=result,
                                                           step=steps_done + 1, time=t_fail)
    return result


def _failure_cause(result, status, h):
    """What to add to the message of a failed run: the cause where it can be found, the next step.

    A non-finite state: the first model item that is non-finite at the last good state, at the
    failed step's start, middle or end (a compiled item is checked by no callback; the state only
    shows it a step later); none: the step itself overflowed.  Newton's failure at a fixed h, and
    a step-to-step oscillation (the driver's guard): a smaller h, or variable steps where the
    method has them, is the cure."""
    fixed = np.ndim(h) == 0

    def or_variable_steps():
        adaptive = getattr(METHODS.get(result.method), "ADAPTIVE_REFUSAL", "") is None
        return ", or with variable steps (rtol=... instead of h)" if adaptive else ""

    if status == STATUS_NONFINITE and len(result.t):
        t, q, v, a = result.t[-1], result.q[-1], result.v[-1], result.a[-1]
        for tt in ((t, t + h / 2, t + h) if fixed else (t,)):
            try:
                err = nonfinite_item(result.model, float(tt), q, v, a)
            except Exception:  # noqa: BLE001 - a model item that fails here, or a configuration space
                return ""      # other than R^n (Lie groups): nothing more to say than the status
            if err is not None:
                return f": {err}"
        return (": every model item is finite at the last state, so the step itself overflowed"
                + (f"; retry with a smaller h (this run: h = {h:g})" if fixed else ""))
    if status == STATUS_STEP_TOO_LARGE:
        return f"; retry with a smaller h (this run: h = {h:g})" + or_variable_steps()
    if status == STATUS_NEWTON_FAILED and fixed:
        return (f"; at h = {h:g} the step may be too large for Newton's method to converge from its "
                f"predictor: retry with a smaller h (e.g. h = {h / 4:g})" + or_variable_steps())
    return ""


def _fail_time(t0, h, steps_done):
    """The time a run stopped at: the end of the failed step of a fixed-step run (h a float), the
    end of the last accepted step of a variable-step one (h the array of accepted steps)."""
    if np.ndim(h) == 0:
        return t0 + (steps_done + 1) * h
    return t0 + float(np.sum(h[:steps_done]))


def raise_recorded(run, result, status, steps_done, t0, h):
    """Raise what the kernel call ``run`` recorded, with ``result`` (or the list of a
    batch's results) attached; return when it recorded nothing."""
    first = result[0] if isinstance(result, list) else result
    t_fail = _fail_time(t0, h, steps_done)
    where = f"at step {steps_done + 1} (t = {t_fail:.6g}); returning the {steps_done} steps computed before it"
    if run.error is not None and not isinstance(run.error, KeyboardInterrupt):
        err = run.error
        first.status = "aborted"
        first.message = f"{first.method}: the model raised {type(err).__name__}: {err} ({where})"
        for name, value in (("result", result), ("step", steps_done + 1), ("time", t_fail)):
            if getattr(err, name, None) is None:
                try:
                    setattr(err, name, value)
                except (AttributeError, TypeError):   # an exception type without a __dict__
                    pass
        raise err
    if run.lapack is not None:
        routine, arg = run.lapack
        first.status = "lapack_error"
        first.message = (f"{first.method}: LAPACK routine {routine} rejected its argument {arg} {where} "
                         f"(a bug in pyint: please report it)")
        raise LapackError(first.message, result=result, step=steps_done + 1, time=t_fail,
                          routine=routine, argument=arg)
    if run.interrupted or status == STATUS_INTERRUPTED or isinstance(run.error, KeyboardInterrupt):
        first.status = "interrupted"
        first.message = f"{first.method}: interrupted (Ctrl-C) {where}"
        raise Interrupted(first.message, result=result, step=steps_done + 1, time=t_fail)


def n_samples(nsteps, every):
    """Output samples of nsteps steps kept every `every`: t0, every `every`-th step,
    and the final state when `every` does not divide nsteps."""
    return nsteps // every + 1 + (nsteps % every != 0)


def output_buffers(n, nl, nsteps, every):
    """Fortran-ordered output arrays for :func:`n_samples` samples (refused above
    :data:`pyint._validate.MAX_OUTPUT_BYTES`, see :func:`~pyint._validate.check_output_size`)."""
    nout = n_samples(nsteps, every)
    V.check_output_size(nout, 1 + 3 * n + max(nl, 1), nsteps, every)
    return dict(tout=np.zeros(nout), qout=np.zeros((n, nout), order="F"),
                vout=np.zeros((n, nout), order="F"), aout=np.zeros((n, nout), order="F"),
                lout=np.zeros((max(nl, 1), nout), order="F"))


def decode(names, values, reals=()):
    """name -> value of a kernel's positional output array: ``names[k]`` names ``values[k]``,
    in the order the kernel's f2py routine documents (each method module keeps that order in a
    module-level tuple next to its call).  Names in ``reals`` are floats, the others counts."""
    if len(values) != len(names):
        raise ValueError(f"a kernel returned {len(values)} values for the {len(names)} names {names}")
    return {name: float(x) if name in reals else int(x) for name, x in zip(names, values)}


def kernel_stats(names, istat, stats, reals=()):
    """``Result.stats`` of one run: "steps" (istat = [status, steps done, samples]), the kernel's
    stats array decoded by :func:`decode`, and "failed_steps" (1 if the run stopped early)."""
    return {"steps": int(istat[1]), **decode(names, stats, reals), "failed_steps": int(istat[0] != 0)}


def raw_result(buf, nl, istat, stats):
    """Time-major views of the output buffers."""
    return dict(t=buf["tout"], q=buf["qout"].T, v=buf["vout"].T, a=buf["aout"].T,
                lam=buf["lout"][:nl].T, istat=np.asarray(istat), stats=stats)


#: The driver's output arrays, in the order of the f2py entry run_batch (fortran/api/api_run.f90; then
#: aopt, hout, counts as run's).
_OUT_BATCH = ("tout", "qout", "vout", "aout", "lout", "auxout", "resout", "eout", "stepmax", "stats", "red")
#: aopt of a fixed-step run (no rtol: the driver's fixed-step loop).
FIXED_STEP = np.zeros(1)
#: The f2py entry run's: run_batch's, then the variable-step block (aopt in, the accepted steps hout and
#: counts = [accepted, rejected, Newton failures] out; aopt = [0]: the fixed-step loop).
_OUT = _OUT_BATCH + ("aopt", "hout", "counts")
#: The residuals the driver keeps per sample for a vector model (fortran/core/metrics.f90:
#: |g|, |G v + g_t|, |G a + gamma_h|, |A v + b|, |A a + gamma_n|); its per-step maxima are these, then
#: max |E - E0|.
NRES = 5


def _option_arrays(options):
    iopt, ropt = options
    iopt = np.array(list(iopt) or [0], dtype=np.int32)
    ropt = np.array(list(ropt) or [0.0], dtype=np.float64)
    return iopt, ropt


def driver_buffers(nq, nv, nl, nsteps, every, nstats=0, naux=0, nres=NRES, nb=None, warn=True, room=False):
    """Fortran-ordered output arrays of the driver for :func:`n_samples` samples (with a trailing
    trajectory index when nb is given), refused above :data:`pyint._validate.MAX_OUTPUT_BYTES`.
    room: the sample arrays are room for at most nsteps samples, of which the caller reads only
    those the kernel wrote (the adaptive driver's max_steps): left unset (np.empty; zeroing the
    room for 100 000 samples took ~0.4 ms per call, a fifth of a 1e-4 run on stiff_fast)."""
    nout = n_samples(nsteps, every)
    V.check_output_size(nout, (nb or 1) * (2 + nq + 2 * nv + max(nl, 1) + naux + nres), nsteps, every, warn, room)
    tail = () if nb is None else (nb,)
    z = lambda *shape: np.zeros(shape + tail, order="F")  # noqa: E731
    r = (lambda *shape: np.empty(shape + tail, order="F")) if room else z  # noqa: E731
    buf = dict(tout=r(nout), qout=r(nq, nout), vout=r(nv, nout), aout=r(nv, nout), lout=r(max(nl, 1), nout),
               auxout=r(naux, nout) if naux else z(1, 1), resout=r(nres, nout), eout=r(nout),
               stepmax=z(nres + 1), stats=z(max(nstats, 1)),
               red=np.zeros((max(nl, 1),) + tail, dtype=np.int32, order="F"))   # rows dropped as redundant
    # the variable-step block, unused by the fixed-step loop (aopt: run's; run_batch takes it as an argument)
    buf.update(hout=z(1), counts=np.zeros((3,) + tail, dtype=np.int32, order="F"))
    if nb is None:
        buf.update(aopt=FIXED_STEP)
    return buf


def vector_step_max(stepmax):
    """The per-step maxima of a vector-state run (the driver's stepmax) by name."""
    sm = [float(x) for x in stepmax]
    return {"eps_pos": sm[0], "eps_vel": max(sm[1], sm[3]), "eps_acc": max(sm[2], sm[4]), "energy_change": sm[5]}


def driver_raw(buf, nl, istat, stats, step_max_keys=None):
    """Time-major views of the driver's outputs (one trajectory); the per-step maxima by name:
    ``step_max_keys`` names stepmax in its order (default: a vector state's, :func:`vector_step_max`)."""
    sm = buf["stepmax"]
    raw = dict(t=buf["tout"], q=buf["qout"].T, v=buf["vout"].T, a=buf["aout"].T, lam=buf["lout"][:nl].T,
               istat=np.asarray(istat), stats=stats, residual=buf["resout"].T, energy=buf["eout"],
               redundant=np.flatnonzero(buf["red"][:nl]),
               step_max=vector_step_max(sm) if step_max_keys is None else decode(step_max_keys, sm, step_max_keys))
    return raw


def _batch_inputs(models, q0s, v0s):
    """(list of models, q0s, v0s) with one model and one row per trajectory."""
    single = not isinstance(models, (list, tuple))
    if not single and not models:
        raise ValueError("integrate_batch needs at least one model")
    q0s = np.asarray(q0s, dtype=float)
    v0s = np.asarray(v0s, dtype=float)
    if q0s.ndim not in (1, 2) or v0s.ndim not in (1, 2):
        raise ValueError(f"q0s and v0s must have shape (nb, n) or (n,), got {q0s.shape} and {v0s.shape}")
    if q0s.ndim == 2 and q0s.shape[0] == 0:
        raise ValueError("integrate_batch needs at least one trajectory")
    if not single:
        nb = len(models)
    else:
        nb = q0s.shape[0] if q0s.ndim == 2 else v0s.shape[0] if v0s.ndim == 2 else 1
        models = [models] * nb
    q0s = np.broadcast_to(q0s, (nb, q0s.shape[-1])) if q0s.ndim == 1 else q0s
    v0s = np.broadcast_to(v0s, (nb, v0s.shape[-1])) if v0s.ndim == 1 else v0s
    if q0s.shape[0] != nb or v0s.shape[0] != nb:
        raise ValueError(f"q0s and v0s must have one row per trajectory ({nb}), got {q0s.shape} and {v0s.shape}")
    return list(models), q0s, v0s
