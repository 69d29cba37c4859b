"""`rackcron validate`: a corpus of broken inputs, each reported at its file, line and column.

Every case writes one broken file next to a valid inventory and expects exactly one
diagnostic, with the line and column of the offending token, a message, and the
JSON path. Lines and columns are 1-based, as editors show them.
"""

from __future__ import annotations

import gc
import json
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from rackcron.reconciler.validate import validate_tree
from rackcron.reconciler.yamlsource import MAX_FILE_BYTES
from tests.support.cli import run
from tests.support.trees import component, documents, rack

INVENTORY = documents(
    rack("r1", 1, external_id="EXT-R1", components=[
        component(1, "COMPUTE", external_id="r1-c1"), component(2, "compute", external_id="dup-tag"),
    ]),
    rack("r2", 2, components=[component(3, "NVSWITCH", external_id="dup-tag")]),
    """\
apiVersion: rackcron/v1
kind: NVLDomain
metadata: {name: nvl-a}
spec:
  id: 00000000-0000-4000-8000-0000000000d1
  racks: [r1, r2]
""",
)  # fmt: skip

HEAD = "apiVersion: rackcron/v1\nkind: TaskSchedule\nmetadata: {name: s1}\nspec:\n"


def schedule(spec_lines: str) -> str:
    """A schedule document whose spec body starts on line 5."""
    return HEAD + spec_lines


GOOD_SPEC = """\
  spec_type: cron
  spec: "0 2 * * 1"
  operation: {power_on: {}}
  targets: {racks: [{name: r1}]}
"""

