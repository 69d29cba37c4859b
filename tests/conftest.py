"""Shared fixtures: one store suite over every backend, and a controllable clock.

``store_url`` is parametrised over SQLite and PostgreSQL, so every test that uses
it (or ``service``) runs on both, each time on a fresh database:

* SQLite: a copy of a database file migrated once per session;
* PostgreSQL: ``CREATE DATABASE ... TEMPLATE`` from a database migrated once per
  session, dropped after the test, both on a thread beside the tests
  (:class:`_Databases`). Set ``RACKCRON_TEST_POSTGRES_URL`` (a URL to an administrative
  database, e.g. ``postgresql+psycopg://postgres@127.0.0.1/postgres``) to run them;
  without it they skip with one line, unless ``RACKCRON_REQUIRE_POSTGRES=1`` (set by
  ``.ci/run``), which turns the skip into a failure.

Under pytest-xdist (``make test``) each worker is a session of its own, with its own
SQLite and PostgreSQL templates; a database's name carries the worker's id
(``rackcron_test_gw1_...``), so no two workers ever share one.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import sqlalchemy as sa

from rackcron.service import Service
from rackcron.store import open_engine

POSTGRES_ENV = "RACKCRON_TEST_POSTGRES_URL"
REQUIRE_ENV = "RACKCRON_REQUIRE_POSTGRES"


class Clock:
    """A clock the test moves by hand; starts at a fixed instant."""

    def __init__(self, now: datetime = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> datetime:
        self.now += timedelta(**delta)
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture(scope="session")
def _sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("template") / "template.db"
    open_engine(f"sqlite:///{path}", migrate=True).dispose()
    return path


def _postgres_admin_url() -> str | None:
    url = os.environ.get(POSTGRES_ENV)
    if not url:
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(f"{REQUIRE_ENV}=1 but {POSTGRES_ENV} is not set")
        pytest.skip(f"PostgreSQL tests need {POSTGRES_ENV}")
    return url


def _database_name(kind: str) -> str:
    """A new database's name: ``rackcron_<kind>_<xdist worker or main>_<random>``."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    return f"rackcron_{kind}_{worker}_{uuid.uuid4().hex[:10]}"


