"""Test support: builders, strategies and data shared by test modules (no tests here).

A test module imports what it shares from here, never from another test module
(``tests/unit/test_support_layout.py`` checks it).

* ``backends``: every backend a reconciler plans through (``BACKENDS``, ``open_backend``:
  the store in-process, a shim with ``rackcron.v1.Reconciler`` on loopback; ``serving``,
  a shim with it or speaking only the Flow RPCs), trees as
  desired states (``desired``) and plan helpers (``plan``, ``converge``, ``actions``,
  ``stored``);
* ``cli``: ``run``, the ``rackcron`` command in-process, failing the test on a traceback;
  ``run_process``, the command in a child process with a time bound and, optionally, a
  memory bound (``LIMIT_AS`` of address space, a peak under ``MAX_RSS``);
* ``controller``: the reference rack controller: ``controller_server``, a
  ``ControllerServer`` in this process over a simulator, and ``rack_controller_process``,
  the command in a child process, with its URL;
* ``flood``: a flood of idle connections from many loopback addresses at a steady rate
  (``Flood``), an honest request sent in pieces (``slow_request``), a probe (``probe``),
  this process's peak thread count (``PeakThreads``) and clients that ask for answers and
  never read them (``SlowReaders``);
* ``flow``: Flow request builders (``uid``, ``racks``, ``rack_targets``, ``operation``,
  ``config``, ``create_request``, ``update_request``), ``create`` over a stub, and
  ``failure`` (the ``grpc.RpcError`` a call fails with);
* ``git``: real git repositories in temp dirs (``git``, ``init_repo``);
* ``help_examples``: the examples of ``rackcron ... --help`` read as commands
  (``help_examples``, ``HelpExample``), every command's path (``commands``), and why an
  example cannot run in a sandbox (``not_run``);
* ``history``: task history in bulk (``insert_tasks``: many task rows, one statement per
  20,000);
* ``hostile``: hostile strings (``HOSTILE``, ``hostile_text``) and states full of them
  (``hostile_states``);
* ``markdown``: rendered Markdown read back as a parser does (``parse``, ``table_rows``);
* ``marks``: how a test may run beside others under pytest-xdist (``ONE_AT_A_TIME``);
* ``model``: a small in-memory model of the task-schedule rules (``Model``: schedules,
  scope entries, tasks; firing, the task manager, the queue round), which the service's
  state machine test checks the service against;
* ``net``: ``free_port`` on 127.0.0.1;
* ``outages``: real database outages at a chosen moment (SQLite write lock, PostgreSQL
  refusing connections, a full SQLite file);
* ``peers``: misbehaving loopback peers (``Trickler``, ``Canned``, ``deep_json``), and
  ``SlowClients``, clients from many loopback addresses whose requests never end;
* ``pki``: test certificates (``Pki``, ``make_pki``: a CA, a server and a client
  certificate it signed, and a stranger's), the integration tests' ``pki`` fixture;
* ``rpcs``: every RPC the shim serves with a token, each with a request that succeeds
  over a prepared store (``REQUESTS``, ``RpcState``, ``prepare``), and ``invoke`` to
  call any of them (the token scope tests);
* ``saved_plans``: the plans saved by each earlier plan format version's own code, with
  the trees they were planned from (``SAVED_PLANS``, ``SavedPlan``, ``TREE``);
* ``serve``: ``rackcron serve`` as a child process with its HTTP listener's port
  (``serve_process``, ``Served``), and requests to it with chosen ``Host`` headers or
  none (``get``, ``get_without_host``);
* ``service``: service-level builders and probes (``create``, ``rack_spec``,
  ``make_operation``, ``snapshot``, ``set_status``, ``scope_rows``);
* ``strategies``: hypothesis strategies: ``json_values`` (JSON-shaped values of chosen
  leaves and keys), and the Flow requests of the shim fuzzing (``REQUESTS`` per RPC,
  ``rpc_choice``, the ``Pool`` of known values they draw from, ``drawing_from``);
* ``trees``: YAML documents (``rack``, ``component``, ``rack_id``, ``documents``,
  ``schedule``; ``ONE_RACK``, ``RACKS``), declared trees in git repositories with the
  CLI on one store (``Repo``), plan readers (``actions``, ``rpcs``);
* ``webhook``: a webhook receiver on 127.0.0.1 (``Receiver``, answering as each request's
  ``Answer`` says: a status, a delay, or held), ``check`` (an event valid against the
  published schema, and signed), ``wait_until``, and the ``SCHEMA``;
* ``wire_spec``: the wire tables of docs/spec/flow-wire.md parsed into a ``Spec``
  (``parse_spec``, ``read_spec``, ``SCALARS``);
* ``workflow``: a GitHub Actions job's ``run:`` steps run here as the runner would
  (``load_job``, ``run_job``, ``evaluate`` for the ``${{ }}`` expressions it uses).
"""