# (id, content of s.yaml, line, column, message fragment, JSON path)
CASES = [
    ("yaml-syntax", "a: [1, 2\nb: 3\n", 2, 2, "YAML syntax", ""),
    ("tab-indent", "a:\n\tb: 1\n", 2, 1, "YAML syntax", ""),
    ("duplicate-key", HEAD + GOOD_SPEC + "  spec_type: interval\n", 9, 3, "duplicate key 'spec_type'", ""),
    ("unknown-tag", HEAD + GOOD_SPEC.replace('"0 2 * * 1"', '!cron "0 2 * * 1"'), 6, 9, "unsupported tag '!cron'", ""),
    ("python-tag", "!!python/object:os.system {}\n", 1, 1, "unsupported tag", ""),
    ("billion-laughs",
     "a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
     "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
     "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\n",
     1, 1, "expands to more than", ""),
    ("deep-nesting", "a: " + "[" * 70 + "]" * 70 + "\n", 1, 68, "nests deeper than", ""),
    ("not-a-mapping", "- a\n- b\n", 1, 1, "must be a mapping", "$"),
    ("api-version", "apiVersion: rackcron/v2\nkind: TaskSchedule\n", 1, 13, "apiVersion must be 'rackcron/v1'", "$.apiVersion"),
    ("unknown-kind", "apiVersion: rackcron/v1\nkind: Schedule\n", 2, 7, "unknown kind 'Schedule'", "$.kind"),
    ("typo-field", schedule(GOOD_SPEC + "  overlap_polcy: queue\n"), 9, 3,
     "unknown field 'overlap_polcy' (did you mean 'overlap_policy'?)", "$.spec.overlap_polcy"),
    ("unknown-metadata", HEAD.replace("{name: s1}", "{name: s1, owner: me}") + GOOD_SPEC, 3, 22,
     "unknown field 'owner'", "$.metadata.owner"),
    ("missing-operation", schedule(GOOD_SPEC.replace("  operation: {power_on: {}}\n", "")), 5, 3,
     "missing required field 'operation'", "$.spec"),
    ("wrong-type", schedule(GOOD_SPEC + "  enabled: sometimes\n"), 9, 12,
     "expected true or false, got text ('sometimes')", "$.spec.enabled"),
    ("bad-enum", schedule(GOOD_SPEC + "  overlap_policy: later\n"), 9, 19,
     "'later' is not one of: skip, queue", "$.spec.overlap_policy"),
    ("bad-spec-type", schedule(GOOD_SPEC.replace("spec_type: cron", "spec_type: weekly")), 5, 14,
     "'weekly' is not one of: interval, cron, one-time", "$.spec.spec_type"),
    ("two-operations", schedule(GOOD_SPEC.replace("{power_on: {}}", "{power_on: {}, power_off: {}}")), 7, 14,
     "set exactly one of: power_on, power_off", "$.spec.operation"),
    ("no-operation", schedule(GOOD_SPEC.replace("{power_on: {}}", "{}")), 7, 14,
     "set exactly one of", "$.spec.operation"),
    ("unknown-operation", schedule(GOOD_SPEC.replace("power_on", "power_cycle")), 7, 15,
     "unknown field 'power_cycle'", "$.spec.operation.power_cycle"),
    ("unknown-op-param", schedule(GOOD_SPEC.replace("{power_on: {}}", "{power_off: {force: true}}")), 7, 27,
     "unknown field 'force' (did you mean 'forced'?)", "$.spec.operation.power_off.force"),
    ("two-target-kinds", schedule(GOOD_SPEC.replace("{racks: [{name: r1}]}", "{racks: [{name: r1}], nvl_domains: [{name: nvl-a}]}")),
     8, 12, "set exactly one of: racks, components, nvl_domains", "$.spec.targets"),
    ("rack-two-ids", schedule(GOOD_SPEC.replace("{name: r1}", "{name: r1, external_id: EXT-R1}")), 8, 21,
     "set exactly one of: id, name, external_id", "$.spec.targets.racks[0]"),
    ("rack-bad-uuid", schedule(GOOD_SPEC.replace("{name: r1}", "{id: not-a-uuid}")), 8, 26,
     "'not-a-uuid' is not a UUID", "$.spec.targets.racks[0].id"),
    ("bad-component-type", schedule(GOOD_SPEC.replace("{name: r1}", "{name: r1, component_types: [GPU]}")), 8, 50,
     "'GPU' is not one of: COMPUTE, NVSWITCH, POWERSHELF, TORSWITCH, UMS, CDU (any case)", "$.spec.targets.racks[0].component_types[0]"),
    ("bad-name", HEAD.replace("{name: s1}", "{name: 'bad name!'}") + GOOD_SPEC, 3, 18,
     "'bad name!' is not a valid name: letters, digits, '.', '_' and '-'", "$.metadata.name"),
    ("label-not-text", HEAD.replace("{name: s1}", "{name: s1, labels: {tier: 1}}") + GOOD_SPEC, 3, 37,
     "expected text, got an integer (1)", "$.metadata.labels.tier"),
    ("negative-queue-timeout",
     schedule(GOOD_SPEC.replace("{power_on: {}}", "{power_on: {queue_options: {queue_timeout_seconds: -5}}}")),
     7, 65, "-5 is less than the minimum of 0", "$.spec.operation.power_on.queue_options.queue_timeout_seconds"),
    ("cron-out-of-range", schedule(GOOD_SPEC.replace('"0 2 * * 1"', '"61 2 * * 1"')), 6, 9,
     'minute field "61"', "$.spec.spec"),
    ("cron-never", schedule(GOOD_SPEC.replace('"0 2 * * 1"', '"0 0 30 2 *"')), 6, 9, "never", "$.spec.spec"),
    ("cron-fields", schedule(GOOD_SPEC.replace('"0 2 * * 1"', '"0 2 * *"')), 6, 9, "5 fields", "$.spec.spec"),
    ("interval-days", schedule(GOOD_SPEC.replace("spec_type: cron", "spec_type: interval").replace('"0 2 * * 1"', "1d")),
     6, 9, 'unknown unit "d"', "$.spec.spec"),
    ("interval-negative", schedule(GOOD_SPEC.replace("spec_type: cron", "spec_type: interval").replace('"0 2 * * 1"', '"-1h"')),
     6, 9, "must be positive", "$.spec.spec"),
    ("one-time-no-offset",
     schedule(GOOD_SPEC.replace("spec_type: cron", "spec_type: one-time").replace('"0 2 * * 1"', "2027-01-15T06:00:00")),
     6, 9, "explicit offset", "$.spec.spec"),
    ("unknown-timezone", schedule(GOOD_SPEC + "  timezone: Mars/Olympus_Mons\n"), 9, 13,
     "Mars/Olympus_Mons", "$.spec.timezone"),
    ("cron-tz-prefix", schedule(GOOD_SPEC.replace('"0 2 * * 1"', '"CRON_TZ=Nowhere/City 0 2 * * 1"')), 6, 9,
     "Nowhere/City", "$.spec.spec"),
    ("unknown-rack", schedule(GOOD_SPEC.replace("{name: r1}", "{name: r9}")), 8, 21,
     "rack r9 is not found", "$.spec.targets.racks[0]"),
    ("unknown-rack-external", schedule(GOOD_SPEC.replace("{name: r1}", "{name: r1}, {external_id: EXT-R9}")), 8, 33,
     "rack with external id EXT-R9 is not found", "$.spec.targets.racks[1]"),
    ("duplicate-rack", schedule(GOOD_SPEC.replace("{name: r1}", "{name: r1}, {external_id: EXT-R1}")), 8, 20,
     "duplicate rack", "$.spec.targets.racks"),
    ("unknown-component",
     schedule(GOOD_SPEC.replace("{racks: [{name: r1}]}", "{components: [{id: 00000000-0000-4000-8000-0000000000c9}]}")),
     8, 26, "component [id: 00000000-0000-4000-8000-0000000000c9] is not found", "$.spec.targets.components[0]"),
    ("ambiguous-component",
     schedule(GOOD_SPEC.replace("{racks: [{name: r1}]}", "{components: [{external: {id: dup-tag}}]}")),
     8, 26, 'component identifier "dup-tag" is ambiguous', "$.spec.targets.components[0]"),
    ("unknown-domain", schedule(GOOD_SPEC.replace("{racks: [{name: r1}]}", "{nvl_domains: [{name: nvl-z}]}")), 8, 27,
     "NVLink domain name nvl-z is not found", "$.spec.targets.nvl_domains[0]"),
    ("firmware-window",
     schedule(GOOD_SPEC.replace("{power_on: {}}",
                                "{upgrade_firmware: {start_time: '2027-01-02T00:00:00Z', end_time: '2027-01-01T00:00:00Z'}}")),
     7, 33, "end_time: must not be before start_time", "$.spec.operation.upgrade_firmware"),
    ("firmware-start-not-rfc3339",
     schedule(GOOD_SPEC.replace("{power_on: {}}", "{upgrade_firmware: {start_time: tomorrow}}")),
     7, 46, "tomorrow", "$.spec.operation.upgrade_firmware.start_time"),
    ("domain-unknown-rack",
     "apiVersion: rackcron/v1\nkind: NVLDomain\nmetadata: {name: nvl-b}\nspec:\n"
     "  id: 00000000-0000-4000-8000-0000000000d2\n  racks: [r1, r7]\n", 6, 15, "unknown rack 'r7'", "$.spec.racks[1]"),
    ("duplicate-rack-id",
     "apiVersion: rackcron/v1\nkind: Rack\nmetadata: {name: r3}\nspec:\n  id: 00000000-0000-4000-8000-000000000001\n",
     5, 7, "id '00000000-0000-4000-8000-000000000001' is already declared at", "$.spec.id"),
    ("bad-mac",
     "apiVersion: rackcron/v1\nkind: Rack\nmetadata: {name: r3}\nspec:\n  id: 00000000-0000-4000-8000-000000000003\n"
     "  components: [{id: 00000000-0000-4000-8000-0000000000c4, type: UMS, bmc_mac: '02:00:zz'}]\n",
     6, 79, "'02:00:zz' is not a MAC address", "$.spec.components[0].bmc_mac"),
    ("duplicate-id-in-one-rack",
     "apiVersion: rackcron/v1\nkind: Rack\nmetadata: {name: r3}\nspec:\n  id: 00000000-0000-4000-8000-000000000003\n"
     "  components:\n    - {id: 00000000-0000-4000-8000-0000000000c5, type: UMS}\n"
     "    - {id: 00000000-0000-4000-8000-0000000000c5, type: CDU}\n",
     8, 12, "id '00000000-0000-4000-8000-0000000000c5' is already declared at", "$.spec.components[1].id"),
    ("rule-id-not-uuid", schedule(GOOD_SPEC.replace("{power_on: {}}", "{power_on: {rule_id: r-1}}")), 7, 35,
     "'r-1' is not a UUID", "$.spec.operation.power_on.rule_id"),
    ("control-character", "a: 1\nb: \"x\x01y\"\n", 2, 6, "character U+0001 is not allowed", ""),
    ("rollout-count-past-the-limit", schedule(GOOD_SPEC + "  rollout: {max_in_flight: 1000000000}\n"),
     9, 28, "expected a whole number from 0 to 999999999 or a percentage", "$.spec.rollout.max_in_flight"),
    ("duplicate-rack-name",
     "apiVersion: rackcron/v1\nkind: Rack\nmetadata: {name: r1}\nspec:\n  id: 00000000-0000-4000-8000-000000000003\n",
     3, 18, "rack name 'r1' is already declared at", "$.metadata.name"),
]  # fmt: skip


