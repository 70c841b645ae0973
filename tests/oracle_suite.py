"""Run fairmedfm 0.4.2's own test suite against fairmedfm_fast.

``python tests/oracle_suite.py [--package fairmedfm]`` downloads the fairmedfm 0.4.2 source
distribution with pip (into a temporary folder; nothing of it is kept or committed), takes its
``tests/`` folder, points its imports at ``fairmedfm_fast`` (``--package fairmedfm`` keeps the
oracle, to check the harness itself), runs it with pytest in a subprocess and prints one line per
test: ``nodeid outcome``.

The source distribution leaves out the tests' data file ``tests/fixtures/legacy_golden.json``
(FairMedFM's paper-code values). It is rebuilt here from the installed oracle's own trainer
functions (``fairmedfm.metrics.evaluate_binary``, ``organize_results``, ``evaluate_seg``) on fixed
random data, with the keys the tests read.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import xml.etree.ElementTree as ElementTree
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SDIST = "fairmedfm==0.4.2"


class Offline(RuntimeError):
    """The source distribution could not be downloaded."""


def fetch_tests(folder: Path) -> Path:
    """fairmedfm 0.4.2's ``tests/`` folder, extracted from its source distribution into ``folder``."""
    download = folder / "sdist"
    result = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                             "--disable-pip-version-check", "--quiet", SDIST, "-d", str(download)],
                            capture_output=True, text=True, timeout=300)
    archives = list(download.glob("fairmedfm-0.4.2.tar.gz")) if download.exists() else []
    if result.returncode != 0 or not archives:
        raise Offline(f"pip download {SDIST} failed: {(result.stderr or result.stdout).strip()[-300:]}")
    tests = folder / "tests"
    with tarfile.open(archives[0]) as archive:
        for member in archive.getmembers():
            parts = Path(member.name).parts
            if len(parts) > 2 and parts[1] == "tests" and member.isfile():
                target = tests.joinpath(*parts[2:])
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(archive.extractfile(member).read())
    if not any(tests.glob("test_*.py")):
        raise RuntimeError(f"the {SDIST} source distribution has no tests/test_*.py")
    return tests


# Imports of the oracle, pointed at another package. ``import fairmedfm`` becomes
# ``import PACKAGE as fairmedfm`` so that the test bodies keep their names; text in strings
# (messages, the program name) is left as the oracle wrote it.
_IMPORTS = (
    (re.compile(r"^(\s*)import fairmedfm as (\w+)", re.M), r"\1import {package} as \2"),
    (re.compile(r"^(\s*)import fairmedfm\s*$", re.M), r"\1import {package} as fairmedfm"),
    (re.compile(r"^(\s*)from fairmedfm(\.[\w.]+)? import", re.M), r"\1from {package}\2 import"),
    (re.compile(r'"-m", "fairmedfm"'), '"-m", "{package}"'),
)


def rewrite(tests: Path, package: str) -> None:
    """Point the suite's imports (and its ``python -m fairmedfm``) at ``package``."""
    for path in tests.glob("*.py"):
        text = path.read_text()
        for pattern, replacement in _IMPORTS:
            text = pattern.sub(replacement.format(package=package), text)
        path.write_text(text)


def golden() -> dict:
    """The data file the suite reads, rebuilt from the installed oracle on fixed random data."""
    import numpy as np
    from fairmedfm import metrics

    rng = np.random.default_rng(20240415)
    cases = {}
    for name, n_groups, n in (("cls_two_groups", 2, 240), ("cls_three_groups", 3, 300)):
        label = rng.integers(0, 2, n)
        group = rng.permutation(np.arange(n) % n_groups)
        prob = np.clip(0.25 + 0.35 * label + 0.1 * group / n_groups + 0.3 * rng.random(n), 0.001, 0.999).round(6)
        overall, subgroup = metrics.evaluate_binary(prob, label, group)
        cases[name] = {"prob": prob.tolist(), "label": label.tolist(), "group": group.tolist(), "overall": overall,
                       "subgroup": subgroup, "summary": metrics.organize_results(overall, subgroup)}
    group = (np.arange(120) % 2).tolist()
    dice = np.clip(0.7 + 0.1 * np.asarray(group) + 0.2 * rng.random(120), 0, 1).round(6).tolist()
    cases["seg_two_groups"] = {"dice": dice, "group": group, "summary": metrics.evaluate_seg(dice, group)}
    return json.loads(json.dumps(cases, default=float))


def run_suite(package: str = "fairmedfm_fast", folder: Path | None = None) -> dict[str, str]:
    """``{test id: "passed" | "failed" | "skipped"}`` of the oracle's suite run against ``package``."""
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(folder or scratch)
        tests = fetch_tests(folder)
        rewrite(tests, package)
        (tests / "fixtures").mkdir(exist_ok=True)
        (tests / "fixtures" / "legacy_golden.json").write_text(json.dumps(golden()))
        report = folder / "junit.xml"
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
        subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(tests),
                        "-o", "addopts=", f"--junitxml={report}", str(tests)],
                       cwd=tests, env=env, capture_output=True, text=True, timeout=900)
        outcomes = {}
        for case in ElementTree.parse(report).getroot().iter("testcase"):
            test_id = f"{case.get('classname', '').rsplit('.', 1)[-1]}::{case.get('name')}"
            kinds = {child.tag for child in case}
            outcomes[test_id] = ("failed" if kinds & {"failure", "error"} else
                                 "skipped" if "skipped" in kinds else "passed")
        return outcomes


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--package", default="fairmedfm_fast", help="the package the suite imports")
    args = parser.parse_args(argv)
    try:
        outcomes = run_suite(args.package)
    except Offline as exc:
        print(f"skipped: {exc}", file=sys.stderr)
        return 3
    for test_id, outcome in sorted(outcomes.items()):
        print(test_id, outcome)
    return 0


if __name__ == "__main__":
    sys.exit(main())
