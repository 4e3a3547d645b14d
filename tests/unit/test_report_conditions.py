"""Tables never average runs of different conditions: the split by condition, ``--where``,
and the refusal of the tables that do not split.

The runs are synthetic metrics documents whose CG delay encodes their condition, so that a
cell holding runs of another condition shows a different number.
"""

from __future__ import annotations

import copy
import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest

from cganalysis.cli import main
from cganalysis.errors import ConfigError
from cganalysis.metrics.docschema import validate_metrics
from cganalysis.metrics.runfacts import facts_from_meta
from cganalysis.report.conditions import (
    naming_labels,
    parse_where,
    run_labels,
    select_runs,
    split_conditions,
    varying_labels,
)
from cganalysis.report.style import Style, load_style
from cganalysis.report.tablefmt import tables_to_csv, write_table, write_tables
from cganalysis.report.tables import num2, tma_table2, tma_table2_tables
from tests.unit.test_metrics_runfacts import meta
from tests.unit.test_report_tables import GOLDEN, paper_metrics

REPO = Path(__file__).resolve().parents[2]

QUEUE = {"pfifo": "250p", "htb": "sfq63+pfifo250", "dualpi2": "1000p", "sqf": "250p", "drr": "250p"}
QDISC_CODE = {"pfifo": 0, "htb": 10, "dualpi2": 20, "sqf": 30, "drr": 40}


def role(delay_ms: float, *, packets: int = 1000, util: float = 0.4) -> dict[str, Any]:
    """Every key of the metrics schema's role block; only the delay differs by run."""
    return {
        "packets": packets,
        "delay_count": packets,
        "delay_mean_ms": delay_ms,
        "delay_std_ms": 1.0,
        "delay_var_ms2": 1.0,
        **{f"pct_delay_over_{t}ms": 0.0 for t in (10, 20, 50, 100)},
        "bitrate_mean_mbps": 10.0,
        "bitrate_q1_mbps": 9.0,
        "bitrate_median_mbps": 10.0,
        "bitrate_q3_mbps": 11.0,
        "loss_rate": 0.01,
        "utilisation": util,
    }


def metrics_doc(
    run: dict[str, Any],
    cg_delay_ms: float,
    *,
    capacity_mbps: float | None = 50.0,
    capacity_used_mbps: float = 50.0,
) -> dict[str, Any]:
    """A metrics document as `cganalysis metrics` writes it (the keys the tables read)."""
    roles = {"cg": role(cg_delay_ms), "competitor": role(40.0)}
    return {
        "schema_version": 1,
        "run": dict(run),
        "inputs": {
            "mode": "dual",
            "capacity": {
                "source": "configured" if capacity_mbps else "trace",
                "mbps": capacity_used_mbps,
                "configured_mbps": capacity_mbps,
            },
            "window_s": [0, 60],
            "window_effective_s": [0, 60],
            "bin_s": 0.5,
            "rules": ["cg=udp:30002", "competitor=tcp"],
            "schedule": [],
        },
        "roles": roles,
        "utilisation_total": 0.8,
        "fairness_ratio": 0.0,
        "jain_index": 1.0,
        "response_time_s": None,
        "recovery_time_s": None,
        "response_status": "not_applicable",
        "recovery_status": "not_applicable",
        "events": [],
        "phases": {
            "before_competitor": {"window_s": [0, 10], "roles": copy.deepcopy(roles)},
            "with_competitor": {"window_s": [10, 60], "roles": copy.deepcopy(roles)},
        },
        "warnings": [],
    }


def cg_delay(link: str, qdisc: str, cg: str, cca: str, rep: int) -> float:
    """A delay unique to the condition; the two repetitions differ by 2 ms."""
    return (
        (100.0 if link == "cellular" else 0.0)
        + (1000.0 if cg == "gtfrc" else 0.0)
        + QDISC_CODE[qdisc]
        + (1.0 if cca == "bbr" else 0.0)
        + 2.0 * (rep - 1)
    )


def extensions_docs() -> list[dict[str, Any]]:
    """As configs/campaigns/extensions.yaml: link x qdisc x cg x cca (no SQF or DRR over
    the cellular link), two repetitions. The labels are those its meta.json carries."""
    docs = []
    for link, qdiscs in (("fixed", list(QDISC_CODE)), ("cellular", ["pfifo", "htb", "dualpi2"])):
        for qdisc in qdiscs:
            for cg in ("scream", "gtfrc"):
                for cca in ("cubic", "bbr"):
                    for rep in (1, 2):
                        run = {
                            "run_id": f"extensions-{link}-{qdisc}-{cg}-{cca}-r{rep:02d}",
                            "campaign": "extensions",
                            "qdisc": qdisc,
                            "cca": cca,
                            "system": "cga-cg-scream" if cg == "scream" else "cga-cg-gtfrc",
                            "repetition": rep,
                            "queue": QUEUE[qdisc],
                            "link": link,
                            "cg": cg,
                        }
                        delay = cg_delay(link, qdisc, cg, cca, rep)
                        docs.append(metrics_doc(run, delay))
    return docs


