"""``format.verify.Checks``: which error a run of steps ends with, and which rows run (property).

The rule (the reference's ``urna validate``: its open, then its own check): the outcome is the
first failing step the open makes and no later step makes again, else the first failing step
at all; after a failure only the open's steps still run, and after a final one none.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from helpers.vectors import REF
from urna.errors import InvalidInput
from urna.format.reader import UrnaView
from urna.format.verify import FAIL, OK, SKIP, Checking, Checks, Step, check_view

VIEW = UrnaView.from_bytes((REF / "quickstart-exact.urna").read_bytes())


def _step(i: int, opens: bool, fails: bool, repeats: frozenset[str], applies: bool) -> Step:
    def run(_: Checking) -> str:
        if fails:
            raise InvalidInput(f"step {i}")
        return f"passed {i}"

    return Step(f"s{i}", run, opens=opens, repeats=repeats, applies=lambda _view: applies)


@st.composite
def step_lists(draw: st.DrawFn) -> list[Step]:
    n = draw(st.integers(0, 8))
    steps = []
    for i in range(n):
        earlier = frozenset(f"s{j}" for j in range(i))
        repeats = draw(st.sets(st.sampled_from(sorted(earlier)))) if earlier else set()
        steps.append(_step(i, draw(st.booleans()), draw(st.booleans()), frozenset(repeats),
                           draw(st.booleans())))
    return steps


def _fails(step: Step) -> bool:
    try:
        step.run(None)  # type: ignore[arg-type]
    except InvalidInput:
        return True
    return False


@given(step_lists())
def test_the_outcome_is_the_opens_first_final_failure_else_the_first(steps: list[Step]) -> None:
    failing = [i for i, s in enumerate(steps) if _fails(s)]
    finals = [i for i in failing if steps[i].opens and not any(
        steps[i].name in later.repeated_on(VIEW) for later in steps[i + 1:])]
    want = finals[0] if finals else (failing[0] if failing else None)
    checks = Checks(VIEW, steps)
    rows = list(checks)
    assert [r.name for r in rows] == [s.name for s in steps]
    if want is None:
        assert checks.error is None and checks.verification is not None
        assert check_view(VIEW, steps) == checks.verification
    else:
        assert str(checks.error) == f"invalid input: step {want}"
    first = failing[0] if failing else len(steps)
    final = finals[0] if finals else len(steps)
    for i, (row, step) in enumerate(zip(rows, steps, strict=True)):
        if i <= first or (step.opens and i <= final):
            assert row.status == (FAIL if _fails(step) else OK)
        else:
            assert row.status == SKIP
