"""Benchmark: the seed-001 manipulator, T = 1 s at h = 1e-5 (100 000 steps), every Lie-group method.

Prints CPU time (process time of the Fortran call; best of `--repeat`), steps
per second and Newton iterations per step.  A report, not a test.
    python bench/lie_group_manipulator.py [--h 1e-5] [--repeat 3]
"""
import argparse
import time

import pyint.methods  # noqa: F401
from pyint.integrator import METHODS
from pyint.models.rigid_bodies import RigidBodySystem


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--h", type=float, default=1e-5)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    s = RigidBodySystem.two_link_manipulator()
    x, rot, v = s.manipulator_initial_state()
    nsteps = round(1.0 / args.h)
    print(f"two-link manipulator, T = 1 s, h = {args.h:g} ({nsteps} steps), best of {args.repeat}")
    print(f"{'method':18s} {'cpu [s]':>8s} {'wall [s]':>9s} {'steps/s':>10s} {'newton/step':>12s}")
    for name in sorted(n for n, c in METHODS.items() if "R^n" not in c.spaces):
        best = None
        for _ in range(args.repeat):
            w = time.perf_counter()
            r = METHODS[name]().integrate(s, (x, rot), v, 1.0, args.h, every=max(1, nsteps // 1000))
            w = time.perf_counter() - w
            best = (r.cpu_time, w, r) if best is None or r.cpu_time < best[0] else best
        cpu, wall, r = best
        print(f"{name:18s} {cpu:8.3f} {wall:9.3f} {nsteps / cpu:10.0f} "
              f"{r.stats['newton_iterations'] / nsteps:12.2f}")


if __name__ == "__main__":
    main()
