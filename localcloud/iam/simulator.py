"""IAM's policy evaluation, asked of one long-lived Node.js process (``simulator/simulate.mjs``).

The evaluation itself is @cloud-copilot/iam-simulate's, pinned in ``simulator/package.json`` and
installed on first use with ``npm ci``. A local cloud makes tens of thousands of calls, so one process
answers them all, one JSON line each way, and a decision already made is remembered.
"""

from __future__ import annotations

import json
import subprocess
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from infra.node_packages import installed_package, node_tool
from localcloud.iam.actions import Request
from localcloud.iam.roles import Role

SIMULATOR = Path(__file__).resolve().parent / "simulator"
PACKAGE = "@cloud-copilot/iam-simulate"
ALLOWED = "Allowed"
EXPLICITLY_DENIED = "ExplicitlyDenied"


class SimulatorError(RuntimeError):
    """The evaluator could not decide: a policy or a request it finds malformed, or a dead process."""


class PolicySimulator:
    """Decides requests against roles' identity policies. Thread-safe; ``close`` ends the process."""

    def __init__(self, roles: Sequence[Role], *, account: str) -> None:
        installed_package(SIMULATOR, PACKAGE)
        self.account = account
        self._lock = threading.Lock()
        self._decisions: dict[tuple[str, Request], str] = {}
        self._process = subprocess.Popen(  # noqa: S603 (node and a script of this repository)
            [node_tool("node"), str(SIMULATOR / "simulate.mjs")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            encoding="utf-8",
        )
        registered: set[str] = set()
        for role in roles:
            if role.name not in registered:
                registered.add(role.name)
                policies = [{"name": name, "policy": policy} for name, policy in role.policies]
                self._ask({"role": role.name, "policies": policies})

    def decide(self, role: Role, request: Request) -> str:
        """``Allowed``, ``ImplicitlyDenied`` or ``ExplicitlyDenied``."""
        key = (role.name, request)
        with self._lock:
            found = self._decisions.get(key)
            if found is None:
                answer = self._ask_locked(
                    {
                        "role": role.name,
                        "principal": role.principal,
                        "account": self.account,
                        "action": request.action,
                        "resource": request.resource,
                        "context": dict(request.context),
                    }
                )
                found = str(answer["decision"])
                self._decisions[key] = found
            return found

    def _ask(self, message: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            return self._ask_locked(message)

    def _ask_locked(self, message: dict[str, Any]) -> dict[str, Any]:
        assert self._process.stdin is not None and self._process.stdout is not None
        try:
            self._process.stdin.write(json.dumps(message) + "\n")
            self._process.stdin.flush()
            line = self._process.stdout.readline()
        except (BrokenPipeError, ValueError) as exc:
            raise SimulatorError(f"the policy simulator is not running: {exc}") from exc
        if not line:
            raise SimulatorError(f"the policy simulator exited ({self._process.poll()})")
        answer: dict[str, Any] = json.loads(line)
        if "error" in answer:
            refused = json.dumps(message)[:500]
            raise SimulatorError(f"the policy simulator refused {refused}: {answer['error']}")
        return answer

    def close(self) -> None:
        if self._process.stdin is not None:
            self._process.stdin.close()
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        if self._process.stdout is not None:
            self._process.stdout.close()
