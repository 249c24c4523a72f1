"""Item generation (`twist build`): templates, authored banks, injection, QA re-validation."""
