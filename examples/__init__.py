"""ember's runnable examples: the flagship workflows (`python -m examples.NAME.run`)."""
