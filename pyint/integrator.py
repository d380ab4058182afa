"""Base class of every integrator: a method's description and its two entry points.

Adding a method (the checklist):

1. ``fortran/<method>.f90``: a stepper, an extension of ``stepper_t`` (fortran/core/driver.f90)
   with ``init`` (read the options by the named slots of the generated ``pyint_seam``, complete
   the start state, allocate its stats) and ``step`` (one step); the driver owns the loop,
   sampling, the per-step maxima, status, NaN checks, interrupts and OpenMP batches.
2. ``seam/seam.toml``: one ``[[method]]`` table (id, stepper file, module and type, options,
   stats); the build generates the Fortran constants, the dispatch and ``pyint._seam``.
3. ``pyint/methods/<family>.py``: a subclass of :class:`Integrator` with the class attributes
   below, ``KERNEL`` (``method_id(name)``), ``STATS`` (the description's stat names) and
   ``kernel_options`` (its options packed by name, ``pyint.options.Options``), validated in
   ``__init__``.  Optional hooks: ``kernel_aux`` (the stepper's auxiliary vector per sample, by
   name, into ``Result.extra``), ``kernel_start`` (real start data after the real options),
   ``kernel_model`` (the model block and sizes of a configuration that is not a vector model).
4. Register it (:func:`register`): it joins ``METHODS``, ``integrate_batch`` and the studies.
   A method pyint ships is decorated with ``@register`` and imported in
   ``pyint/methods/__init__.py``: the shared tests (order, the IDA reference, its invariants,
   test_driver.py) then run it, and its golden cases are recorded (tests/golden_outputs.py).

The worked example is explicit Euler on the index-1 form: fortran/explicit_euler.f90, its table in
seam/seam.toml and tests/test_add_method.py, which registers its class.  The rest lives by
responsibility: the registry (pyint/_registry.py), the one driver call site (pyint/_driver.py;
``integrate`` is a batch of one), the result builder (pyint/_result_builder.py) and the dense
output at t_eval (pyint/_dense.py).
"""
from __future__ import annotations

import importlib
import inspect
import os
import warnings


from . import _driver
from . import _validate as V
from ._docfrag import with_fragments
from ._progress import run_progress
from ._registry import METHODS, register
from ._result_builder import driver_raw, kernel_stats, make_result
from .models._fortran_model import model_args

