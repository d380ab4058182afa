"""The IFToMM benchmark mechanisms (pyint.models.iftomm) and the study iftomm_benchmarks.

The models must be the benchmarks' mechanisms: A02's reduced state lies on the constraint
manifold and carries the reduced equation's energy; Bricard's mechanism has 60 coordinates, 60
constraints of rank 59 (one redundant) and one degree of freedom.  The study's references must be
the benchmarks' solutions: checked against the integrators that pass with the widest margin.
Tolerances: round-off ones are >= 20x the measured values (written beside them); the error
bounds are >= 10x the measured values written beside them.
"""
import numpy as np
import pytest

from pyint.models.iftomm import (bricard, bricard_point, n_four_bar, n_four_bar_point, n_four_bar_reduced,
                                 n_four_bar_state)
from pyint.studies import iftomm_benchmarks as S


@pytest.mark.parametrize("n", [1, 2, 4])
def test_n_four_bar_reduced_state_is_on_the_manifold_with_the_reduced_energy(n):
    model = n_four_bar(n)
    assert (model.n, model.n_hol) == (6 * (2 * n + 1), 6 * (2 * n + 1) - 1)
    jj, kk = n_four_bar_reduced(n)
    for theta, omega in [(0.0, 1.0), (0.7, -2.3), (np.pi / 2 - 1e-3, 4.0), (2.5, 0.3)]:
        q, v = n_four_bar_state(model, theta, omega)
        assert np.max(np.abs(model.hol(0.0, q))) < 1e-14                       # measured <= 4.4e-16
        assert np.max(np.abs(model.hol_jac(0.0, q) @ v)) < 1e-14               # measured <= 4.4e-17
        energy = 0.5 * jj * omega**2 + kk * 9.81 * np.cos(theta)
        assert model.energy(0.0, q, v) == pytest.approx(energy, rel=1e-13, abs=1e-12)
        pos, vel = n_four_bar_point(model, q, v)
        np.testing.assert_allclose(pos, [np.sin(theta), np.cos(theta)], atol=1e-15)
        np.testing.assert_allclose(vel, omega * np.array([np.cos(theta), -np.sin(theta)]), atol=1e-14)


def test_n_four_bar_mobility_jumps_at_the_horizontal_cranks():
    """n - rank(G): 1 away from the horizontal cranks, N + 1 at them (N = 3)."""
    model = n_four_bar(3)
    q, _ = n_four_bar_state(model, 0.4, 0.0)
    assert model.n - np.linalg.matrix_rank(model.hol_jac(0.0, q)) == 1
    q, _ = n_four_bar_state(model, np.pi / 2, 0.0)
    assert model.n - np.linalg.matrix_rank(model.hol_jac(0.0, q)) == 3 + 1


def test_bricard_has_one_redundant_constraint_and_one_degree_of_freedom():
    model = bricard()
    q0, v0 = model.initial_state()
    g = model.hol_jac(0.0, q0)
    assert (model.n, model.n_hol, np.linalg.matrix_rank(g)) == (60, 60, 59)
    assert np.max(np.abs(model.hol(0.0, q0))) == 0.0
    dropped = S.redundant_rows(model, q0)
    assert len(dropped) == 1 and dropped[0] >= 30                 # a joint row, not a direction row
    twin = bricard(drop_rows=[dropped[0] - 30])
    assert twin.n_hol == 59 and np.linalg.matrix_rank(twin.hol_jac(0.0, q0)) == 59
    np.testing.assert_allclose(bricard_point(model, q0, v0)[0], [1.0, -1.0, 1.0], atol=1e-15)


def test_benchmark_error_is_relative_to_the_amplitude_with_the_threshold():
    ref = np.array([[2.0, 0.0], [-1.0, 1e-6]])
    assert S.benchmark_error(ref + [[0.02, 0.0], [0.0, 0.0]], ref) == pytest.approx(0.01)
    assert S.benchmark_error(ref + [[0.0, 1e-6], [0.0, 0.0]], ref) == pytest.approx(1e-3)   # threshold 1e-3


def test_a02_reference_against_generalized_alpha_and_the_block_method():
    """A02 (N = 2) over 1.5 s, two singular passages: generalized-alpha (order 2) and the order-5
    block method at h = 1e-3 agree with the reduced reference to 3.4e-5 and 2.6e-12 (benchmark error)."""
    p = {**S.QUICK, "benchmark": "A02_N2", "stepping": "h=1e-3"}
    ga = S.run_case({**p, "method": "genalpha"})
    bl = S.run_case({**p, "method": "block_legendre"})
    assert float(ga.error) < 4e-4 and float(ga.passed_high) == 1.0          # measured 3.41e-5
    assert float(bl.error) < 3e-11                                          # measured 2.63e-12
    assert float(ga.t_reached) == pytest.approx(1.5)


def test_a04_redundant_mechanism_runs_and_matches_its_reference():
    """Bricard over 0.15 s: the start drops one row (Result.redundant), and RK4 on the index-1 form
    agrees with the DOP853 reference of the non-redundant twin to 1.1e-10 (the reference's own
    accuracy: every order-4/5 method lands there)."""
    ds = S.run_case({**S.QUICK, "benchmark": "A04", "stepping": "h=1e-3", "method": "rk4_index1"})
    assert float(ds.redundant_rows) == 1.0
    assert float(ds.error) < 2e-9                                           # measured ~1.1e-10
    assert float(ds.passed_high) == 1.0


def test_a_method_that_stops_is_recorded_not_raised():
    """Lobatto IIIA-IIIB stops in Newton at A02's singular configuration today (t = 1.228): the case
    carries its status and message and the steps before; when the kernels pass it, the status is ok."""
    ds = S.run_case({**S.QUICK, "benchmark": "A02_N2", "stepping": "h=1e-3", "method": "lobatto_iiiab"})
    status = str(ds["status"].values) if "status" in ds else "ok"
    if status != "ok":
        assert "Newton" in str(ds["message"].values) and float(ds.passed_high) == 0.0
        assert 0.0 < float(ds.t_reached) < 1.5
    else:
        assert float(ds.error) < 1e-3
