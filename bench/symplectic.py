"""Cost of the seed-002 family (prints figures; asserts nothing).

    python bench/symplectic.py

CPU time per step and Newton iterations per step of each method on the
triple pendulum (n = 6, m = 3) at the paper's h = 0.12, on the anharmonic
chain (n = 4) at h = 0.05, and on a 20-link pendulum chain (n = 40, m = 20)
at h = 1e-3.  The built-in models run the whole loop in Fortran.
"""
import time

import numpy as np

import pyint.methods  # noqa: F401
from pyint.methods.baumgarte import BaumgarteRK4
from pyint.models import PendulumChain
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


if __name__ == "__main__":
    tp = PROBLEMS["triple_pendulum"]
    bench("triple pendulum", tp.model, *tp.initial_state, 0.12, 5000)
    ac = PROBLEMS["anharmonic_chain2"]
    bench("anharmonic chain", ac.model, *ac.initial_state, 0.05, 5000)
    chain = PendulumChain(20, grav=9.81)
    bench("20-link chain", chain, *chain.initial_state(), 1e-3, 200)