@pytest.fixture(scope="module")
def style() -> Style:
    return load_style(REPO / "configs" / "plotting.yaml")


def test_the_split_finds_link_and_cg_not_queue() -> None:
    docs = extensions_docs()
    labels = [run_labels(d) for d in docs]
    varying = varying_labels(labels, ("qdisc", "cca"))
    # queue differs between qdiscs but is constant inside a cell; system follows cg.
    assert "queue" not in varying and {"link", "cg", "system"} == set(varying)
    assert naming_labels(labels, ("qdisc", "cca")) == ["link", "cg"]
    conds = split_conditions(docs, ("qdisc", "cca"))
    assert [c.describe() for c in conds] == [
        "link: cellular, cg: gtfrc",
        "link: cellular, cg: scream",
        "link: fixed, cg: gtfrc",
        "link: fixed, cg: scream",
    ]
    assert [len(c.run_ids) for c in conds] == [12, 12, 20, 20]
    for c in conds:
        assert all(f"-{c.labels['link']}-" in r and f"-{c.labels['cg']}-" in r for r in c.run_ids)
    # The order of the files does not change the conditions or their order.
    again = split_conditions(docs[::-1], ("qdisc", "cca"))
    assert [c.labels for c in again] == [c.labels for c in conds]


def test_a_set_of_one_condition_is_not_split() -> None:
    docs = [d for d in extensions_docs() if d["run"]["link"] == "fixed"]
    docs = [d for d in docs if d["run"]["cg"] == "scream"]
    (cond,) = split_conditions(docs, ("qdisc", "cca"))
    assert cond.labels == {} and cond.indices == tuple(range(len(docs)))


def test_extensions_render_four_tables_without_mixing(style: Style, tmp_path: Path) -> None:
    tables = tma_table2_tables(extensions_docs(), style=style)
    assert len(tables) == 4
    five = ["Droptail", "HTB", "L4S", "SQF", "DRR"]
    for table in tables:
        link, cg = dict(table.condition)["link"], dict(table.condition)["cg"]
        assert table.caption.endswith(f"(link: {link}, cg: {cg})")
        qdiscs = [label for label, _ in table.header[0]]
        assert qdiscs == (five if link == "fixed" else five[:3])
        assert ("five" if link == "fixed" else "three") in table.caption
        # Avg Latency of the CG block: the mean of this condition's two repetitions only.
        order = ["pfifo", "htb", "dualpi2", "sqf", "drr"][: len(qdiscs)]
        expected = [
            f"{num2(cg_delay(link, q, cg, cca, 1) + 1.0)} ms"
            for q in order
            for cca in ("cubic", "bbr")
        ]
        assert list(table.rows[0].cells) == expected
    # Mixing would have shown something else: the mean of every pfifo/cubic run.
    pooled = [
        d["roles"]["cg"]["delay_mean_ms"]
        for d in extensions_docs()
        if (d["run"]["qdisc"], d["run"]["cca"]) == ("pfifo", "cubic")
    ]
    assert all(t.rows[0].cells[0] != f"{num2(sum(pooled) / len(pooled))} ms" for t in tables)

    paths = write_tables(tables, tmp_path / "tma_table2")
    assert [p.name for p in paths] == [
        "tma_table2.csv",
        "tma_table2.md",
        "tma_table2.tex",
        "tma_table2.html",
    ]
    rows = list(csv.reader(io.StringIO(paths[0].read_text(encoding="utf-8"))))
    data = [r for r in rows if r[0] in ("fixed", "cellular")]
    assert len(data) == 4 * 25  # 25 rows per table, each led by its condition
    assert all(r[1] in ("scream", "gtfrc") for r in data)
    # A row stands alone: condition, block, row label, then that table's cells.
    first = next(r for r in data if r[:4] == ["fixed", "scream", "CG Traffic", "Avg Latency"])
    assert first[4] == f"{num2(cg_delay('fixed', 'pfifo', 'scream', 'cubic', 1) + 1)} ms"
    assert len(first) == 4 + 10
    headers = [r for r in rows if r[0] not in ("fixed", "cellular")]
    assert len(headers) == 4 * 2 and headers[1][:4] == ["link", "cg", "", ""]
    md = paths[1].read_text(encoding="utf-8")
    tex = paths[2].read_text(encoding="utf-8")
    assert md.count("**Cloud gaming vs TCP") == 4 and "(link: fixed, cg: gtfrc)" in md
    assert tex.count(r"\begin{table}") == 4 and tex.count(r"\end{tabular}") == 4


