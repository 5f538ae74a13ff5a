"""The JUnit verdict: only a clean, complete result passes (no sandbox needed)."""

from __future__ import annotations

import pytest

from tempering.envs.terminal import judge
from tempering.envs.terminal.task import expected_test_names


def junit(*cases: str, counts: dict | None = None) -> str:
    body = "".join(cases)
    c = {"tests": len(cases), "failures": 0, "errors": 0, "skipped": 0, **(counts or {})}
    attrs = " ".join(f'{k}="{v}"' for k, v in c.items())
    return f'<?xml version="1.0"?><testsuites><testsuite name="pytest" {attrs}>{body}</testsuite></testsuites>'


def case(name: str, inner: str = "", cls: str = "test_outputs") -> str:
    return f'<testcase classname="{cls}" name="{name}" time="0.1">{inner}</testcase>'


EXPECTED = ("test_a", "test_b")
GOOD = junit(case("test_a"), case("test_b[1]"), case("test_b[2]"))


def report(xml: str, code: int = 0, **extra) -> dict:
    return {"exit_code": code, "junit": xml, "log": "", "timed_out": False, "xml_bytes": len(xml), **extra}


def test_a_clean_complete_result_passes():
    out = judge(report(GOOD), EXPECTED)
    assert out.passed, out.reason
    assert out.tests == {"test_outputs::test_a": "passed", "test_outputs::test_b[1]": "passed",
                         "test_outputs::test_b[2]": "passed"}


@pytest.mark.parametrize("xml, code, why", [
    (junit(case("test_a"), case("test_b", '<skipped message="x"/>')), 0, "did not pass"),
    (junit(case("test_a"), case("test_b", '<failure message="x"/>')), 1, "did not pass"),
    (junit(case("test_a"), case("test_b", '<error message="x"/>')), 1, "did not pass"),
    (junit(case("test_a")), 0, "missing from the result"),  # a test deselected or dropped
    (junit(), 5, "no test cases"),
    ("", 0, "no JUnit result"),
    ("<testsuites><testsuite", 0, "not well-formed"),
    (junit(case("test_a"), case("test_b"), counts={"skipped": 1}), 0, "suite counts"),
    (junit(case("test_a"), case("test_b"), counts={"tests": 7}), 0, "suite counts"),
    (junit(case("test_a"), case("test_b")), 1, "exited 1"),
    ('<!DOCTYPE x [<!ENTITY a "b">]>' + GOOD, 0, "not plain pytest output"),
])
def test_anything_less_fails(xml, code, why):
    out = judge(report(xml, code), EXPECTED)
    assert not out.passed and why in out.reason


def test_a_timeout_fails_even_with_a_good_result():
    assert not judge(report(GOOD, timed_out=True), EXPECTED).passed


def test_expected_names_come_from_the_test_source():
    src = ("def test_x(): pass\nasync def test_y(): pass\ndef helper(): pass\n"
           "class TestK:\n    def test_m(self): pass\n    def other(self): pass\n"
           "class Helper:\n    def test_no(self): pass\n")
    assert expected_test_names(src) == ("test_x", "test_y", "TestK.test_m")
    out = judge(report(junit(case("test_x"), case("test_y"), case("test_m", cls="test_outputs.TestK"))),
                expected_test_names(src))
    assert out.passed, out.reason
