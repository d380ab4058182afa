"""Cost of the seed-002 family (prints figures; asserts nothing).

    python bench/symplectic.py            # both tables
    python bench/symplectic.py ratios     # only the ratio table (issue 27)
    python bench/symplectic.py growth     # only the growth table (issue 27)

CPU time per step and Newton iterations per step of each method on the
triple pendulum (n = 6, m = 3) at the paper's h = 0.12, on the anharmonic
chain (n = 4) at h = 0.05, and on a 20-link pendulum chain (n = 40, m = 20)
at h = 1e-3.  The built-in models run the whole loop in Fortran.

The ratio table: CPU per step of RATTLE, the composition with s Gauss stages
and Lobatto IIIA-IIIB with s stages relative to generalized-alpha on the same
model and h, side by side in one run: the built-in pendulum chains N = 2, 8,
32, 128, 1024 and the IFToMM N-four-bar in natural coordinates (n = 30, 66).
The targets (issue 27): RATTLE <= 1.5, the s-stage methods <= 1.5 s.

The growth table: CPU per step of generalized-alpha, RATTLE, the composition with
Gauss stages (s = 1, 2) and Lobatto IIIA-IIIB s = 3 on the pendulum chains
N = 32, 128, 512, 1024 (h = 1e-3), and the least-squares exponent of N over them
(target, issue 27: within N^1.1, as generalized-alpha).
"""
import sys
import time

import numpy as np

import pyint.methods  # noqa: F401
from pyint import GeneralizedAlpha
from pyint.methods.baumgarte import BaumgarteRK4
from pyint.models import PendulumChain
from pyint.models.iftomm import n_four_bar, n_four_bar_state
from pyint.problems import PROBLEMS
from pyint.methods.symplectic import LobattoIIIAB, Rattle, SymplecticComposition


def methods():
    return [("composition s=1", SymplecticComposition(1)), ("composition s=2", SymplecticComposition(2)),
            ("rattle", Rattle()), ("lobatto s=3", LobattoIIIAB(3)), ("baumgarte_rk4", BaumgarteRK4())]


def bench(label, model, q0, v0, h, nsteps):
    for name, meth in methods():
        best = np.inf
        for _ in range(3):
            t = time.process_time()
            r = meth.integrate(model, q0, v0, nsteps * h, h, every=nsteps)
            best = min(best, time.process_time() - t)
        its = r.stats.get("newton_iterations", 0) / nsteps
        print(f"{label:22s} {name:16s} {1e6 * best / nsteps:9.1f} us/step   Newton/step {its:4.2f}")


def per_step(meth, model, q0, v0, h, budget=0.3, repeats=3):
    """CPU seconds per step: (T(2 n) - T(n)) / n, each T the best of `repeats` runs, n steps taking
    about budget / 4 (the start, pattern analysis and factorization of the first step, and
    Python's first-call costs cancel), after a warm-up call."""
    def run(nsteps):
        t = time.process_time()
        meth.integrate(model, q0, v0, nsteps * h, h, every=nsteps)
        return time.process_time() - t

    run(1)
    nsteps = 5
    while run(nsteps) < budget / 4 and nsteps < 200000:
        nsteps *= 4
    t1 = min(run(nsteps) for _ in range(repeats))
    t2 = min(run(2 * nsteps) for _ in range(repeats))
    return (t2 - t1) / nsteps


RATIO_METHODS = [("rattle", Rattle(), 1.5), ("gauss s=1", SymplecticComposition(1), 1.5),
                 ("gauss s=2", SymplecticComposition(2), 3.0), ("lobatto s=3", LobattoIIIAB(3), 4.5)]


def ratio_cases(max_links=1024):
    for n in (n for n in (2, 8, 32, 128, 1024) if n <= max_links):
        chain = PendulumChain(n, grav=9.81)
        yield f"chain N={n}", chain, chain.initial_state(), 1e-3
    for k in (2, 5):
        fb = n_four_bar(k)
        yield f"four-bar n={fb.n}", fb, n_four_bar_state(fb, 0.3, 1.0), 1e-3


def ratios(max_links=1024):
    ga = GeneralizedAlpha(rho_inf=0.9)
    print(f"{'model':18s} {'genalpha us':>11s} " + " ".join(f"{name:>12s}" for name, _, _ in RATIO_METHODS)
          + "   (CPU per step / genalpha's; target rattle 1.5, s stages 1.5 s)")
    for label, model, (q0, v0), h in ratio_cases(max_links):
        t_ga = per_step(ga, model, q0, v0, h)
        row = [per_step(meth, model, q0, v0, h) / t_ga if dense_ok(meth, model) else None
               for _, meth, _ in RATIO_METHODS]
        print(f"{label:18s} {1e6 * t_ga:11.2f} " + " ".join(f"{r:12.2f}" if r is not None else f"{'-':>12s}"
                                                          for r in row), flush=True)


def dense_ok(meth, model):
    """False for a method whose step is a dense stage system (2 s n + m unknowns) above 2000
    unknowns (minutes per case).  With a constant M every method here takes a reduced step
    (RATTLE's, and the reduced stage systems of fortran/symplectic.f90, issue 27)."""
    return isinstance(meth, Rattle) or model.constant_mass or 2 * meth.stages * model.n <= 2000


GROWTH_NS = (32, 128, 512, 1024)


def growth():
    meths = [("genalpha", GeneralizedAlpha(rho_inf=0.9))] + [(name, meth) for name, meth, _ in RATIO_METHODS]
    print(f"{'chain':10s} " + " ".join(f"{name:>12s}" for name, _ in meths) + "   (CPU us per step)")
    cost = np.zeros((len(GROWTH_NS), len(meths)))
    for i, n in enumerate(GROWTH_NS):
        chain = PendulumChain(n, grav=9.81)
        q0, v0 = chain.initial_state()
        cost[i] = [per_step(meth, chain, q0, v0, 1e-3) for _, meth in meths]
        print(f"N={n:<8d} " + " ".join(f"{1e6 * c:12.1f}" for c in cost[i]), flush=True)
    slope = [np.polyfit(np.log(GROWTH_NS), np.log(cost[:, j]), 1)[0] for j in range(len(meths))]
    print(f"{'exponent':10s} " + " ".join(f"{e:12.2f}" for e in slope) + "   (fit over N = 32 ... 1024)")


if __name__ == "__main__":
    if "growth" in sys.argv[1:]:
        growth()
        sys.exit()
    if "ratios" not in sys.argv[1:]:
        tp = PROBLEMS["triple_pendulum"]
        bench("triple pendulum", tp.model, *tp.initial_state, 0.12, 5000)
        ac = PROBLEMS["anharmonic_chain2"]
        bench("anharmonic chain", ac.model, *ac.initial_state, 0.05, 5000)
        chain = PendulumChain(20, grav=9.81)
        bench("20-link chain", chain, *chain.initial_state(), 1e-3, 200)
    # "max_links=N": leave out the longer chains
    ratios(int(next((a.split("=")[1] for a in sys.argv[1:] if a.startswith("max_links=")), 1024)))
