"""Every baseline and search of the one method registry from Python."""

import numpy as np
import pytest

import devplace


def test_methods_lists_the_registry():
    methods = devplace.methods()
    kinds = {m["name"]: m["kind"] for m in methods}
    for name in ("single_gpu", "m_etf", "metis", "scotch", "mcmc", "exact"):
        assert name in kinds
    assert kinds["mcmc"] == "search"
    assert all(m["available"] for m in methods)


def test_every_baseline_and_search_places():
    graph, cluster = devplace.Graph("tiny"), devplace.Cluster("k80x2")
    runnable = [m["name"] for m in devplace.methods() if m["kind"] in ("baseline", "search")]
    for name in runnable:
        try:
            out = devplace.place(graph, cluster, method=name, max_evaluations=300, seed=2)
        except devplace.Error as e:  # a placer that refuses the problem says why in one line
            assert "\n" not in str(e), name
            continue
        assert out["method"] == name
        assert out["placement"].shape == (graph.num_ops,) and out["placement"].dtype == np.int32
        again = devplace.simulate(graph, cluster, out["placement"])
        assert out["step_time_s"] == again.step_time_s, name


def test_a_search_is_seeded_and_spends_its_budget():
    graph, cluster = devplace.Graph("tiny"), devplace.Cluster("k80x4")
    a = devplace.place(graph, cluster, method="mcmc", max_evaluations=400, seed=5)
    b = devplace.place(graph, cluster, method="mcmc", max_evaluations=400, seed=5)
    assert np.array_equal(a["placement"], b["placement"])
    assert 0 < a["evaluations"] <= 400
    single = devplace.simulate(graph, cluster, "single:gpu:0").step_time_s
    assert a["step_time_s"] <= single
