#!/usr/bin/env python3
"""A scorer that loops over stdin: one case (its JSON) per line in, one verdict line per case out.

The cases are sums, {"id": "s1", "question": "12+30", "target": "42"}. The same script runs under
`--evaluator exec` (one case on stdin, then its end: the loop runs once and the process exits) and under
`--evaluator exec --serve` (the worker keeps it running and writes a line per case). Under --serve, print
anything but the answer to stderr, or as a line that does not start with '{'.
"""
import json
import sys

for line in sys.stdin:
    case = json.loads(line)
    a, b = case["question"].split("+")
    answer = str(int(a) + int(b))
    verdict = "pass" if answer == case["target"] else "fail"
    # "id" is optional: when given, Tally checks the answer is this case's.
    print(json.dumps({"id": case["id"], "verdict": verdict, "answer": answer}), flush=True)
