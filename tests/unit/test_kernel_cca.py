"""BBRv2/v3 from a user's kernel tree: a run file's ``bbr2``/``bbr3`` under the kernel's own
name, refused in one line (on the host, before the sim kernel boots) where the kernel's
build recorded that it lacks it; and scripts/build-uml.sh's handling of a tree
(``--dry-run``: name, identity, options, congestion controls), on small trees made here:
no kernel is built or booted."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import yaml

from cganalysis.errors import ConfigError
from cganalysis.experiment.config import parse_run
from cganalysis.testbed import ccaname
from cganalysis.testbed.uml import config as umlconf
from tests.conftest import REPO

MAINLINE = {"bbr": 1}


def test_a_versioned_bbr_takes_the_kernels_name_for_it() -> None:
    v3 = ["reno", "cubic", "bbr"]
    assert ccaname.kernel_cca("bbr3", v3, ccaname.bbr_versions(v3, "3\n")) == "bbr"
    assert ccaname.kernel_cca("bbr", v3, {"bbr": 3}) == "bbr"
    assert ccaname.kernel_cca("bbr3", v3, ccaname.bbr_versions(v3, "")) is None  # mainline
    assert ccaname.kernel_cca("bbr1", v3, MAINLINE) == "bbr"
    v2alpha = ["reno", "cubic", "bbr", "bbr2"]
    versions = ccaname.bbr_versions(v2alpha, None)
    assert versions == {"bbr": 1, "bbr2": 2}
    assert ccaname.kernel_cca("bbr2", v2alpha, versions) == "bbr2"
    assert ccaname.kernel_cca("bbr3", v2alpha, versions) is None
    assert ccaname.kernel_cca("cubic", v2alpha, versions) == "cubic"
    assert ccaname.parse_bbr_versions("bbr=3 bbr2=2") == {"bbr": 3, "bbr2": 2}


def test_what_a_kernels_build_recorded_decides_on_the_host() -> None:
    info = {"release": "7.3.4", "source": "tree /src/linux none"}
    assert ccaname.recorded_refusal("run.yaml", "bbr3", "k", info) is None
    # Debian's mainline source, built before .info recorded the list: its bbr is v1.
    debian = {"release": "7.3.4", "source": "linux-source-7.3 7.3.4-1~bpo13+1 trixie-backports"}
    assert "its bbr is v1" in str(ccaname.recorded_refusal("run.yaml", "bbr3", "k", debian))
    assert ccaname.recorded_refusal("run.yaml", "bbr", "k", debian) is None
    assert ccaname.recorded_refusal("run.yaml", "vegas", "k", debian) is None
    recorded = {**info, "tcp_available_congestion_control": "bbr cubic reno", "tcp_bbr": "bbr=3"}
    assert ccaname.recorded_refusal("run.yaml", "bbr3", "k", recorded) is None
    assert ccaname.recorded_refusal("run.yaml", "bbr2", "k", recorded) is not None


def _install(built: Path, name: str, ccs: str, bbr: str) -> None:
    built.mkdir(exist_ok=True)
    (built / name).write_bytes(b"not a kernel: never run here")
    (built / f"{name}.info").write_text(
        f"release 7.3.4\nsource tree /src/{name} none\nkey 0\n"
        f"tcp_available_congestion_control {ccs}\ntcp_bbr {bbr}\n"
    )


def _sim_run(tmp_path: Path, kernel: str, cca: str) -> tuple[Path, object]:
    bed = tmp_path / "sim-tree.yaml"
    bed.write_text(yaml.safe_dump({"backend": "sim", "sim": {"kernel": kernel}}))
    doc = yaml.safe_load((REPO / "configs" / "runs" / "quick-sim-dualpi2.yaml").read_text())
    doc["testbed"] = str(bed)
    doc["competitor"]["cca"] = cca
    return bed, parse_run(doc, "drop-tail-bbr.yaml", REPO / "configs" / "runs")


@pytest.mark.parametrize("cca", ["bbr2", "bbr3"])
def test_a_sim_run_asking_for_a_bbr_its_kernel_lacks_is_refused_in_one_line_before_boot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cca: str
) -> None:
    from cganalysis.experiment.insim import run_in_sim
    from cganalysis.experiment.plan import RunOptions

    built = tmp_path / "uml"
    _install(built, "linux-7.3.4+mainline", "bbr cubic dctcp reno", "bbr=1")
    monkeypatch.setattr(umlconf, "BUILT", built)
    monkeypatch.delenv("CGA_SIM_KERNEL", raising=False)
    _, cfg = _sim_run(tmp_path, "linux-7.3.4+mainline", cca)
    with pytest.raises(ConfigError) as e:
        run_in_sim("experiment", cfg, tmp_path / "run", RunOptions(run_id="run"))  # type: ignore[arg-type]
    line = str(e.value)
    assert "\n" not in line
    assert line.startswith(f"drop-tail-bbr.yaml: key competitor.cca: '{cca}' is not offered")
    assert "linux-7.3.4+mainline" in line and "bbr is v1" in line
    assert "CGA_UML_TREE" in line
    assert not (tmp_path / "run").exists()


def _tree(root: Path, *, bbr_version: int | None, bbr2: bool) -> Path:
    """A kernel source tree's few files build-uml.sh reads (no code)."""
    (root / "arch" / "um").mkdir(parents=True)
    (root / "net" / "ipv4").mkdir(parents=True)
    (root / "Makefile").write_text(
        "# SPDX-License-Identifier: GPL-2.0\nVERSION = 6\nPATCHLEVEL = 4\nSUBLEVEL = 0\n"
        "EXTRAVERSION = -rc1\nNAME = Hurr durr I'ma ninja sloth\n"
    )
    kconfig = "config TCP_CONG_CUBIC\n\ttristate\nconfig TCP_CONG_BBR\n\ttristate\n"
    make = "obj-$(CONFIG_TCP_CONG_BBR) += tcp_bbr.o\nobj-$(CONFIG_TCP_CONG_CUBIC) += tcp_cubic.o\n"
    make += "obj-$(CONFIG_TCP_CONG_VEGAS) += tcp_vegas.o\n"
    define = f"#define BBR_VERSION\t\t{bbr_version}\n" if bbr_version else ""
    (root / "net/ipv4/tcp_bbr.c").write_text(f'{define}static struct x = {{\n\t.name\t\t= "bbr",\n')
    (root / "net/ipv4/tcp_cubic.c").write_text('\t.name\t\t= "cubic",\n')
    (root / "net/ipv4/tcp_vegas.c").write_text('\t.name\t\t= "vegas",\n')
    if bbr2:
        kconfig += "config TCP_CONG_BBR2\n\ttristate\n"
        make += "obj-$(CONFIG_TCP_CONG_BBR2) += tcp_bbr2.o\n"
        (root / "net/ipv4/tcp_bbr2.c").write_text('\t.name\t\t= "bbr2",\n')
    (root / "net/ipv4/Kconfig").write_text(kconfig)
    (root / "net/ipv4/Makefile").write_text(make)
    return root