__all__ = ["METHODS", "Integrator", "register"]


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
        Claimed convergence order in :math:`q` and :math:`v` (``lambda_order``: in :math:`\lambda`, if claimed).
    order_source : str
        Where the claimed orders come from: the seed paper and its section or
        equation, or the classical result (measured by pyint.convergence).
    supports : frozenset
        Subset of {"holonomic", "nonholonomic"}.
    spaces : frozenset
        The configuration spaces of the models it integrates (``model.configuration_space``:
        ``"R^n"`` for :math:`\mathbb{R}^n`, or ``"(R^3 x SO(3))^nb"`` for rigid bodies on the Lie group
        :math:`(\mathbb{R}^3 \times SO(3))^{n_b}`).
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
        V.check_option_names(cls, kwargs)
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
    #: The method id of the method's Fortran stepper (seam/seam.toml: ``method_id(name)``).
    KERNEL: int = 0
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
        return model_args(model, backend, checked=False), model.n, model.n, model.n_hol + model.n_nonhol

    def decode_stats(self, istat, stats):
        """``Result.stats`` of one run from the kernel's istat and stats arrays."""
        return kernel_stats(self.STATS, istat, stats, self.STATS_REALS)

    def _driver_raw(self, model, buf, nl, istat, aux_parts=None):
        """Time-major views of the driver's outputs of one trajectory (:func:`driver_raw`), the
        stepper's auxiliary vector split into ``extra`` (``aux_parts``, default :meth:`kernel_aux`)."""
        return driver_raw(buf, nl, istat, self.decode_stats(istat, buf["stats"]),
                          aux_parts=self.kernel_aux(model) if aux_parts is None else aux_parts)

    @with_fragments
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
        %(time_grid)s
        threads : int, optional
            OpenMP threads across the trajectories (default: every CPU).
        %(start_failure_steps)s

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
        With variable steps every trajectory has its own steps (up to ``max_steps`` each).  A
        model without a Fortran twin cannot run in threads (its items are Python calls): such
        trajectories run one after another through :meth:`integrate`.

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
        threads = V.as_int(os.cpu_count() or 1 if threads is None else threads, "threads", minimum=1)
        steps = dict(rtol=rtol, atol=atol, h0=h0, h_min=h_min, h_max=h_max, t_eval=t_eval, max_steps=max_steps,
                     per_unit_step=per_unit_step)
        if not self._batch_runs_in_threads(models[0]):   # Python items: one after another
            return _driver.run_each(self, models, q0s, v0s, t_end, h, t0, every, project, raise_on_failure, steps)
        for m in models:
            self.check_model(m)
        _driver.check_step_choice(self.name, h, rtol, atol, h0, h_min, h_max, t_eval, per_unit_step)
        return _driver.run(self, models, q0s, v0s, t_end, h, t0, every, "fortran", project, raise_on_failure,
                           steps, threads)

    def _batch_inputs(self, models, q0s, v0s):
        """(list of models, q0s, v0s) with one model and one initial state per trajectory."""
        return _driver.batch_inputs(models, q0s, v0s)

    def _batch_runs_in_threads(self, model):
        """Can a batch of ``model`` run in one threaded Fortran call (a stepper and a model
        whose items are Fortran: a built-in twin)?"""
        return model.fortran_name is not None

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
        """Raise why the method does not integrate ``model`` (:func:`pyint._validate.check_method_model`)."""
        V.check_method_model(self, model, METHODS)

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

    #: The driver's dense mode at t_eval when the method fixes it (pyint/_dense.py: the Lie-group
    #: methods interpolate on their group, DENSE_LIE); None: from ACCELERATION_IS_QDDOT, OUTPUT_QUINTIC.
    DENSE_MODE = None

    @with_fragments
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
        %(time_grid)s
        backend : {"auto", "fortran", "callback"}, default "auto"
            "auto": the model's Fortran twin when it has one (built-in and symbolic models:
            the whole loop runs in Fortran), else Python callbacks; "callback": the model
            evaluated in Python (a prototype, or to check a twin).
        %(start_failure_steps)s
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
        %(pendulum_start: GeneralizedAlpha)s
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
        _driver.check_step_choice(self.name, h, rtol, atol, h0, h_min, h_max, t_eval, per_unit_step)
        steps = dict(rtol=rtol, atol=atol, h0=h0, h_min=h_min, h_max=h_max, t_eval=t_eval, max_steps=max_steps,
                     per_unit_step=per_unit_step)
        with run_progress(f"{self.name} {getattr(model, 'name', '')}".strip(), t0, t_end, enabled=progress):
            return _driver.run(self, [model], [q0], [v0], t_end, h, t0, every, backend, project, raise_on_failure,
                               steps)[0]

    def _make_result(self, model, raw, t0, h, cpu, backend="auto", raise_on_failure=True, run=None):
        """The Result of one trajectory (:func:`pyint._result_builder.make_result`)."""
        return make_result(self, model, raw, t0, h, cpu, backend, raise_on_failure, run)


#: The base class takes no options (its subclasses' signatures: Integrator.__init_subclass__).
Integrator.__signature__ = inspect.Signature()

#: Names that moved out of this module -> their module: an alias that warns, for one release.
_MOVED = {**dict.fromkeys(("decode", "kernel_stats", "driver_raw", "vector_step_max", "report_failure", "raise_recorded",
                           "model_residuals", "_fail_time"), "pyint._result_builder"),
          **dict.fromkeys(("n_samples", "driver_buffers", "FIXED_STEP", "NRES", "_OUT", "_OUT_BATCH", "_option_arrays"),
                          "pyint._driver"),
          **dict.fromkeys(("impose_constraints", "replace_samples"), "pyint._dense")}


def __getattr__(name):
    if name not in _MOVED:
        raise AttributeError(f"module 'pyint.integrator' has no attribute {name!r}")
    warnings.warn(f"pyint.integrator.{name} moved to {_MOVED[name]}.{name}; the alias goes in the next release",
                  DeprecationWarning, stacklevel=2)
    return getattr(importlib.import_module(_MOVED[name]), name)