def _tree(tmp_path: Path, content: str | bytes) -> Path:
    (tmp_path / "inventory.yaml").write_text(INVENTORY)
    target = tmp_path / "s.yaml"
    target.write_bytes(content if isinstance(content, bytes) else content.encode())
    return target


def test_the_corpus_is_large_enough() -> None:
    assert len(CASES) >= 30


@pytest.mark.parametrize(("content", "line", "column", "message", "path"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])  # fmt: skip
def test_broken_input_is_reported_where_it_is(
    tmp_path: Path, content: str, line: int, column: int, message: str, path: str
) -> None:
    target = _tree(tmp_path, content)
    result = validate_tree(tmp_path)
    assert [(d.file, d.line, d.column, d.path) for d in result.diagnostics] == [
        (str(target), line, column, path)
    ], [d.text() for d in result.diagnostics]
    assert message in result.diagnostics[0].message
    assert not result.ok


def test_the_inventory_alone_is_valid(tmp_path: Path) -> None:
    result = validate_tree(_tree(tmp_path, schedule(GOOD_SPEC)).parent)
    assert result.ok, [d.text() for d in result.diagnostics]
    assert [s.name for s in result.declared.schedules] == ["s1"]


def test_not_utf8_and_oversized_files(tmp_path: Path) -> None:
    _tree(tmp_path, b"a: \xff\xfe\n")
    (tmp_path / "big.yaml").write_bytes(b"#" * (MAX_FILE_BYTES + 1))
    messages = {Path(d.file).name: d.message for d in validate_tree(tmp_path).diagnostics}
    assert messages["s.yaml"].startswith("file is not UTF-8")
    assert messages["big.yaml"] == f"file is larger than {MAX_FILE_BYTES} bytes"


