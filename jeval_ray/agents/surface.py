"""Listing-only features of planted entries, and a classifier that tries to tell decoys from defects.

This is the leak probe: if a simple classifier, trained on the labelled worlds of some seeds and
given only what an agent sees *before opening any document* (the entry's ledger lines, the master
data and the document listing's titles), separates decoys from defects on other seeds, the task
leaks its answer through its surface. ``tests/test_adversarial.py`` asserts it cannot (ROC AUC
≤ 0.65 on every task); the ``surface_rule`` adversary plays the same classifier.

scikit-learn is a test dependency; it is imported only when a probe is trained.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

_WORD = re.compile(r"[a-z]+")
_PREFIX = re.compile(r"^[A-Za-z]+")


def listing_features(world, entry_ids: Iterable[str] | None = None) -> dict[str, dict[str, float]]:
    """``{entry_id: {feature: value}}`` from the listing alone (sparse, for a ``DictVectorizer``)."""
    led = world.ledger
    wanted = None if entry_ids is None else set(entry_ids)
    if wanted is not None:
        led = led.filter(pc.is_in(led.column("entry_id"), value_set=pa.array(sorted(wanted))))
    rows = led.to_pylist()
    # one string of every title (a reference or a name holds no newline, so a substring of it is
    # a substring of one title): one scan per entry instead of one per entry and title
    titles = "\n".join(d.title.lower() for d in world.documents)
    vendors = {v["vendor_id"]: (v.get("name") or "").lower() for v in world.master["vendors"].to_pylist()}
    by_entry: dict[str, list[dict]] = {}
    for r in rows:
        by_entry.setdefault(r["entry_id"], []).append(r)
    out: dict[str, dict[str, float]] = {}
    for eid, lines in by_entry.items():
        h = lines[0]
        f: dict[str, float] = {}
        amount = sum(r["debit"] or 0.0 for r in lines)
        imbalance = abs(amount - sum(r["credit"] or 0.0 for r in lines))
        cents = int(round(amount * 100))
        f["log_amount"] = math.log10(amount + 1)
        f["round_100"] = float(cents % 10_000 == 0)
        f["round_1000"] = float(cents % 100_000 == 0)
        f["whole"] = float(cents % 100 == 0)
        f["imbalance_log"] = math.log10(imbalance + 1)
        f["n_lines"] = float(len(lines))
        post, doc = h["posting_date"], h["document_date"]
        ts = h["entry_timestamp"]
        f["weekday=" + str(post.weekday())] = 1.0
        f["weekend"] = float(post.weekday() >= 5)
        f["entry_weekend"] = float(ts.weekday() >= 5)
        f["hour"] = ts.hour + ts.minute / 60
        f["after_hours"] = float(ts.hour < 8 or ts.hour >= 18)
        f["entry_lag_days"] = float((ts.date() - post).days)
        f["doc_lag_days"] = float((post - doc).days)
        f["month"] = float(post.month)
        f["day"] = float(post.day)
        f["month_end"] = float(post.day >= 26)
        for k in ("preparer", "approver", "source", "document_type", "vendor_id"):
            f[f"{k}={h[k]}"] = 1.0
        f["self_approved"] = float(bool(h["approver"]) and h["approver"] == h["preparer"])
        for r in lines:
            f[f"account={r['account']}"] = 1.0
            f[f"{'dr' if (r['debit'] or 0) > 0 else 'cr'}_account={r['account']}"] = 1.0
        for w in set(_WORD.findall((h["description"] or "").lower())):
            f["word=" + w] = 1.0
        f["desc_len"] = float(len(h["description"] or ""))
        ref = h["reference"] or ""
        m = _PREFIX.match(ref)
        f["ref_prefix=" + (m.group(0).upper() if m else "")] = 1.0
        f["ref_len"] = float(len(ref))
        vname = vendors.get(h["vendor_id"] or "", "")
        f["title_mentions_ref"] = float(bool(ref) and ref.lower() in titles)
        f["title_mentions_vendor"] = float(bool(vname) and vname in titles)
        out[eid] = f
    return out


def labelled(world) -> tuple[list[dict[str, float]], list[int]]:
    """Features and labels (1 = defect, 0 = decoy) of a world's visible planted entries."""
    labels = {d.entry_id: 1 for d in world.defects}
    labels.update({d.entry_id: 0 for d in world.decoys if d.entry_id not in labels})
    feats = listing_features(world, labels)
    ids = [e for e in labels if e in feats]
    return [feats[e] for e in ids], [labels[e] for e in ids]


def _models():
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import MaxAbsScaler

    return {
        "logistic": lambda: make_pipeline(MaxAbsScaler(), LogisticRegression(C=1.0, max_iter=2000)),
        "forest": lambda: RandomForestClassifier(n_estimators=200, max_depth=5, min_samples_leaf=2, random_state=0),
    }


class Probe:
    """A trained listing-only classifier (``kind``: logistic or forest)."""

    def __init__(self, kind: str, worlds: Iterable):
        from sklearn.feature_extraction import DictVectorizer

        X, y = [], []
        for w in worlds:
            xs, ys = labelled(w)
            X += xs
            y += ys
        self.vec = DictVectorizer()
        self.model = _models()[kind]()
        self.trainable = len(set(y)) == 2
        if self.trainable:
            self.model.fit(self.vec.fit_transform(X), y)

    def scores(self, feats: list[dict[str, float]]) -> np.ndarray:
        """P(defect) per feature row (0.5 everywhere when the training set had one class)."""
        if not self.trainable or not feats:
            return np.full(len(feats), 0.5)
        return self.model.predict_proba(self._matrix(feats))[:, 1]

    def _matrix(self, feats: list[dict[str, float]]):
        """``self.vec.transform(feats)`` for numeric features, without its per-value type checks
        (a whole world's listing is thousands of rows): features unseen in training are dropped."""
        from scipy.sparse import csr_matrix

        vocab = self.vec.vocabulary_
        indptr, indices, data = [0], [], []
        for f in feats:
            for k, v in f.items():
                j = vocab.get(k)
                if j is not None:
                    indices.append(j)
                    data.append(v)
            indptr.append(len(indices))
        return csr_matrix((np.asarray(data, dtype=float), np.asarray(indices, dtype=np.int32), indptr),
                          shape=(len(feats), len(vocab))).sorted_indices()

    def world_scores(self, world) -> dict[str, float]:
        feats = listing_features(world)
        ids = list(feats)
        return dict(zip(ids, self.scores([feats[e] for e in ids]).tolist()))


def probe_auc(train_worlds: list, test_worlds: list, trained: dict[str, Probe] | None = None) -> dict[str, float | None]:
    """Held-out decoy-vs-defect ROC AUC of each probe model (None when the test set has one class).
    ``trained``: probes already trained on ``train_worlds``, by kind, to reuse instead of training again."""
    from sklearn.metrics import roc_auc_score

    X, y = [], []
    for w in test_worlds:
        xs, ys = labelled(w)
        X += xs
        y += ys
    out: dict[str, float | None] = {}
    for kind in _models():
        p = (trained or {}).get(kind) or Probe(kind, train_worlds)
        out[kind] = float(roc_auc_score(y, p.scores(X))) if len(set(y)) == 2 else None
    return out


__all__ = ["Probe", "labelled", "listing_features", "probe_auc"]
