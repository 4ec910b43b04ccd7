# SPDX-License-Identifier: BSD-3-Clause
"""The verdict per test that the plugins running other projects' own test
suites with Conveyor substituted print (pot_with_conveyor.py,
geomloss_with_conveyor.py): the summary lines the shell scripts read, a failed
test turned into an explained skip, and the rule that a run in which no test
called Conveyor fails (the substitution did not happen).

A verdict is (word, why): "conveyor" (passed, Conveyor called), "<project>-only"
(passed without it, or failing with the project alone), "deviation" (listed,
with its reason), "skipped" or "FAILED".
"""


def excuse(item, report, verdicts, verdict, why, prefix):
    """Records verdict and shows the failed test as skipped with prefix: why."""
    verdicts[item.nodeid] = (verdict, why)
    report.outcome = "skipped"
    report.longrepr = (str(item.fspath), 0, f"{prefix}: {why}")


def record(item, report, verdicts, project, alone_failure, deviations):
    """The verdict of a test's call phase (project: "POT", "GeomLoss"; its verdict
    word is "pot-only", "geomloss-only"). alone_failure(name, report, calls):
    (why) when the failure is one the project's tests have without Conveyor,
    else None; deviations: test name -> reason."""
    calls = getattr(item, "conveyor_calls", 0)
    name = item.nodeid.split("::")[-1]
    alone = alone_failure(name, report, calls) if report.failed else None
    if report.passed:
        verdicts[item.nodeid] = ("conveyor", f"{calls} calls") if calls else (f"{project.lower()}-only", "Conveyor not called")
    elif alone is not None:
        excuse(item, report, verdicts, f"{project.lower()}-only", alone, f"fails with {project} alone")
    elif report.failed and name in deviations:
        excuse(item, report, verdicts, "deviation", deviations[name], "deviation")
    elif report.failed:
        verdicts[item.nodeid] = ("FAILED", f"{calls} calls into Conveyor")
    elif report.skipped:
        verdicts[item.nodeid] = ("skipped", "")


def write_summary(terminalreporter, verdicts, heading, total_label, width):
    """One line per test, then "<total_label>: <verdict> <count>, ..."."""
    counts = {}
    write = terminalreporter.write_line
    write("")
    write(heading)
    for nodeid, (verdict, why) in sorted(verdicts.items()):
        counts[verdict] = counts.get(verdict, 0) + 1
        name = nodeid.split("::")[-1]
        write(f"  {verdict:{width}s} {name}  ({why})" if why else f"  {verdict:{width}s} {name}")
    write(f"{total_label}: " + ", ".join(f"{v} {counts[v]}" for v in sorted(counts)))


def fail_if_never_called(session, verdicts):
    if "conveyor" not in [v for v, _ in verdicts.values()] and session.exitstatus == 0:
        session.exitstatus = 1  # nothing reached Conveyor: the substitution did not happen