def _dry_run(tree: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CGA_UML_TREE": str(tree), "CGA_UML_DEST": "/opt/uml-test"}
    return subprocess.run(
        ["bash", str(REPO / "scripts" / "build-uml.sh"), "--dry-run", *args],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )


def _facts(out: str) -> dict[str, str]:
    return dict(line.partition(" ")[::2] for line in out.splitlines())


def test_build_uml_names_a_v3_tree_and_records_its_commit(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "google bbr", bbr_version=3, bbr2=False)
    git = ["git", "-C", str(tree), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git[:3], "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "tree"], check=True)
    commit = subprocess.run(
        [*git[:3], "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    done = _dry_run(tree)
    assert done.returncode == 0, done.stderr
    facts = _facts(done.stdout)
    assert facts["name"] == "linux-6.4.0-rc1+google-bbr"
    assert facts["install"] == "/opt/uml-test/linux-6.4.0-rc1+google-bbr"
    assert facts["source"] == f"tree {tree} {commit}"
    assert facts["extra_options"] == "TCP_CONG_BBR"
    # scripts/uml.config builds bbr and cubic in, not vegas.
    assert facts["tcp_available_congestion_control"] == "bbr cubic reno"
    assert facts["tcp_bbr"] == "bbr=3"
    assert facts["set_default"] == "no"
    assert _facts(_dry_run(tree, "--set-default").stdout)["set_default"] == "yes"
    # A changed tracked file is another source: another key.
    (tree / "net/ipv4/tcp_vegas.c").write_text("changed\n")
    changed = _facts(_dry_run(tree).stdout)
    assert changed["source"] == f"tree {tree} {commit}-dirty"
    assert changed["key"] != facts["key"]


def test_build_uml_builds_a_v2alpha_trees_bbr2_beside_bbr(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "v2alpha", bbr_version=None, bbr2=True)
    facts = _facts(_dry_run(tree).stdout)
    assert facts["source"] == f"tree {tree} not-a-git-tree"
    assert facts["extra_options"] == "TCP_CONG_BBR TCP_CONG_BBR2"
    assert facts["tcp_available_congestion_control"] == "bbr bbr2 cubic reno"
    assert facts["tcp_bbr"] == "bbr=1 bbr2=2"


def test_build_uml_reads_a_tree_with_bbrv2_beside_bbrv3(tmp_path: Path) -> None:
    """Google's v2alpha tcp_bbr2.c added to a v3 tree: bbr is v3, bbr2 is v2, and a run
    file's bbr2 and bbr3 each find theirs (the tree of configs/testbeds/sim-bbr2.yaml)."""
    tree = _tree(tmp_path / "google-bbr-v2", bbr_version=3, bbr2=True)
    facts = _facts(_dry_run(tree).stdout)
    assert facts["extra_options"] == "TCP_CONG_BBR TCP_CONG_BBR2"
    assert facts["tcp_available_congestion_control"] == "bbr bbr2 cubic reno"
    assert facts["tcp_bbr"] == "bbr=3 bbr2=2"
    available = facts["tcp_available_congestion_control"].split()
    versions = ccaname.parse_bbr_versions(facts["tcp_bbr"])
    assert ccaname.kernel_cca("bbr2", available, versions) == "bbr2"
    assert ccaname.kernel_cca("bbr3", available, versions) == "bbr"
    assert ccaname.kernel_cca("bbr1", available, versions) is None
    info = {"tcp_available_congestion_control": " ".join(available), "tcp_bbr": facts["tcp_bbr"]}
    assert ccaname.recorded_refusal("run.yaml", "bbr2", "k", info) is None
    assert "bbr is v3, bbr2 is v2" in str(ccaname.recorded_refusal("run.yaml", "bbr1", "k", info))


def test_build_uml_refuses_what_is_not_a_clean_uml_tree(tmp_path: Path) -> None:
    done = _dry_run(tmp_path)
    assert done.returncode == 1
    assert done.stderr.strip().endswith("not a kernel source tree (no Makefile, net/ipv4/Kconfig)")
    tree = _tree(tmp_path / "t", bbr_version=3, bbr2=False)
    (tree / ".config").write_text("CONFIG_UML=y\n")
    done = _dry_run(tree)
    assert done.returncode == 1 and "mrproper" in done.stderr
    assert _dry_run(Path("relative")).stderr.count("\n") == 1


def test_the_plan_reads_this_machines_kernel_and_refuses_bbr3_on_mainline(
    tmp_path: Path,
) -> None:
    from cganalysis.experiment.plan import _kernel_cca
    from cganalysis.testbed.shared.hosts import NetnsHost, TestbedError

    here = NetnsHost("this host", None, tmp_path)
    doc = yaml.safe_load((REPO / "configs" / "runs" / "quick-pfifo.yaml").read_text())
    doc["competitor"]["cca"] = "reno"  # always built in
    assert _kernel_cca(parse_run(doc, "quick-reno.yaml", REPO / "configs" / "runs"), here) == "reno"
    doc["competitor"]["cca"] = "bbr3"
    cfg = parse_run(doc, "quick-bbr3.yaml", REPO / "configs" / "runs")
    version = Path(ccaname.BBR_VERSION_FILE)
    if version.is_file() and version.read_text().strip() == "3":  # a BBRv3 host kernel
        assert _kernel_cca(cfg, here) == "bbr"
        return
    with pytest.raises(TestbedError) as e:
        _kernel_cca(cfg, here)
    assert str(e.value).startswith(
        "quick-bbr3.yaml: key competitor.cca: 'bbr3' is not offered by the kernel of this host"
    )