def tma2024_docs() -> list[dict[str, Any]]:
    """The paper's Table II numbers as metrics documents (tests.unit.test_report_tables)
    with the labels a tma2024 meta.json gives: queue follows qdisc, link is the same for
    every run; neither may split the table."""
    roles, runs = paper_metrics()
    docs = []
    for run in runs.iter_rows(named=True):
        q, c = run["qdisc"], run["cca"]
        mine = roles.filter(roles["run_id"] == run["run_id"])
        doc = metrics_doc(
            {
                "run_id": run["run_id"],
                "qdisc": q,
                "cca": c,
                "queue": QUEUE[q],
                "system": "cga-cg-scream",
                "link": "fixed",
            },
            0.0,
        )
        for r in mine.iter_rows(named=True):
            doc["roles"][r["role"]] = {k: v for k, v in r.items() if k in role(0.0)}
        doc["utilisation_total"] = run["utilisation_total"]
        del doc["phases"]
        docs.append(doc)
    return docs


def test_one_condition_gives_the_table_as_before(style: Style, tmp_path: Path) -> None:
    # The golden files were written before tables knew conditions.
    tables = tma_table2_tables(
        tma2024_docs(), style=style, ccas=("cubic", "bbr2"), paper_labels=True
    )
    assert len(tables) == 1 and tables[0].condition == ()
    paths = write_tables(tables, tmp_path / "t")
    for path in paths:
        golden = GOLDEN / f"tma_table2{path.suffix}"
        assert path.read_text(encoding="utf-8") == golden.read_text(encoding="utf-8"), path
    # write_table (one table) is the same thing.
    roles, runs = paper_metrics()
    one = tma_table2(roles, runs, style=style, ccas=("cubic", "bbr2"), paper_labels=True)
    assert tables_to_csv([one]) == paths[0].read_text(encoding="utf-8")
    assert [p.read_text() for p in write_table(one, tmp_path / "u")] == [
        p.read_text() for p in paths
    ]


def write_docs(folder: Path, docs: list[dict[str, Any]]) -> list[str]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for doc in docs:
        validate_metrics(doc)  # what `cganalysis tables` checks on reading
        path = folder / f"{doc['run']['run_id']}.json"
        path.write_text(json.dumps(doc), encoding="utf-8")
        paths.append(str(path))
    return paths


def test_where_keeps_the_runs_of_a_condition(tmp_path: Path) -> None:
    files = write_docs(tmp_path / "m", extensions_docs())
    stem = tmp_path / "out" / "t2"
    where = ["--where", "link=fixed", "--where", "cg=gtfrc"]
    assert main(["tables", "tma-table2", *files, "-o", str(stem), *where]) == 0
    rows = list(csv.reader(stem.with_suffix(".csv").open(encoding="utf-8")))
    # One condition left: the table as before, no condition columns, five qdiscs.
    assert rows[0][2:] == [q for q in ("Droptail", "HTB", "L4S", "SQF", "DRR") for _ in (1, 2)]
    assert rows[2][3] == f"{num2(cg_delay('fixed', 'pfifo', 'gtfrc', 'bbr', 1) + 1)} ms"
    # A key given twice accepts either value; other keys must match too.
    kept = select_runs(extensions_docs(), parse_where(["qdisc=sqf", "qdisc=drr", "cca=bbr"]))
    assert sorted({(d["run"]["qdisc"], d["run"]["cca"]) for d in kept}) == [
        ("drr", "bbr"),
        ("sqf", "bbr"),
    ]
    assert len(kept) == 2 * 2 * 2  # cg x repetitions, fixed link only


@pytest.mark.parametrize(
    ("where", "says"),
    [
        (["lnk=fixed"], ["lnk", "link"]),  # unknown key: named, and the known ones listed
        (["link=satellite"], ["satellite", "cellular, fixed"]),
        (["link"], ["KEY=VALUE"]),
        (["link=cellular", "qdisc=sqf"], ["no run has all"]),
    ],
)
def test_where_errors_name_what_is_wrong(where: list[str], says: list[str]) -> None:
    with pytest.raises(ConfigError) as err:
        select_runs(extensions_docs(), parse_where(where))
    for text in says:
        assert text in str(err.value)


def test_where_error_through_the_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = write_docs(tmp_path / "m", extensions_docs()[:4])
    stem = tmp_path / "t"
    assert main(["tables", "tma-table2", *files, "-o", str(stem), "--where", "cg=x"]) == 2
    assert "--where cg=x" in capsys.readouterr().err
    assert not stem.with_suffix(".csv").exists()


