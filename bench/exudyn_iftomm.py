"""The IFToMM benchmarks A02 (N four-bar) and A04 (Bricard) in Exudyn, integrated by Exudyn's
generalized-alpha: the peers of pyint's study iftomm_benchmarks in bench/run.py versus_iftomm.

Built the way Exudyn's own models build them (J. Gerstmayr, EXUDYN main/pythonDev/TestModels/
fourBarMechanismIftomm.py and bricardMechanism.py): A02 from planar rigid bodies (x, y, angle per
bar) and 2D revolute joints, non-redundant; A04 from spatial rigid bodies (Exudyn's default node,
Euler parameters) with five revolute joints and one generic joint for the sixth, the redundant row
passed by the dense solver with ignoreSingularJacobian (how bricardMechanism.py runs it).  Same
data as pyint.models.iftomm: 1 m, 1 kg bars (A04: square section 0.1 m), gravity 9.81 along -y,
A02 cranks vertical with B0 moving at 1 m/s, A04 at rest.  Exudyn's settings are its defaults
(full Newton, relative tolerance 1e-8) but for the spectral radius, set to pyint's default.
Exudyn is installed only in the benchmark's own directory (bench/run.py), never as a pyint
dependency.
"""
from __future__ import annotations

import time

import numpy as np


def _settings(exu, h, t_end, dt_out, rho_inf, solver):
    s = exu.SimulationSettings()
    s.timeIntegration.numberOfSteps = int(round(t_end / h))
    s.timeIntegration.endTime = t_end
    s.timeIntegration.verboseMode = 0
    s.timeIntegration.generalizedAlpha.spectralRadius = rho_inf
    s.solution.file.write = False
    s.solution.sensors.writePeriod = dt_out
    s.show.statistics = False
    s.show.computationTime = False
    s.linearSolver.solverType = solver
    return s


def _solve(exu, mbs, s, sensors):
    """CPU and wall time of SolveDynamic (the model assembly is not timed) and the sensors' samples
    (time, then x, y, z, as Exudyn stores them)."""
    c0, w0 = time.process_time(), time.perf_counter()
    mbs.SolveDynamic(s)
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    return cpu, wall, [np.asarray(mbs.GetSensorStoredData(k)) for k in sensors]


def exudyn_a02(n, h, t_end, dt_out=0.05, rho_inf=0.9, mass=1.0, length=1.0, grav=9.81, v0=1.0):
    """A02 with n windows; return (cpu s, wall s, t, B0 position (k, 2), B0 velocity (k, 2))."""
    import exudyn as exu
    from exudyn.itemInterface import (LoadMassProportional, MarkerBodyMass, MarkerBodyPosition, NodeRigidBody2D,
                                      ObjectGround, ObjectJointRevolute2D, ObjectRigidBody2D, SensorBody)
    sc = exu.SystemContainer()
    mbs = sc.AddSystem()
    L, m = length, mass
    ground = mbs.AddObject(ObjectGround())

    def bar(ref, vel):
        nd = mbs.AddNode(NodeRigidBody2D(referenceCoordinates=ref, initialVelocities=vel))
        ob = mbs.AddObject(ObjectRigidBody2D(nodeNumber=nd, mass=m, inertia=m * L**2 / 12))
        mbs.AddLoad(LoadMassProportional(markerNumber=mbs.AddMarker(MarkerBodyMass(bodyNumber=ob)),
                                         loadVector=[0, -grav, 0]))
        return ob

    def pin(b0, x0, b1, x1):
        mbs.AddObject(ObjectJointRevolute2D(markerNumbers=[
            mbs.AddMarker(MarkerBodyPosition(bodyNumber=b0, localPosition=[x0, 0, 0])),
            mbs.AddMarker(MarkerBodyPosition(bodyNumber=b1, localPosition=[x1, 0, 0]))]))

    cranks = []
    for k in range(n + 1):          # crank k pinned at (k, 0), angle pi/2 (local x upward); coupler k on the tips
        crank = bar([k * L, L / 2, np.pi / 2], [v0 / 2, 0, -v0 / L])
        pin(ground, k * L, crank, -L / 2)
        if k:
            coupler = bar([(k - 0.5) * L, L, 0.0], [v0, 0, 0])
            pin(cranks[-1], L / 2, coupler, -L / 2)
            pin(crank, L / 2, coupler, L / 2)
        cranks.append(crank)
    sensors = [mbs.AddSensor(SensorBody(bodyNumber=cranks[0], localPosition=[L / 2, 0, 0], storeInternal=True,
                                        outputVariableType=o))
               for o in (exu.OutputVariableType.Position, exu.OutputVariableType.Velocity)]
    mbs.Assemble()
    s = _settings(exu, h, t_end, dt_out, rho_inf, exu.LinearSolverType.EXUdense)
    cpu, wall, (p, v) = _solve(exu, mbs, s, sensors)
    return cpu, wall, p[:, 0], p[:, 1:3], v[:, 1:3]


def exudyn_bricard(h, t_end, dt_out=0.05, rho_inf=0.9, length=1.0, side=0.1, mass=1.0, grav=9.81):
    """A04 at rest; return (cpu s, wall s, t, P3 position (k, 3), P3 velocity (k, 3))."""
    import exudyn as exu
    from exudyn.itemInterface import ObjectGround, SensorBody
    from exudyn.rigidBodyUtilities import InertiaCuboid, RotationMatrixY, RotationMatrixZ
    sc = exu.SystemContainer()
    mbs = sc.AddSystem()
    L, r = length, side
    inertia = InertiaCuboid(density=mass / (L * r * r), sideLengths=[L, r, r]).Translated([L / 2, 0, 0])
    points = [[0, 0, 0], [L, 0, 0], [L, -L, 0], [L, -L, L], [0, -L, L], [0, 0, L]]
    rots = [np.eye(3), RotationMatrixZ(-np.pi / 2), RotationMatrixY(-np.pi / 2), RotationMatrixZ(np.pi),
            RotationMatrixZ(np.pi / 2)]
    axes = [[0, 1, 0], [0, 0, 1], [1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 0, 0]]
    ground = mbs.AddObject(ObjectGround())
    bodies = [ground]
    for i, p in enumerate(points):
        if i < 5:                   # bar i from points[i] along its local x; reference point at its start
            b = mbs.CreateRigidBody(inertia=inertia, referencePosition=p, referenceRotationMatrix=rots[i],
                                    gravity=[0, -grav, 0])
            mbs.CreateRevoluteJoint(itemNumbers=[bodies[-1], b], position=p, axis=axes[i])
            bodies.append(b)
        else:                       # closing joint: a generic joint with the x rotation free, as Exudyn's model
            mbs.CreateGenericJoint(itemNumbers=[bodies[-1], ground], position=p, constrainedAxes=[1, 1, 1, 0, 1, 1])
    sensors = [mbs.AddSensor(SensorBody(bodyNumber=bodies[4], localPosition=[0, 0, 0], storeInternal=True,
                                        outputVariableType=o))
               for o in (exu.OutputVariableType.Position, exu.OutputVariableType.Velocity)]
    mbs.Assemble()
    s = _settings(exu, h, t_end, dt_out, rho_inf, exu.LinearSolverType.EigenDense)
    s.linearSolver.ignoreSingularJacobian = True    # the redundant row (Exudyn's bricardMechanism.py)
    cpu, wall, (p, v) = _solve(exu, mbs, s, sensors)
    return cpu, wall, p[:, 0], p[:, 1:4], v[:, 1:4]
