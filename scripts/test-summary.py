#!/usr/bin/env python3
"""Summarises the Surefire reports of every module: tests per suite, and fails on any skipped test
(a skipped backend is a broken promise, not a pass)."""
import glob
import sys
import xml.etree.ElementTree as ET

rows = []
totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
for path in sorted(glob.glob("*/target/surefire-reports*/TEST-*.xml")):
    suite = ET.parse(path).getroot()
    module, reports = path.split("/")[0], path.split("/")[2]
    run = "external" if "external" in reports else "default"
    counts = {k: int(suite.get(k, 0)) for k in totals}
    for k in totals:
        totals[k] += counts[k]
    rows.append((module, run, suite.get("name").rsplit(".", 1)[-1], counts, float(suite.get("time", 0))))

print()
print(f"{'module':<16} {'run':<9} {'suite':<44} {'tests':>5} {'fail':>4} {'err':>4} {'skip':>4} {'time s':>7}")
for module, run, name, c, t in rows:
    print(f"{module:<16} {run:<9} {name:<44} {c['tests']:>5} {c['failures']:>4} {c['errors']:>4} {c['skipped']:>4} {t:>7.1f}")
passed = totals["tests"] - totals["failures"] - totals["errors"] - totals["skipped"]
print()
print(f"{passed} passed, {totals['failures'] + totals['errors']} failed, {totals['skipped']} skipped")
if totals["skipped"] or totals["failures"] or totals["errors"] or not rows:
    print("test-summary: every test must run and pass; none may be skipped", file=sys.stderr)
    sys.exit(1)
