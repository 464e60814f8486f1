"""Helpers shared by several test modules (pyproject.toml puts ``tests`` on the path, so ``import
support.<module>`` works from any working directory). A test module imports from the package,
``conftest`` or here, never from another test module."""
