"""Timing worker of bench/run.py's `versus` section: pyint's generalized-alpha on the
planar N-link chain, run in a Python of its own, so that two builds of pyint (this
tree's and, e.g., an older commit's venv) are timed side by side in one benchmark
run.  Reads one JSON request per line on stdin ({"n_links", "steps", "reps"}),
answers one JSON line: the best wall time of `reps` whole `integrate` calls, the
Fortran call's CPU time (Result.cpu_time) and the Newton iterations of that call.
Works with pyint's layouts before and after issue 16 (pyint.genalpha /
pyint.methods.genalpha)."""
from __future__ import annotations

import json
import sys
import time

H = 1e-3
RHO = 0.9


def main():
    try:
        from pyint.methods.genalpha import GeneralizedAlpha
    except ImportError:   # pyint before issue 16's layout (ca04593)
        from pyint.genalpha import GeneralizedAlpha
    import pyint
    from pyint.models import PendulumChain
    ga = GeneralizedAlpha(rho_inf=RHO)
    models = {}
    print(json.dumps({"pyint": pyint.__file__}), flush=True)
    for line in sys.stdin:
        req = json.loads(line)
        nl, ns = int(req["n_links"]), int(req["steps"])
        if nl not in models:
            m = PendulumChain(nl)
            models[nl] = (m, *m.initial_state())
        m, q0, v0 = models[nl]
        best, res = float("inf"), None
        for _ in range(int(req.get("reps", 1))):
            t0 = time.perf_counter()
            r = ga.integrate(m, q0, v0, ns * H, H, every=ns)
            wall = time.perf_counter() - t0
            if wall < best:
                best, res = wall, r
        print(json.dumps({"wall": best, "cpu": res.cpu_time, "newton": res.stats["newton_iterations"],
                          "solver": res.stats["linear_solver"]}), flush=True)


if __name__ == "__main__":
    main()