def table1_docs() -> list[dict[str, Any]]:
    return [
        metrics_doc(
            {"run_id": f"c-{link}-{system}", "system": system, "link": link, "qdisc": "pfifo"},
            10.0 if link == "fixed" else 90.0,
        )
        for link in ("fixed", "cellular")
        for system in ("cga-cg-none", "cga-cg-scream")
    ]


def test_tma_table1_splits_its_conditions(tmp_path: Path) -> None:
    """Runs that differ in another label than Table I's columns (a link, a trace's scale)
    give one table each, named by their condition, never one averaged cell."""
    files = write_docs(tmp_path / "m", table1_docs())
    stem = tmp_path / "t1"
    assert main(["tables", "tma-table1", *files, "-o", str(stem)]) == 0
    rows = list(csv.reader(stem.with_suffix(".csv").open(encoding="utf-8")))
    assert ["cellular", "Average Latency", "90ms", "90ms"] in rows
    assert ["fixed", "Average Latency", "10ms", "10ms"] in rows
    assert "(link: fixed)" in stem.with_suffix(".md").read_text(encoding="utf-8")
    # One condition: one table, its cells from that link's runs only, no condition column.
    assert main(["tables", "tma-table1", *files, "-o", str(stem), "--where", "link=fixed"]) == 0
    rows = list(csv.reader(stem.with_suffix(".csv").open(encoding="utf-8")))
    assert rows[1] == ["Average Latency", "10ms", "10ms"]


def xu_docs(extra: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """2 capacities x 2 queues x 2 CCAs; ``capacity`` is the campaign's factor label, tied
    to capacity_mbps (a cell key); ``extra`` labels on every run."""
    extra = extra or {}
    docs = []
    for cap in (15, 25):
        for queue in ("0.5x", "2x"):
            for cca in ("cubic", "bbr"):
                run = {
                    "run_id": "-".join(["xu", str(cap), queue, cca, *extra.values()]),
                    "qdisc": "pfifo",
                    "cca": cca,
                    "queue": queue,
                    "capacity": str(cap),
                    **extra,
                }
                docs.append(metrics_doc(run, 10.0, capacity_mbps=float(cap)))
    return docs


def test_xu_tables_refuse_to_mix_conditions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    clean = write_docs(tmp_path / "clean", xu_docs())
    for kind in ("xu-delay-without", "xu-loss-with"):
        # The capacity label follows the rows and the CCAs are pooled on purpose (Table 2).
        assert main(["tables", kind, *clean, "-o", str(tmp_path / kind)]) == 0
    mixed = xu_docs({"link": "fixed"}) + xu_docs({"link": "cellular"})
    files = write_docs(tmp_path / "mixed", mixed)
    for kind in ("xu-delay-without", "xu-loss-with"):
        assert main(["tables", kind, *files, "-o", str(tmp_path / f"m-{kind}")]) == 2
        assert "link (cellular, fixed)" in capsys.readouterr().err
    where = ["--where", "link=cellular"]
    assert main(["tables", "xu-delay-with", *files, "-o", str(tmp_path / "w"), *where]) == 0


def test_meta_labels_reach_the_metrics_run_section() -> None:
    m = meta(link="cellular", labels={"qdisc": "htb", "link": "cellular", "cg": "gtfrc"})
    facts = facts_from_meta(m, Path())
    assert facts.labels["link"] == "cellular" and facts.labels["cg"] == "gtfrc"
    assert list(facts.labels)[:5] == ["run_id", "campaign", "qdisc", "cca", "repetition"]
    # An older meta.json (no `labels`): the standard labels, as before.
    assert "link" not in facts_from_meta(meta(link="cellular"), Path()).labels
    # The top level wins a clash; labels must be strings or numbers.
    assert facts_from_meta(meta(labels={"qdisc": "x"}), Path()).labels["qdisc"] == "htb"
    with pytest.raises(ConfigError, match=r"key labels\.link"):
        facts_from_meta(meta(labels={"link": ["a"]}), Path())


def test_the_style_names_every_qdisc_of_the_extensions_campaign(style: Style) -> None:
    from cganalysis.experiment.campaign import load_campaign

    # The runs' qdisc labels (a level may set its own, as htbtrace sets htb).
    campaign = load_campaign(REPO / "configs/campaigns/extensions.yaml")
    for qdisc in {str(r.config.all_labels()["qdisc"]) for r in campaign.runs}:
        assert qdisc in style.entries["qdisc"], f"qdisc.{qdisc} missing from plotting.yaml"