def test_every_problem_is_reported_at_once(tmp_path: Path) -> None:
    bad = schedule(GOOD_SPEC.replace("spec_type: cron", "spec_typ: cron") + "  enabled: 3\n")
    other = HEAD.replace("s1", "s2") + GOOD_SPEC.replace('"0 2 * * 1"', '"0 0 30 2 *"')
    _tree(tmp_path, bad + "---\n" + other)
    messages = [d.message for d in validate_tree(tmp_path).diagnostics]
    assert len(messages) == 4, messages  # unknown field, missing spec_type, type, never matches


def test_schema_errors_do_not_hide_the_other_fields_problems(tmp_path: Path) -> None:
    """One run reports every independent problem: an unknown field, a value of the wrong
    type, a bad time zone, a bad spec under it, an operation's two bad times, a target
    naming no rack, in one file; a rack with an unknown field is still declared (its
    schedules are judged against it), and nothing is reported twice or as a consequence
    of a field cut out (a freeze whose cron has the wrong type is not also "give cron")."""
    bad = (
        HEAD
        + """\
  spec_type: cron
  spec: "0 25 * * *"
  timezone: Mars/Olympus
  enabled: 3
  colour: blue
  operation: {upgrade_firmware: {start_time: soon, end_time: later}}
  targets: {racks: [{name: r1}, {name: r9}]}
---
apiVersion: rackcron/v1
kind: Rack
metadata: {name: r7}
spec: {id: 00000000-0000-4000-8000-000000000007, shelf: 2}
---
apiVersion: rackcron/v1
kind: TaskSchedule
metadata: {name: s2}
spec: {spec_type: interval, spec: 1h, operation: {power_on: {}}, targets: {racks: [{name: r7}]}}
---
apiVersion: rackcron/v1
kind: Freeze
metadata: {name: f1}
spec: {cron: [0, 1], duration: 1h}
"""
    )
    _tree(tmp_path, bad)
    result = validate_tree(tmp_path)
    found = sorted((d.line, d.path, d.message) for d in result.diagnostics)
    assert [(line, path) for line, path, _ in found] == [
        (6, "$.spec.spec"),  # hour 25, reported although the zone is bad too
        (7, "$.spec.timezone"),
        (8, "$.spec.enabled"),
        (9, "$.spec.colour"),
        (10, "$.spec.operation.upgrade_firmware.end_time"),
        (10, "$.spec.operation.upgrade_firmware.start_time"),
        (11, "$.spec.targets.racks[1]"),  # r9: no such rack
        (16, "$.spec.shelf"),
        (26, "$.spec.cron"),
    ], found
    assert "unknown field 'colour'" in found[3][2] and "expected true or false" in found[2][2]
    # Judged, never declared: only what is valid as written is.
    assert [r.name for r in result.declared.racks] == ["r1", "r2"]
    assert [s.name for s in result.declared.schedules] == ["s2"]
    assert result.declared.freezes == []


