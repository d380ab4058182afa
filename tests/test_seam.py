"""The Python-Fortran seam: one description (seam/seam.toml) is the source of both sides.

pyint/ writes no slot number and no method id by hand (checked on its source), every described
method is a stepper of the compiled library (the generated dispatch pyint_methods),
and Options packs each value into the slot the description derives.
"""
import ast
import tomllib
from pathlib import Path

import numpy as np
import pytest

import pyint
import pyint.methods  # noqa: F401  (registers the library's methods)
from pyint import _fortran
from pyint.integrator import METHODS
from pyint.options import AOPT, STATUS, Options, method_id, pack_aopt, stat_names

ROOT = Path(__file__).resolve().parents[1]
DESCRIPTION = tomllib.loads((ROOT / "seam" / "seam.toml").read_text())
#: The arrays whose slots the description owns: an index into one of them is a slot.
SLOT_ARRAYS = {"iopt", "ropt", "aopt", "stats"}


def hand_written_slots(source: str, filename: str = "<source>") -> list[str]:
    """Where `source` writes a slot or an id by hand: ``KERNEL = <int>``, a literal index or
    slice bound into iopt/ropt/aopt/stats (``iopt[1:]``, ``aopt[6]``)."""
    found = []
    for node in ast.walk(ast.parse(source, filename)):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "KERNEL" for t in node.targets):
            if isinstance(node.value, ast.Constant) and isinstance(node.value.value, int):
                found.append(f"{filename}:{node.lineno}: KERNEL = {node.value.value}")
        if isinstance(node, ast.Subscript):
            base = node.value
            name = base.id if isinstance(base, ast.Name) else base.attr if isinstance(base, ast.Attribute) else None
            if name not in SLOT_ARRAYS:
                continue
            idx = node.slice
            parts = [idx.lower, idx.upper, idx.step] if isinstance(idx, ast.Slice) else [idx]
            if any(isinstance(p, ast.Constant) and isinstance(p.value, int) for p in parts) or any(
                    isinstance(p, ast.UnaryOp) and isinstance(p.operand, ast.Constant) for p in parts):
                found.append(f"{filename}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_the_check_finds_each_kind_of_hand_written_slot():
    src = ("class A:\n    KERNEL = 3\n"
           "def f(iopt, ropt, aopt, self):\n    return iopt[1:], ropt[0], aopt[-1], self.stats[2], aopt[AOPT['rtol']]\n")
    found = hand_written_slots(src)
    assert len(found) == 5, found       # the named index is not one
    assert "KERNEL = 3" in found[0]


def test_no_hand_written_slot_numbers_in_pyint():
    found = []
    for path in sorted((ROOT / "pyint").rglob("*.py")):
        found += hand_written_slots(path.read_text(), str(path.relative_to(ROOT)))
    assert not found, "\n".join(found)


def test_every_described_method_is_a_stepper_and_every_kernel_is_described():
    ids = {m["name"]: m["id"] for m in DESCRIPTION["method"]}
    assert len(set(ids.values())) == len(ids)
    for name, k in ids.items():
        assert method_id(name) == k
        assert _fortran.method_known(k), name      # the generated dispatch has its case
    assert not _fortran.method_known(max(ids.values()) + 1)
    assert {cls.KERNEL for cls in METHODS.values()} <= set(ids.values())


def test_each_class_names_its_stats_as_the_description():
    by_id = {m["id"]: m["name"] for m in DESCRIPTION["method"]}
    for cls in METHODS.values():
        assert tuple(cls.STATS) == stat_names(by_id[cls.KERNEL]), cls.name


def test_status_codes_are_the_description():
    assert STATUS == DESCRIPTION["status"]
    assert sorted(STATUS.values()) == list(range(len(STATUS)))
    from pyint._status import STATUS_NAMES, STATUS_SINGULAR_POSITION
    assert STATUS_NAMES[STATUS_SINGULAR_POSITION] == "singular_position"


def test_control_c_takes_its_status_codes_from_the_description():
    # fortran/core/control.c returns three status codes; they come from the generated header
    # pyint_seam.h, so no number and no enum of codes is written there by hand
    import re
    src = (ROOT / "fortran" / "core" / "control.c").read_text()
    assert '#include "pyint_seam.h"' in src
    assert not re.search(r"\bSTATUS_\w+\s*=\s*\d", src) and "enum" not in src
    used = set(re.findall(r"\bPYINT_STATUS_(\w+)", src))
    assert used == {"INTERRUPTED", "ABORTED", "LAPACK_ERROR"}
    assert {u.lower() for u in used} <= set(DESCRIPTION["status"])


def test_options_pack_by_name_into_the_derived_slots():
    iopt, ropt = Options("genalpha").pack(variant="stab2", formulation="arnold_bruls", mass_update="exact",
                                          start="consistent", maxit=7, linear_solver=0, jacobian_reuse=1,
                                          rho_inf=0.5, tol=1e-9)
    assert iopt == (2, 1, 0, 0, 7, 0, 1) and ropt == (0.5, 1e-9)
    # a real-array ends the reals; the adaptive options follow the fixed ones
    iopt, ropt = Options("block").pack(adaptive=True, stages=2, maxit=3, start_substeps=4, tol=1e-12,
                                       theta_refresh=0.1, degree=3, tableau=[5.0, 6.0])
    assert iopt == (2, 3, 4, 3) and ropt == (1e-12, 0.1, 5.0, 6.0)
    with pytest.raises(ValueError, match="missing \\['tol'\\]"):
        Options("symplectic").pack(scheme="lobatto", tableau="lobatto", stages=2, maxit=3)
    with pytest.raises(ValueError, match="unknown \\['tolerance'\\]"):
        Options("lie_genalpha").pack(variant="index3", maxit=3, rho_inf=0.9, tol=1e-9, tolerance=1)
    with pytest.raises(ValueError, match="form must be one of"):
        Options("lie_backward").pack(form="dae5", history=0, maxit=3, linear_solver=0, tol=1e-9)


def test_aopt_packs_by_name():
    aopt = pack_aopt(t_end=2.0, rtol=1e-6, atol=1e-8, h0=0.0, h_min=1e-12, h_max=0.5, norm_mode=2)
    assert aopt[AOPT["rtol"]] == 1e-6 and aopt[AOPT["norm_mode"]] == 2 and aopt.size == len(AOPT) == 7
    assert np.all(aopt == [2.0, 1e-6, 1e-8, 0.0, 1e-12, 0.5, 2.0])


def test_the_generated_python_side_is_installed_not_committed():
    assert (Path(pyint.__file__).parent / "_seam.py").is_file()
    assert not (ROOT / "pyint" / "_seam.py").exists()


def test_callback_requests_and_queries_are_the_description():
    from pyint.models._fortran_model import QUERIES
    from pyint.models.base import BUNDLE_SHIFT, CALLBACK_REQUESTS
    cb = DESCRIPTION["callback"]
    assert list(CALLBACK_REQUESTS.values()) == cb["requests"] and min(CALLBACK_REQUESTS) == 1
    assert BUNDLE_SHIFT == cb["bundle_shift"] > max(CALLBACK_REQUESTS)
    assert list(QUERIES) == DESCRIPTION["queries"]["names"] and sorted(QUERIES.values()) == list(range(1, len(QUERIES) + 1))
