"""One section's vectors as a dense float32 matrix, so a section search in Qdrant local mode costs one
matrix product instead of a per-point Python filter.

qdrant-client's local mode keeps its own copy of every vector, but its filtered search tests each
payload in Python and builds an object per hit; this second copy (rows × dimensions × 4 bytes) is what
the search reads. Rows are unit-normalised in float32 as local mode normalises a vector on upsert, and
the scores returned are recomputed in float64 against a float64 unit query, as local mode computes
them; ties are ordered by point id.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

# qdrant-client's own EPSILON (f32::EPSILON): vectors with a smaller norm are stored unnormalised,
# and a zero query is divided by it, as local mode does.
_EPSILON = 1.1920929e-7


def unit_rows(vectors: Sequence[Sequence[float]], dimensions: int) -> Any:
    """`vectors` as float32 rows divided by their norm, as local mode normalises a cosine vector on upsert
    (a row whose norm is below EPSILON stays as it is)."""
    import numpy as np

    rows = np.array(vectors, dtype=np.float32).reshape(len(vectors), dimensions)
    norms = np.linalg.norm(rows, axis=-1)[:, np.newaxis]
    return rows / np.where(norms > _EPSILON, norms, np.float32(1.0))


def unit_queries(vectors: Sequence[Sequence[float]]) -> Any:
    """Query vectors as local mode scores them: float64, divided by their norm."""
    import numpy as np

    queries = np.array(vectors, dtype=np.float64)
    norms = np.linalg.norm(queries, axis=-1)[:, np.newaxis]
    return queries / np.where(norms != 0.0, norms, _EPSILON)


class SectionMatrix:
    """The unit vectors of one section with their point ids; rows[:len(ids)] are all live (a dropped row
    is replaced by the last one), and the array doubles when full."""

    def __init__(self, dimensions: int) -> None:
        import numpy as np

        self._rows = np.zeros((16, dimensions), dtype=np.float32)
        # Each row's owner (its incident's project) as a code, so a project's search masks the other rows out
        # before ranking; code 0 is "" (nobody's), which no search asks for.
        self._owners = np.zeros(16, dtype=np.int32)
        self._codes: dict[str, int] = {"": 0}
        self._ids: list[str] = []
        self._row_of: dict[str, int] = {}
        # The float32 product's rounding error stays below d × 2^-24 for unit vectors; twice that is the
        # margin under the k-th rough score within which candidates are rescored exactly.
        self._slack = dimensions * 2.0 ** -23

    def __len__(self) -> int:
        return len(self._ids)

    def add(self, ids: Sequence[str], rows: Any, owners: Sequence[str] = ()) -> None:
        """Store `rows` (already unit rows) under `ids`, of `owners` (one project per id; none: nobody's); an
        id already here has its row overwritten."""
        import numpy as np

        codes = [self._codes.setdefault(o, len(self._codes)) for o in owners] or [0] * len(ids)
        last = {pid: i for i, pid in enumerate(ids)}  # an id given twice keeps its last row, as an upsert does
        fresh = [i for pid, i in last.items() if pid not in self._row_of]
        for pid, i in last.items():
            if pid in self._row_of:
                self._rows[self._row_of[pid]] = rows[i]
                self._owners[self._row_of[pid]] = codes[i]
        start, end = len(self._ids), len(self._ids) + len(fresh)
        if end > len(self._rows):
            size = max(end, 2 * len(self._rows))
            grown = np.zeros((size, self._rows.shape[1]), dtype=np.float32)
            grown[:start] = self._rows[:start]
            self._rows = grown
            self._owners = np.concatenate([self._owners[:start], np.zeros(size - start, dtype=np.int32)])
        self._rows[start:end] = rows[fresh]
        self._owners[start:end] = [codes[i] for i in fresh]
        for at, i in enumerate(fresh, start):
            self._ids.append(ids[i])
            self._row_of[ids[i]] = at

    def drop(self, pid: str) -> None:
        at = self._row_of.pop(pid, None)
        if at is None:
            return
        last = len(self._ids) - 1
        if at != last:
            self._rows[at] = self._rows[last]
            self._owners[at] = self._owners[last]
            self._ids[at] = self._ids[last]
            self._row_of[self._ids[at]] = at
        self._ids.pop()

    def top(self, queries: Any, limit: int, min_score: float = 0.0,
            among: frozenset[str] | None = None) -> list[list[tuple[str, float]]]:
        """For each row of `queries` (from `unit_queries`), the best `limit` (point id, score) pairs with a
        score ≥ `min_score` (0: no threshold), best first, ties by id; with `among`, of the rows those projects
        own only. One float32 product ranks every row; the rows within rounding of the k-th are rescored in
        float64 and sorted exactly."""
        import numpy as np

        kept = None if among is None else np.flatnonzero(np.isin(
            self._owners[:len(self._ids)], [self._codes[p] for p in among if p in self._codes]))
        n = len(self._ids) if kept is None else len(kept)
        if not n or limit <= 0:
            return [[] for _ in range(len(queries))]
        rows = self._rows[:n] if kept is None else self._rows[kept]
        rough = rows @ queries.astype(np.float32).T
        out = []
        for j in range(len(queries)):
            column = rough[:, j]
            if n > limit:
                kth = np.partition(column, n - limit)[n - limit]
                candidates = np.flatnonzero(column >= kth - self._slack)
            else:
                candidates = np.arange(n)
            # Elementwise and summed per row (not BLAS, whose blocking can round equal rows differently), so
            # equal vectors score exactly alike and their order by id holds.
            exact = (rows[candidates].astype(np.float64) * queries[j]).sum(axis=1)
            if min_score:
                candidates, exact = candidates[exact >= min_score], exact[exact >= min_score]
            ids = np.array([self._ids[i] for i in (candidates if kept is None else kept[candidates])], dtype=str)
            order = np.lexsort((ids, -exact))[:limit]  # best score first, then by id
            out.append([(str(ids[i]), float(exact[i])) for i in order])
        return out
