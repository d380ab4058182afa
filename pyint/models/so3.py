"""SO(3) in NumPy: the twin of fortran/core/so3.f90, plus log and unit quaternions.

hat(w) u = w x u; expm(psi) = I + a hat(psi) + b hat(psi)^2 (Rodrigues);
tangent(psi) = I - b hat(psi) + c hat(psi)^2 satisfies
expm(psi + d) = expm(psi) expm(hat(tangent(psi) d)) + O(|d|^2);
a = sin(phi)/phi, b = (1 - cos(phi))/phi^2, c = (phi - sin(phi))/phi^3, phi = |psi|,
with Taylor series below phi = 0.02 (as in the Fortran kernel).
"""
from __future__ import annotations

import numpy as np

SERIES_BELOW = 0.02


def hat(w):
    w = np.asarray(w, dtype=float)
    return np.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])


def cross(a, b):
    """a x b for 3-vectors (np.cross is ~20x slower on single vectors)."""
    return np.array([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]])


def vee(s):
    s = np.asarray(s, dtype=float)
    return 0.5 * np.array([s[2, 1] - s[1, 2], s[0, 2] - s[2, 0], s[1, 0] - s[0, 1]])


def coeffs(phi2):
    """(a, b, c) of expm and tangent for phi^2 = |psi|^2."""
    if phi2 < SERIES_BELOW ** 2:
        a = 1 - phi2 / 6 * (1 - phi2 / 20 * (1 - phi2 / 42 * (1 - phi2 / 72)))
        b = 0.5 * (1 - phi2 / 12 * (1 - phi2 / 30 * (1 - phi2 / 56 * (1 - phi2 / 90))))
        c = (1 - phi2 / 20 * (1 - phi2 / 42 * (1 - phi2 / 72 * (1 - phi2 / 110)))) / 6
        return a, b, c
    phi = np.sqrt(phi2)
    a = np.sin(phi) / phi
    s = np.sin(phi / 2) / (phi / 2)
    return a, 0.5 * s * s, (1 - a) / phi2


def expm(psi):
    psi = np.asarray(psi, dtype=float)
    a, b, _ = coeffs(float(psi @ psi))
    s = hat(psi)
    return np.eye(3) + a * s + b * s @ s


def tangent(psi):
    psi = np.asarray(psi, dtype=float)
    _, b, c = coeffs(float(psi @ psi))
    s = hat(psi)
    return np.eye(3) - b * s + c * s @ s


def logm(r):
    """psi with expm(psi) = r, |psi| <= pi (robust near 0 and near pi)."""
    r = np.asarray(r, dtype=float)
    return quat_to_rotvec(rot_to_quat(r))


def rot_to_quat(r):
    """Unit quaternion (w, x, y, z), w >= 0, of a rotation matrix (Shepperd's method)."""
    r = np.asarray(r, dtype=float)
    tr = np.trace(r)
    cand = np.array([tr, r[0, 0], r[1, 1], r[2, 2]])
    k = int(np.argmax(cand))
    if k == 0:
        w = 0.5 * np.sqrt(1 + tr)
        q = np.array([w, (r[2, 1] - r[1, 2]) / (4 * w), (r[0, 2] - r[2, 0]) / (4 * w),
                      (r[1, 0] - r[0, 1]) / (4 * w)])
    else:
        i = k - 1
        j, l = (i + 1) % 3, (i + 2) % 3
        s = 0.5 * np.sqrt(1 + r[i, i] - r[j, j] - r[l, l])
        q = np.empty(4)
        q[1 + i] = s
        q[0] = (r[l, j] - r[j, l]) / (4 * s)
        q[1 + j] = (r[j, i] + r[i, j]) / (4 * s)
        q[1 + l] = (r[l, i] + r[i, l]) / (4 * s)
    if q[0] < 0:
        q = -q
    return q / np.linalg.norm(q)


def quat_to_rot(q):
    """Rotation matrix of the quaternion q (normalised first)."""
    w, x, y, z = np.asarray(q, dtype=float) / np.linalg.norm(q)
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ])


def quat_to_rotvec(q):
    q = np.asarray(q, dtype=float)
    if q[0] < 0:
        q = -q
    s = np.linalg.norm(q[1:])
    if s < 1e-8:
        # angle = 2 atan2(s, w) ~ 2 s / w: psi = 2 v / w (1 - s^2/(3 w^2) ...)
        return 2 * q[1:] / q[0] * (1 - (s / q[0]) ** 2 / 3)
    return 2 * np.arctan2(s, q[0]) * q[1:] / s


def quat_rate(q, omega):
    """qdot = q (x) (0, omega) / 2 for the body angular velocity omega."""
    w, x, y, z = q
    o1, o2, o3 = omega
    return 0.5 * np.array([-x * o1 - y * o2 - z * o3,
                           w * o1 + y * o3 - z * o2,
                           w * o2 + z * o1 - x * o3,
                           w * o3 + x * o2 - y * o1])


def rotation_error(r_ref, r):
    """|log(r_ref^T r)|: the angle between two rotations."""
    return float(np.linalg.norm(logm(np.asarray(r_ref).T @ np.asarray(r))))
