"""Marks for how a test may run beside others under pytest-xdist (``make test``).

* ``ONE_AT_A_TIME``: for a test that runs several processes (``rackcron dispatch``
  replicas killed or paused, ``serve`` under a browser, a dispatcher whose lag is
  bounded) and bounds how late they act. ``--dist loadgroup`` hands every test so marked
  to the same worker, which runs them one after another, never two side by side, while
  the other workers go on with the rest. Such a test is ``slow`` as well (marked so
  beside it), which keeps it out of ``make test-fast``.
"""

from __future__ import annotations

import pytest

__all__ = ["ONE_AT_A_TIME"]

ONE_AT_A_TIME = pytest.mark.xdist_group("one-at-a-time")
