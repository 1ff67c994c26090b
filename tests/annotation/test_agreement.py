"""Agreement metrics against hand-computed textbook examples, and the per-queue report."""

from __future__ import annotations

import math

import numpy as np
import pytest

from vibestudio.annotation.agreement import (
    cohen_kappa,
    coincidence_matrix,
    counts_table,
    fleiss_kappa,
    krippendorff_alpha,
    majority_agreement,
    plurality,
)

N = None
# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", section C: 4 observers, 12 units,
# values 1-5 with missing data. Published: nominal .743, ordinal .815, interval .849, ratio .797.
KRIPP_C = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, N, N, N],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, N, 3],
    [N, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, N],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, N],
]


@pytest.mark.parametrize(
    "level,expected", [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849), ("ratio", 0.797)]
)
def test_krippendorff_worked_example_with_missing_data(level, expected):
    assert krippendorff_alpha(KRIPP_C, level) == pytest.approx(expected, abs=5e-4)


def test_krippendorff_coincidences_match_the_worked_example():
    o, values = coincidence_matrix(KRIPP_C)
    assert values == [1, 2, 3, 4, 5]
    # Krippendorff's table: n_c = 9, 13, 10, 5, 3 (n = 40 pairable values).
    # By hand: o_11 = 3 (unit 1: three 1s, 6 pairs / 2) + 2 (unit 8: 6 pairs / 3) + 2 (unit 11: 2 pairs / 1);
    # o_12 = 1/3 (unit 6) + 3/3 (unit 8).
    assert o.sum(axis=1) == pytest.approx([9, 13, 10, 5, 3])
    assert o[0, 0] == pytest.approx(7.0) and o[0, 1] == pytest.approx(4 / 3)


def test_krippendorff_two_coders_binary_example():
    # Krippendorff (2011) section A: two observers, ten units, binary: alpha = .095
    a = [0, 1, 0, 0, 0, 0, 0, 0, 1, 0]
    b = [1, 1, 1, 0, 0, 1, 0, 0, 0, 0]
    assert krippendorff_alpha([a, b]) == pytest.approx(0.095, abs=5e-4)


def test_krippendorff_labels_perfect_and_undefined():
    assert krippendorff_alpha([["x", "y", "x"], ["x", "y", "x"]]) == 1.0
    assert math.isnan(krippendorff_alpha([["x", "x"], ["x", "x"]]))  # no variation: undefined
    assert math.isnan(krippendorff_alpha([["x", N], [N, "y"]]))  # nothing pairable


def test_cohen_kappa_textbook_example():
    # 50 proposals, two readers: yes/yes 20, yes/no 5, no/yes 10, no/no 15 -> p_o = .70, p_e = .50, kappa = .40
    a = ["yes"] * 25 + ["no"] * 25
    b = ["yes"] * 20 + ["no"] * 5 + ["yes"] * 10 + ["no"] * 15
    kappa, n = cohen_kappa(a, b)
    assert n == 50 and kappa == pytest.approx(0.4)
    kappa, n = cohen_kappa(a + [N], b + ["yes"])
    assert n == 50 and kappa == pytest.approx(0.4)


# Fleiss' kappa example (10 subjects, 14 raters, 5 categories) as in the Wikipedia article on Fleiss' kappa:
# P-bar = 0.378, P-bar_e = 0.213, kappa = 0.210.
FLEISS = [
    [0, 0, 0, 0, 14],
    [0, 2, 6, 4, 2],
    [0, 0, 3, 5, 6],
    [0, 3, 9, 2, 0],
    [2, 2, 8, 1, 1],
    [7, 7, 0, 0, 0],
    [3, 2, 6, 3, 0],
    [2, 5, 3, 2, 2],
    [6, 5, 2, 1, 0],
    [0, 2, 2, 3, 7],
]


def test_fleiss_kappa_example():
    assert fleiss_kappa(FLEISS) == pytest.approx(0.210, abs=5e-4)
    t = np.array(FLEISS, dtype=float)
    p_i = ((t * t).sum(axis=1) - 14) / (14 * 13)
    assert p_i.mean() == pytest.approx(0.378, abs=5e-4)


def test_fleiss_by_hand_three_raters():
    # 3 raters (rows) x 3 units (columns), categories a/b: units (a,a,a), (a,b,a), (b,b,b).
    # Unit agreement P_i: 1, 1/3, 1 -> P-bar 7/9. Shares a = 5/9, b = 4/9 -> P_e = 41/81;
    # kappa = (7/9 - 41/81) / (1 - 41/81) = (22/81) / (40/81) = 0.55
    m = [["a", "a", "b"], ["a", "b", "b"], ["a", "a", "b"]]
    table, values = counts_table(m)
    assert values == ["a", "b"] and table.tolist() == [[3, 0], [2, 1], [0, 3]]
    assert fleiss_kappa(table) == pytest.approx(0.55)


def test_majority_agreement_is_leave_one_out():
    m = [
        ["1", "1", "2", "tie"],
        ["1", "2", "2", "tie"],
        ["1", "1", "1", N],
    ]
    res = majority_agreement(m)
    # coder 0: unit0 others (1,1) agree; unit1 others (2,1) no plurality; unit2 (2,1) none; unit3 (tie) agree
    # coder 1: unit0 agree; unit1 mine 2 vs others (1,1) disagree; unit2 none; unit3 agree -> 2 of 3
    # coder 2: unit0 agree; unit1 others (1,2) none; unit2 mine 1 vs (2,2) disagree; unit3 missing -> 1 of 2
    assert [(r.agree, r.n) for r in res] == [(2, 2), (2, 3), (1, 2)]
    assert plurality(["a", "b"]) is None and plurality(["a", "a", "b"]) == "a" and plurality([]) is None
