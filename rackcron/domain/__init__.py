"""The domain: rackcron's rules as pure code, below the store, the service and every front.

Each module holds the rules of one subject and does no I/O: timing (specs, cron, time
zones), the models, filters, targets and templates of a schedule, firing decisions, the
task lifecycle and task conflicts, freeze rules, what fires next (upcoming), plan commands,
names and text rules, escaping. A caller passes in what they need (``now`` included) and
gets values back. An import contract (pyproject.toml) keeps them so: no database, network,
terminal or template library here, and nothing from the layers above; docs/architecture.md
draws the layers.
"""
