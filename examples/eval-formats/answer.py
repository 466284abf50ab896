#!/usr/bin/env python3
"""A stand-in for a model, for Tally's exec evaluator: reads one case (JSON on stdin, as Tally reads it from
any of the formats in this folder), "answers" its arithmetic question deterministically, judges the answer
against the case's target (or, for a promptfoo test without one, its equals/contains assertions) and prints
one verdict line: {"verdict": "pass" | "fail", "score": 0 | 1, "answer": "..."}.

The stand-in has one planted weakness, so that a run has failures to show: it drops the sign of a negative
result (29 - 32 -> "3"). With --scorer, Tally's scorers judge the "answer" instead of this verdict.
"""
import json
import re
import sys

QUESTION = re.compile(r"(-?\d+)\s*([-+*/×÷x])\s*(-?\d+)")


def question_of(case):
    """The question's text: the input string, the last user message, or a promptfoo var."""
    value = case.get("input", case.get("question"))
    if isinstance(value, list):
        users = [m.get("content") for m in value if m.get("role") == "user"]
        value = users[-1] if users else ""
    return value if isinstance(value, str) else ""


def answer(text):
    m = QUESTION.search(text)
    if not m:
        return ""
    a, op, b = int(m.group(1)), m.group(2), int(m.group(3))
    value = {"+": a + b, "-": a - b, "*": a * b, "×": a * b, "x": a * b, "/": a // b, "÷": a // b}[op]
    return str(abs(value))  # the planted weakness: the sign is lost


def judge(case, given):
    choices = case.get("choices")
    target = case.get("target")
    if choices:
        letter = "ABCDEFGHIJ"[choices.index(given)] if given in choices else ""
        return letter == target, letter
    if target is not None:
        targets = target if isinstance(target, list) else [target]
        return given in targets or any(given + ".0" == t for t in targets), given
    for a in case.get("assert", []):
        kind, value = a.get("type"), str(a.get("value", ""))
        if kind == "equals" and given == value or kind in ("contains", "icontains") and value.lower() in given.lower():
            return True, given
    return False, given


def main():
    case = json.load(sys.stdin)
    ok, given = judge(case, answer(question_of(case)))
    print(json.dumps({"verdict": "pass" if ok else "fail", "score": 1 if ok else 0, "answer": given}))


if __name__ == "__main__":
    main()
