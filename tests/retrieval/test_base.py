import numpy as np
import pytest

from twistbench.retrieval import make_retriever, top_k


def test_top_k_orders_by_score_then_index():
    scores = np.array([0.5, 0.9, 0.5, 0.9, 0.1, 0.5])
    assert top_k(scores, 3).tolist() == [1, 3, 0]
    assert top_k(scores, 4).tolist() == [1, 3, 0, 2]  # tie at the cut: lowest index wins
    assert top_k(scores, 10).tolist() == [1, 3, 0, 2, 5, 4]
    assert top_k(scores, 0).tolist() == []
    assert top_k(np.array([]), 3).tolist() == []


def test_top_k_matches_full_sort_on_random_ties():
    rng = np.random.default_rng(7)
    for _ in range(50):
        scores = rng.integers(0, 5, size=40).astype(np.float32)
        k = int(rng.integers(1, 45))
        expected = sorted(range(40), key=lambda i: (-scores[i], i))[:k]
        assert top_k(scores, k).tolist() == expected


def test_unknown_retriever_name():
    with pytest.raises(ValueError, match="lexical"):
        make_retriever("sparse")


@pytest.mark.parametrize("name", ["lexical", "dense"])
def test_duplicate_ids_refused(name):
    r = make_retriever(name)
    r.index(["a"], ["alpha text here"])
    with pytest.raises(ValueError, match="duplicate"):
        r.add(["a"], ["again"])