def _admin_execute(admin_url: str, *statements: str) -> None:
    engine = sa.create_engine(admin_url, isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            for statement in statements:
                conn.exec_driver_sql(statement)
    finally:
        engine.dispose()


@pytest.fixture(scope="session")
def _postgres_template() -> Iterator[tuple[str, str]]:
    admin_url = _postgres_admin_url()
    assert admin_url is not None
    name = _database_name("tmpl")
    try:
        _admin_execute(admin_url, f'CREATE DATABASE "{name}"')
    except sa.exc.OperationalError as exc:
        if os.environ.get(REQUIRE_ENV) == "1":
            raise
        pytest.skip(f"PostgreSQL at {POSTGRES_ENV} is unreachable: {exc.orig}")
    url = sa.make_url(admin_url).set(database=name).render_as_string(hide_password=False)
    open_engine(url, migrate=True).dispose()
    yield admin_url, name
    _admin_execute(admin_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


class _Databases:
    """New PostgreSQL databases from the template, one made ahead.

    Two threads make the next test's database while a test runs and drop each one once
    its test is done, so that these waits (about 0.15 s each on an idle host, a second or
    more on a busy one) overlap the tests and each other. Every database is still new:
    made from the template, used by one test, dropped.
    """

    def __init__(self, admin_url: str, template: str) -> None:
        self.admin_url, self.template = admin_url, template
        self._threads = ThreadPoolExecutor(max_workers=2, thread_name_prefix="databases")
        self._next = self._threads.submit(self._create)
        self._dropped: list[Future[None]] = []

    def _create(self) -> str:
        name = _database_name("test")
        _admin_execute(self.admin_url, f'CREATE DATABASE "{name}" TEMPLATE "{self.template}"')
        return name

    def _drop(self, name: str) -> None:
        _admin_execute(self.admin_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def take(self) -> str:
        """A new database's name (a thread starts on the one after it)."""
        made, self._next = self._next, self._threads.submit(self._create)
        return made.result()

    def drop(self, name: str) -> None:
        self._dropped.append(self._threads.submit(self._drop, name))

    def close(self) -> None:
        """Drop the one made ahead; raises what any drop raised."""
        if self._next.exception() is None:
            self.drop(self._next.result())
        self._threads.shutdown()
        for dropped in self._dropped:
            dropped.result()


@pytest.fixture(scope="session")
def _postgres_databases(_postgres_template: tuple[str, str]) -> Iterator[_Databases]:
    databases = _Databases(*_postgres_template)
    yield databases
    databases.close()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """The URL of a fresh, migrated, empty database on each backend."""
    if request.param == "sqlite":
        path = tmp_path / "rackcron.db"
        shutil.copy(request.getfixturevalue("_sqlite_template"), path)
        yield f"sqlite:///{path}"
        return
    databases: _Databases = request.getfixturevalue("_postgres_databases")
    name = databases.take()
    try:
        url = sa.make_url(databases.admin_url).set(database=name)
        yield url.render_as_string(hide_password=False)
    finally:
        databases.drop(name)


@pytest.fixture
def service(store_url: str, clock: Clock) -> Iterator[Service]:
    """The service over a fresh database on each backend, on the test's clock."""
    svc = Service(open_engine(store_url), clock=clock)
    yield svc
    svc.close()


class Fleet:
    """A small inventory: five racks of four components each, and one NVLink domain.

    ``racks[i]`` is named ``rack-a0{i+1}`` with external id ``ext-a0{i+1}``; each rack
    has two COMPUTE, one NVSWITCH and one POWERSHELF component, listed in
    ``components[rack_id]`` in that order, with external ids ``<rack name>-c<n>``
    and BMC MACs ``02:00:00:00:0<i>:0<n>``. Domain ``nvl-1`` (external id
    ``ext-nvl-1``) holds racks 0 and 1.
    """

    def __init__(self, service: Service) -> None:
        from rackcron.domain.models import Component, ComponentType, NVLDomain, Rack

        self.racks: list[uuid.UUID] = []
        self.components: dict[uuid.UUID, list[uuid.UUID]] = {}
        types = [
            ComponentType.COMPUTE,
            ComponentType.COMPUTE,
            ComponentType.NVSWITCH,
            ComponentType.POWERSHELF,
        ]
        for i in range(5):
            rack = service.upsert_rack(
                Rack(id=uuid.uuid4(), name=f"rack-a0{i + 1}", external_id=f"ext-a0{i + 1}")
            )
            self.racks.append(rack.id)
            self.components[rack.id] = []
            for n, ctype in enumerate(types):
                comp = service.upsert_component(
                    Component(
                        id=uuid.uuid4(),
                        rack_id=rack.id,
                        type=ctype,
                        name=f"c{n}",
                        external_id=f"rack-a0{i + 1}-c{n}",
                        bmc_mac=f"02:00:00:00:0{i}:0{n}",
                    )
                )
                self.components[rack.id].append(comp.id)
        self.domain = service.upsert_nvl_domain(
            NVLDomain(
                id=uuid.uuid4(), name="nvl-1", external_id="ext-nvl-1", rack_ids=self.racks[:2]
            )
        )


@pytest.fixture
def fleet(service: Service) -> Fleet:
    return Fleet(service)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """One line per distinct skip reason (instead of one per skipped test)."""
    reasons: dict[str, int] = {}
    for report in terminalreporter.stats.get("skipped", []):
        reason = str(report.longrepr[2]) if isinstance(report.longrepr, tuple) else "skipped"
        reason = reason.removeprefix("Skipped: ")
        reasons[reason] = reasons.get(reason, 0) + 1
    for reason, count in sorted(reasons.items()):
        terminalreporter.write_line(f"SKIPPED {count} tests: {reason}")
