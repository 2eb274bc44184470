"""The reply rules: registry, the rules themselves, the linter and QA."""

from trajectory_review.rules import checks  # noqa: F401 - registers the six rules, in order
