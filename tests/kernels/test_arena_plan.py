"""The arena layout of pooled requests: requests alive at the same time never share bytes, and the arena
is the largest live set on the shapes a model's runs produce."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from nnconv.runtime.arena_plan import ALIGN, plan_offsets


@st.composite
def _requests(draw):
    """A run's pooled requests: each asked for at one event, released at a later one or never."""
    n = draw(st.integers(1, 40))
    sizes, starts, ends = [], [], []
    for k in range(n):
        sizes.append(draw(st.integers(1, 5000)))
        starts.append(2 * k)
        life = draw(st.one_of(st.none(), st.integers(1, 2 * n)))
        ends.append(None if life is None else 2 * k + life)
    return sizes, starts, ends


@settings(max_examples=300, deadline=None)
@given(_requests())
def test_requests_alive_together_never_share_bytes(requests) -> None:
    sizes, starts, ends = requests
    plan = plan_offsets(sizes, starts, ends)
    placed = [k for k, off in enumerate(plan.offsets) if off is not None]
    assert placed == [k for k, e in enumerate(ends) if e is not None]  # never released: no offset
    for k in placed:
        assert plan.offsets[k] % ALIGN == 0 and plan.offsets[k] + sizes[k] <= plan.size
        for j in placed:
            if j < k and starts[j] < ends[k] and starts[k] < ends[j]:
                a, b = plan.offsets[k], plan.offsets[j]
                assert a + sizes[k] <= b or b + sizes[j] <= a, (k, j)
    # never below the largest set of bytes alive at one event
    events = sorted(set(starts))
    live = max((sum(sizes[k] for k in placed if starts[k] <= t < ends[k]) for t in events), default=0)
    assert plan.size >= live


def test_a_chain_of_layers_needs_two_buffers() -> None:
    # each layer's output lives until the next layer has read it: the arena holds the two largest neighbours
    sizes = [4096, 8192, 4096, 8192, 2048]
    starts = [0, 1, 3, 5, 7]
    ends = [2, 4, 6, 8, 9]
    plan = plan_offsets(sizes, starts, ends)
    assert plan.size == 8192 + 4096
