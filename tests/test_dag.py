from ember.executor.dag import Graph


def test_steps_become_ready_as_their_dependencies_succeed() -> None:
    graph = Graph()
    assert graph.add(1, []) == ([1], [])
    assert graph.add(3, [1, 2]) == ([], [])  # waits on a step not planned yet
    assert graph.add(2, []) == ([2], [])
    assert graph.finish(1, ok=True) == ([], [])
    assert graph.waiting() == {3: {2}}
    assert graph.finish(2, ok=True) == ([3], [])
    assert graph.add(4, [3]) == ([], [])
    assert graph.finish(3, ok=True) == ([4], [])
    assert graph.add(5, [1, 3]) == ([5], [])  # everything it needs already succeeded


def test_a_failure_dooms_its_dependants_transitively_and_nothing_else() -> None:
    graph = Graph()
    for step_id, deps in [(1, []), (2, [1]), (3, [2]), (4, []), (5, [3, 4])]:
        graph.add(step_id, deps)
    assert graph.finish(1, ok=False) == ([], [(2, 1), (3, 2), (5, 3)])
    assert graph.finish(4, ok=True) == ([], [])
    assert graph.add(6, [3]) == ([], [(6, 3)])  # planned after the failure: doomed at once
    assert graph.waiting() == {}
