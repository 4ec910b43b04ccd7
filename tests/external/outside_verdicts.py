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
