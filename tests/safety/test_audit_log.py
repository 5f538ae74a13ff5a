"""The sandbox's audit log: each run of an attempt that hits a limit, is killed, fails as a
sandbox, tries a denied call or tries the network lands in the run's store with the attempt
it ran for; clean runs leave nothing."""

import json

import pytest

from tempering.cli.main import main
from tempering.config import load_config
from tempering.envs import SingleTurnEnv
from tempering.sandbox import Limits, audit, shared_sandbox
from tempering.scheduler.store import Store
from tempering.trainer import prepare_run, train
from tempering.types import Message, Score, Task

PROGRAMS = {
    "loop": ("while True:\n    pass\n", "timeout"),
    "memory": ("x = bytearray(512 * 2**20)\nprint(len(x))\n", "memory"),
    "flood": ("while True:\n    print('y' * 1000)\n", "output_limit"),
    "fine": ("print(1)\n", None),
    "ptrace": ("import ctypes\nprint(ctypes.CDLL(None).ptrace(0, 0, 0, 0))\n", "denied_syscall"),
    "egress": ("import socket\ns = socket.socket()\ntry:\n    s.connect(('1.1.1.1', 53))\n"
               "except OSError as e:\n    print(e)\n", "network"),
}
LIMITS = Limits(wall_s=3, cpu_s=3, memory_mb=128, output_bytes=65536)


def _env() -> SingleTurnEnv:
    """Each task names a program; verifying any reply runs that program in the real sandbox."""
    names = sorted(PROGRAMS)

    def generate(rng, family):
        name = family or rng.choice(names)
        return Task(id="", domain="test", prompt=(Message("user", f"Run {name} {rng.randint(0, 10**9)}."),),
                    reference=name, metadata={"family": name})

    def verify(task, response):
        result = shared_sandbox().run(PROGRAMS[task.reference][0], limits=LIMITS)
        return Score(float(result.status == "ok"), result.status == "ok", {"status": result.status})

    return SingleTurnEnv("test/incidents-v1", generate, verify, lambda t: "ok", families=tuple(names))


def test_each_limit_hit_is_logged_with_its_attempt_and_clean_runs_are_not(tmp_path, capsys):
    cfg = load_config("configs/tiny-cpu.yaml", ["log.report=false",
                                                "rollout.prompts_per_step=4", "rollout.group_size=2"])
    prepare_run(cfg, tmp_path)
    train(cfg, tmp_path, steps=2, progress=False, env=_env())
    store = Store(tmp_path / "store.sqlite")
    try:
        incidents = store.incidents()
        episodes = {(e.step, e.round, e.slot): e for e in store.episodes()}
    finally:
        store.close()
    expected = {key: PROGRAMS[e.family][1] for key, e in episodes.items()}
    logged = {(i["step"], i["round"], i["slot"]): i["status"] for i in incidents}
    assert logged == {k: v for k, v in expected.items() if v is not None}  # one entry per hostile run, none else
    assert {v for v in logged.values()} <= {"timeout", "memory", "output_limit", "denied_syscall", "network"}
    assert {i["detail"] for i in incidents if i["status"] == "denied_syscall"} <= {"ptrace"}
    assert {i["detail"] for i in incidents if i["status"] == "network"} <= {"connect to 1.1.1.1:53"}
    assert all(i["task_id"] == episodes[(i["step"], i["round"], i["slot"])].task_id for i in incidents)
    assert audit.LOG.by_tag == {}  # every tagged incident was taken by its attempt
    assert main(["runs", "audit", str(tmp_path), "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)) == len(incidents)


def test_attempts_are_logged_whatever_the_status():
    shared_sandbox().run(PROGRAMS["fine"][0], limits=LIMITS)  # started, so its features are known
    if not shared_sandbox().features.get("seccomp_audit"):
        pytest.skip("this kernel has no seccomp listener that can let calls continue (Linux < 5.5)")
    with audit.tagged("t"):
        shared_sandbox().run(PROGRAMS["ptrace"][0] + "import sys\nsys.exit(3)\n", limits=LIMITS)
        shared_sandbox().run(PROGRAMS["egress"][0], limits=LIMITS)
        shared_sandbox().run(PROGRAMS["fine"][0], limits=LIMITS)
    got = [(i.status, i.detail) for i in audit.LOG.take("t")]
    assert got == [("denied_syscall", "ptrace"), ("network", "connect to 1.1.1.1:53")]


def test_untagged_runs_are_not_kept():
    shared_sandbox().run(PROGRAMS["loop"][0], limits=LIMITS)
    with audit.tagged("t"):
        shared_sandbox().run(PROGRAMS["loop"][0], limits=LIMITS)
    assert [i.status for i in audit.LOG.take("t")] == ["timeout"] and audit.LOG.by_tag == {}
