"""DAG readiness, kept incrementally: which steps can start now, which never can (pure: no I/O).

Steps arrive one by one while the plan streams in, and may wait on steps not planned yet.
Each event (a step added, a step finished) costs time proportional to the edges it touches,
not to the size of the plan.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["Graph"]


class Graph:
    """Dependencies between step ids, and which steps are waiting, ready or doomed."""

    def __init__(self) -> None:
        self._unmet: dict[int, set[int]] = {}  # waiting step -> dependencies not yet succeeded
        self._dependants: dict[int, set[int]] = {}  # step -> waiting steps that need it
        self._ok: dict[int, bool] = {}  # finished step -> succeeded?

    def add(self, step_id: int, deps: Iterable[int]) -> tuple[list[int], list[tuple[int, int]]]:
        """Add a step; returns (steps ready to start, [(skipped step, the step that failed)])."""
        deps = set(deps)
        failed = sorted(dep for dep in deps if self._ok.get(dep) is False)
        if failed:
            return [], self._cascade(step_id, failed[0])
        unmet = {dep for dep in deps if not self._ok.get(dep)}
        if not unmet:
            return [step_id], []
        self._unmet[step_id] = unmet
        for dep in unmet:
            self._dependants.setdefault(dep, set()).add(step_id)
        return [], []

    def finish(self, step_id: int, ok: bool) -> tuple[list[int], list[tuple[int, int]]]:
        """Record a step's outcome; returns what it unblocked or doomed, as `add` does."""
        self._unmet.pop(step_id, None)
        self._ok[step_id] = ok
        dependants = sorted(self._dependants.pop(step_id, ()))
        if not ok:
            return [], [pair for dep in dependants for pair in self._cascade(dep, step_id)]
        ready = []
        for dependant in dependants:
            unmet = self._unmet.get(dependant)
            if unmet is not None:
                unmet.discard(step_id)
                if not unmet:
                    del self._unmet[dependant]
                    ready.append(dependant)
        return ready, []

    def _cascade(self, step_id: int, cause: int) -> list[tuple[int, int]]:
        """Skip `step_id` because `cause` failed, and everything waiting on it in turn."""
        if step_id in self._ok:
            return []
        self._unmet.pop(step_id, None)
        self._ok[step_id] = False
        skipped = [(step_id, cause)]
        for dependant in sorted(self._dependants.pop(step_id, ())):
            skipped.extend(self._cascade(dependant, step_id))
        return skipped

    def waiting(self) -> dict[int, set[int]]:
        """Steps still waiting, with the dependencies they wait for."""
        return {step_id: set(unmet) for step_id, unmet in self._unmet.items()}
