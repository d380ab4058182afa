"""The planar N-link pendulum chain in Exudyn (point masses + distance constraints),
integrated by Exudyn's generalized-alpha: the peer of pyint's chain benchmark.
Exudyn is installed only in the benchmark's own directory (bench/run.py), never
as a pyint dependency."""
from __future__ import annotations

import time

import numpy as np


def exudyn_chain(n_links, h, t_end, rho_inf=0.9, sparse=False, angles=None, length=1.0, mass=1.0, grav=9.81,
                 clock=time.perf_counter):
    """Run the chain (length, mass: scalars or one per link; angles from the
    downward vertical, at rest); return (steps per second of SolveDynamic by clock, wall time by
    default, final positions (N, 2)).  The system assembly is not timed."""
    import exudyn as exu
    from exudyn.itemInterface import (DistanceConstraint, Force, MarkerBodyPosition, MarkerNodePosition,
                                      MassPoint2D, NodePoint2D, ObjectGround)

    sc = exu.SystemContainer()
    mbs = sc.AddSystem()
    ground = mbs.AddObject(ObjectGround(referencePosition=[0, 0, 0]))
    prev = mbs.AddMarker(MarkerBodyPosition(bodyNumber=ground, localPosition=[0, 0, 0]))
    th = np.full(n_links, np.pi / 2) if angles is None else np.asarray(angles, dtype=float)
    length = np.broadcast_to(np.asarray(length, dtype=float), (n_links,))
    mass = np.broadcast_to(np.asarray(mass, dtype=float), (n_links,))
    pos = np.cumsum(np.stack([length * np.sin(th), -length * np.cos(th)], axis=1), axis=0)
    nodes = []
    for i in range(n_links):
        nd = mbs.AddNode(NodePoint2D(referenceCoordinates=[pos[i, 0], pos[i, 1]], initialCoordinates=[0, 0]))
        mbs.AddObject(MassPoint2D(physicsMass=float(mass[i]), nodeNumber=nd))
        mk = mbs.AddMarker(MarkerNodePosition(nodeNumber=nd))
        mbs.AddObject(DistanceConstraint(markerNumbers=[prev, mk], distance=float(length[i])))
        mbs.AddLoad(Force(markerNumber=mk, loadVector=[0, -float(mass[i]) * grav, 0]))
        prev = mk
        nodes.append(nd)
    mbs.Assemble()
    s = exu.SimulationSettings()
    s.timeIntegration.numberOfSteps = int(round(t_end / h))
    s.timeIntegration.endTime = t_end
    s.timeIntegration.verboseMode = 0
    s.timeIntegration.generalizedAlpha.spectralRadius = rho_inf
    s.solutionSettings.writeSolutionToFile = False
    s.solutionSettings.sensorsWritePeriod = t_end
    s.displayStatistics = False
    s.displayComputationTime = False
    s.linearSolverType = exu.LinearSolverType.EigenSparse if sparse else exu.LinearSolverType.EXUdense
    t0 = clock()
    exu.SolveDynamic(mbs, s)
    dt = clock() - t0
    final = np.array([mbs.GetNodeOutput(nd, exu.OutputVariableType.Position)[:2] for nd in nodes])
    return s.timeIntegration.numberOfSteps / dt, final
