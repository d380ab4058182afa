"""The seed-002 study: its cases carry the issue's figures (the runner's quick run of every
registered study, conventions and figures included, is in tests/test_cli.py)."""
import numpy as np

from pyint.studies import triple_pendulum_symplectic as study


def test_cases_reproduce_the_paper_run():
    small = {"t_long": 24.0, "every_long": 2, "n_h": 2}
    r = study.run_case({"method": "rattle", **small})
    b = study.run_case({"method": "baumgarte_rk4", **small})
    assert float(r.eps_pos) <= 1e-13 and float(r.eps_vel) <= 1e-13
    assert 2.7e-2 <= float(r.energy_change_max) <= 3.1e-2
    assert float(b.eps_pos) >= 1e-6 and float(b.eps_vel) >= 1e-6
    assert r.sizes["time"] == 501 and r.sizes["time_long"] == 101 and r.sizes["h"] == 2
    assert np.all(np.isfinite(r.error_q.values)) and np.all(r.status_sweep.values == "ok")
    for ds in (r, b):
        for name, var in ds.variables.items():
            assert {"units", "long_name"} <= set(var.attrs), name