def test_an_object_carries_at_most_32_labels(tmp_path: Path) -> None:
    """A schedule's labels are copied into every task it submits: 50,000 of them cost
    5 MB a rack per firing. The schemas and the service's writes (an RPC's) refuse a 33rd;
    the service's own test covers its write paths."""
    from rackcron.domain.models import MAX_LABELS, check_labels
    from rackcron.errors import RackcronError

    labels = ", ".join(f"k{i}: v" for i in range(MAX_LABELS + 1))
    bad = HEAD.replace("metadata: {name: s1}", f"metadata: {{name: s1, labels: {{{labels}}}}}")
    _tree(tmp_path, bad + GOOD_SPEC)
    (d,) = validate_tree(tmp_path).diagnostics
    assert (d.line, d.path, d.message) == (3, "$.metadata.labels", "at most 32 entries, got 33")
    many = {f"k{i}": "v" for i in range(MAX_LABELS + 1)}
    with pytest.raises(RackcronError, match=r"management\.labels: at most 32 labels, got 33"):
        check_labels(many, "management.labels")
    check_labels(dict(list(many.items())[:MAX_LABELS]), "rack.labels")  # 32 are fine


def test_duplicate_schedule_names_across_files(tmp_path: Path) -> None:
    _tree(tmp_path, schedule(GOOD_SPEC))
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "t.yaml").write_text(schedule(GOOD_SPEC))
    (d,) = validate_tree(tmp_path).diagnostics  # b/t.yaml is read first
    assert (Path(d.file).name, d.line, d.column) == ("s.yaml", 3, 18)
    assert d.message == f"schedule name 's1' is already declared at {tmp_path / 'b' / 't.yaml'}:3"


def test_a_rename_names_another_schedule_the_tree_no_longer_declares(tmp_path: Path) -> None:
    def named(name: str, meta: str = "") -> str:
        head = HEAD.replace("{name: s1}", f"{{name: {name}{', ' + meta if meta else ''}}}")
        return "---\n" + head + GOOD_SPEC

    _tree(tmp_path, named("a", "renamed_from: a") + named("b", "renamed_from: x")
          + named("c", "renamed_from: x") + named("d", "renamed_from: b"))  # fmt: skip
    found = [(d.line, d.path, d.message) for d in validate_tree(tmp_path).diagnostics]
    assert found == [
        (4, "$.metadata.renamed_from", "renamed_from: the schedule's own name"),
        (22, "$.metadata.renamed_from", f"renamed_from 'x' is already declared at {tmp_path / 's.yaml'}:13"),
        (31, "$.metadata.renamed_from", f"renamed_from: schedule 'b' is still declared at {tmp_path / 's.yaml'}:13; a rename declares the new name only"),
    ]  # fmt: skip


def test_a_schedule_id_is_declared_once(tmp_path: Path) -> None:
    same = "  id: 00000000-0000-4000-8000-0000000000e1\n"
    _tree(tmp_path, "---\n" + schedule(GOOD_SPEC + same) + "---\n"
          + schedule(GOOD_SPEC + same).replace("s1", "s2"))  # fmt: skip
    (d,) = validate_tree(tmp_path).diagnostics
    assert (d.line, d.path) == (20, "$.spec.id")
    assert d.message.startswith("schedule id '00000000-0000-4000-8000-0000000000e1' is already")


