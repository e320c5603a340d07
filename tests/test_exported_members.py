import ember


def test_public_namespace_is_pinned() -> None:
    assert sorted(ember.__all__) == sorted(
        [
            "EmberError",
            "ExecutionMode",
            "Plan",
            "Planner",
            "PlanningTask",
            "Risk",
            "RunResult",
            "Runtime",
            "SQLiteJournal",
            "ScriptedPlanner",
            "Step",
            "StepReport",
            "ToolDescriptor",
            "ToolRegistry",
            "UserError",
            "__version__",
            "tool",
        ]
    )
    for name in ember.__all__:
        assert getattr(ember, name) is not None
