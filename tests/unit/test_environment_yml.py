"""environment.yml gives conda users the locked environment: the Python of a lock that
exists, that lock hash-checked, and Rust as new as the workspace needs."""

from __future__ import annotations

import re
import tomllib

import yaml

from tests.conftest import REPO


def test_environment_yml_installs_the_lock_of_its_python() -> None:
    env = yaml.safe_load((REPO / "environment.yml").read_text(encoding="utf-8"))
    deps = env["dependencies"]
    (python,) = [d for d in deps if isinstance(d, str) and d.startswith("python=")]
    version = python.removeprefix("python=")
    (pip,) = [d["pip"] for d in deps if isinstance(d, dict)]
    assert pip == ["--require-hashes", f"-r requirements/python{version}.txt"]
    lock = (REPO / f"requirements/python{version}.txt").read_text(encoding="utf-8")
    assert re.search(r"^dvc-ssh==", lock, re.M)  # the SSH remote is in the lock


def test_environment_yml_rust_is_the_workspace_minimum() -> None:
    env = yaml.safe_load((REPO / "environment.yml").read_text(encoding="utf-8"))
    cargo = tomllib.loads((REPO / "Cargo.toml").read_text(encoding="utf-8"))
    minimum = cargo["workspace"]["package"]["rust-version"]
    assert f"rust>={minimum}" in env["dependencies"]