def test_merge_keys_and_anchors_are_read(tmp_path: Path) -> None:
    content = schedule(GOOD_SPEC.replace(
        "{racks: [{name: r1}]}",
        "\n    racks:\n      - &r1 {name: r1, component_types: [COMPUTE]}\n      - {<<: *r1, name: r2}",
    ))  # fmt: skip
    result = validate_tree(_tree(tmp_path, content).parent)
    assert result.ok, [d.text() for d in result.diagnostics]
    (declared,) = result.declared.schedules
    assert [(r.name, r.component_types) for r in declared.operation.target_spec.racks] == [
        ("r1", ["COMPUTE"]), ("r2", ["COMPUTE"])
    ]  # fmt: skip


def test_cli_formats_and_exit_codes(tmp_path: Path) -> None:
    target = _tree(tmp_path, schedule(GOOD_SPEC.replace("{name: r1}", "{name: r9}")))
    text = run("validate", str(tmp_path))
    assert text.exit_code == 1
    assert (
        f"{target}:8:21: error: target_spec.racks[0]: resolve rack: rack r9 is not found"
        in text.output
    )
    assert "2 files, 4 documents: 1 error, 0 warnings" in text.output
    github = run("validate", str(tmp_path), "--format", "github")
    assert github.output.startswith(f"::error file={target},line=8,col=21::")
    report = json.loads(run("validate", str(tmp_path), "--format", "json").output)
    assert report["format_version"] == "1.1" and report["errors"] == 1
    assert report["diagnostics"][0]["path"] == "$.spec.targets.racks[0]"
    target.write_text(schedule(GOOD_SPEC))
    assert run("validate", str(tmp_path)).exit_code == 0
    missing = run("validate", str(tmp_path / "nope"))
    assert missing.exit_code == 2 and "no such file or directory" in missing.output


@pytest.mark.parametrize("revision", ["fleet", "fleet-v2"])
def test_examples_are_valid(revision: str) -> None:
    examples = Path(__file__).resolve().parents[2] / "examples" / revision
    result = validate_tree(examples)
    assert result.ok, [d.text() for d in result.diagnostics]
    assert len(result.declared.schedules) >= 9


def test_example_files_name_the_schema_of_their_kind() -> None:
    import re

    from rackcron.reconciler.schema import KINDS

    examples = Path(__file__).resolve().parents[2] / "examples"
    for file in sorted(examples.rglob("*.yaml")):
        text = file.read_text()
        modeline = re.match(r"# yaml-language-server: \$schema=(\S+)\n", text)
        assert modeline, f"{file} has no schema modeline"
        schema = (file.parent / modeline.group(1)).resolve()
        assert schema.is_file(), f"{file}: {schema} does not exist"
        kinds = set(re.findall(r"^kind: (\w+)$", text, re.MULTILINE))
        assert {f"{KINDS[k]}.schema.json" for k in kinds} == {schema.name}, file


def test_a_tree_without_documents_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "notes.yaml").write_text("# nothing yet\n")
    (d,) = validate_tree(tmp_path).diagnostics
    assert d.message == "no rackcron/v1 documents found"
    (tmp_path / "notes.yaml").unlink()
    assert not validate_tree(tmp_path).ok


@pytest.fixture(scope="module")
def applied_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite store holding the corpus inventory and one good schedule, applied once."""
    tree = tmp_path_factory.mktemp("good")
    _tree(tree, schedule(GOOD_SPEC))
    db = tree / "store.db"
    result = run("apply", str(tree), "--auto-approve", "--database-url", f"sqlite:///{db}")
    assert result.exit_code == 0, result.output
    # Close what the in-process CLI left open and fold the WAL into the file, so the
    # bytes only change if something writes.
    gc.collect()
    with closing(sqlite3.connect(db)) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return db


def _store_bytes(db: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in db.parent.glob(db.name + "*")}


@pytest.mark.slow
@pytest.mark.parametrize("content", [c[1] for c in CASES], ids=[c[0] for c in CASES])
def test_applying_broken_input_leaves_the_store_byte_for_byte_unchanged(
    tmp_path: Path, applied_store: Path, content: str
) -> None:
    before = _store_bytes(applied_store)
    _tree(tmp_path, content)
    url = f"sqlite:///{applied_store}"
    result = run("apply", str(tmp_path), "--auto-approve", "--database-url", url)
    assert result.exit_code == 1
    assert "Traceback" not in result.output
    assert _store_bytes(applied_store) == before
