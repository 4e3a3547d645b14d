"""The README is the front door: its two commands are the ones CI and the fresh-install
check run, and it links every page of the documentation."""

from __future__ import annotations

import re

from tests.conftest import REPO

README = (REPO / "README.md").read_text(encoding="utf-8")


def _readme_commands() -> list[str]:
    """The command lines of the README's first shell block (comments left out)."""
    block = re.search(r"```sh\n(.*?)```", README, re.S)
    assert block, "README.md has no ```sh block"
    return [ln for ln in block.group(1).splitlines() if ln.strip() and not ln.startswith("#")]


def test_the_two_commands_are_what_ci_and_the_fresh_install_check_run() -> None:
    main_job, tests = _readme_commands()
    assert main_job == "bash scripts/install.sh && .venv/bin/snakemake --cores 4"
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert ci[-1] == tests, f".ci/run runs {ci[-1]!r}, the README says {tests!r}"
    fresh = (REPO / "scripts" / "check-fresh-install.sh").read_text(encoding="utf-8")
    assert f'inside "{tests}"' in fresh, "check-fresh-install.sh runs another test command"
    assert f'inside "{main_job} ' in fresh, "check-fresh-install.sh runs another main job"


def test_every_page_of_the_documentation_is_linked_from_the_readme() -> None:
    pages = [p.relative_to(REPO).as_posix() for p in sorted((REPO / "docs").glob("*.md"))]
    pages.append("configs/README.md")
    missing = [p for p in pages if f"]({p})" not in README]
    assert not missing, f"README.md links none of: {', '.join(missing)}"
