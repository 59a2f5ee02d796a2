"""Drives SwerveSandboxTool, a subclass of verl's real BaseTool, through
verl's current tool lifecycle against a live ``swerve serve``.

Environment: SWERVE_URL (the server), VERL_CLIENT_DIR (a directory holding
verl/tools/base_tool.py and schemas.py, unmodified), SWERVE_TASK (an
instance id the server serves), SWERVE_FIX (a bash command that fixes that
task), SWERVE_TOKEN (optional), SWERVE_VERL_ROWS (optional: JSON lines, the rows
``swerve convert verl --ground_truth_patch`` wrote, as pandas reads them).
Run by the Go tests TestVerlAdapter and TestServeVerlAdapter.
"""

import base64
import json

import asyncio
import os
import sys
import types
import unittest
import urllib.error
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent


def load_verl(client_dir: str) -> None:
    """Makes ``verl.tools`` importable from the unmodified client files
    without the rest of verl: an empty ``verl`` package over the client
    directory and a stub rollout_trace (an identity decorator)."""
    verl = types.ModuleType("verl")
    verl.__path__ = [os.path.join(client_dir, "verl")]
    utils = types.ModuleType("verl.utils")
    utils.__path__ = []
    trace = types.ModuleType("verl.utils.rollout_trace")
    trace.rollout_trace_op = lambda f: f
    sys.modules.update({"verl": verl, "verl.utils": utils, "verl.utils.rollout_trace": trace})


load_verl(os.environ["VERL_CLIENT_DIR"])
sys.path.insert(0, str(HERE))

from verl.tools.base_tool import BaseTool  # noqa: E402
from verl.tools.schemas import OpenAIFunctionToolSchema  # noqa: E402

from swerve_verl.tool import SwerveSandboxTool  # noqa: E402

URL = os.environ["SWERVE_URL"]
TASK = os.environ["SWERVE_TASK"]
FIX = os.environ["SWERVE_FIX"]


class AgentData:
    """What ToolAgentLoop passes to execute as agent_data (the field read)."""

    def __init__(self, request_id: str):
        self.request_id = request_id


def load_tools() -> dict:
    """Builds the tools from tool_config.yaml as verl's registry does:
    one instance per entry, the schema checked by OpenAIFunctionToolSchema."""
    import yaml

    cfg = yaml.safe_load((HERE / "tool_config.yaml").read_text())
    tools = {}
    for entry in cfg["tools"]:
        assert entry["class_name"] == "swerve_verl.tool.SwerveSandboxTool"
        schema = OpenAIFunctionToolSchema.model_validate(entry["tool_schema"])
        config = dict(entry["config"], server_url=URL)
        tool = SwerveSandboxTool(config=config, tool_schema=schema)
        tools[tool.name] = tool
    return tools


async def call_tool(tool: BaseTool, tools_kwargs: dict, args: dict, request_id: str):
    """One tool call as verl's ToolAgentLoop._call_tool makes it: create
    with the row's create_kwargs for this tool's name, execute with
    agent_data, release even on error."""
    kwargs = tools_kwargs.get(tool.name, {})
    instance_id, _ = await tool.create(create_kwargs=kwargs.get("create_kwargs", {}))
    try:
        return await tool.execute(instance_id, args, agent_data=AgentData(request_id))
    finally:
        await tool.release(instance_id)


def sandbox_count() -> int:
    """Boxes the server holds open: swerve serve's swerve_sessions_open
    series, or the bare handler's test-only route."""
    req = urllib.request.Request(URL + "/metrics")
    if os.environ.get("SWERVE_TOKEN"):
        req.add_header("Authorization", "Bearer " + os.environ["SWERVE_TOKEN"])
    try:
        with urllib.request.urlopen(req) as r:
            for line in r.read().decode().splitlines():
                if line.startswith("swerve_sessions_open "):
                    return int(float(line.split()[1]))
    except urllib.error.HTTPError as e:
        if e.code != 404:
            raise
    with urllib.request.urlopen(URL + "/sessions_open") as r:  # test-only route
        return int(r.read())


class TestSwerveVerl(unittest.TestCase):
    def setUp(self):
        self.tools = load_tools()
        self.kwargs = {name: {"create_kwargs": {"instance_id": TASK}} for name in ("bash", "submit_solution")}

    def run_async(self, coro):
        return asyncio.run(coro)

    def test_schema_and_subclass(self):
        self.assertEqual(set(self.tools), {"bash", "submit_solution"})
        for tool in self.tools.values():
            self.assertIsInstance(tool, BaseTool)
            self.assertTrue(tool.get_openai_tool_schema().function.description)
        self.assertEqual(self.tools["bash"].tool_schema.function.parameters.required, ["command"])

    def test_trajectory_keeps_its_box_and_gets_its_reward(self):
        bash, submit = self.tools["bash"], self.tools["submit_solution"]

        async def trajectory():
            resp, reward, metrics = await call_tool(bash, self.kwargs, {"command": "touch marker && echo hi"}, "traj-a")
            self.assertEqual((resp.text, reward, metrics.get("exit_code")), ("hi\n", 0.0, 0))
            # The next call, a new tool instance per verl's loop, sees the same box.
            resp, _, _ = await call_tool(bash, self.kwargs, {"command": "ls marker"}, "traj-a")
            self.assertEqual(resp.text, "marker\n")
            # Another trajectory has its own box.
            resp, _, metrics = await call_tool(bash, self.kwargs, {"command": "ls marker"}, "traj-b")
            self.assertNotEqual(metrics.get("exit_code"), 0, resp.text)
            # Not fixed yet: reward 0.
            resp, reward, metrics = await call_tool(submit, self.kwargs, {}, "traj-b")
            self.assertEqual((reward, metrics.get("resolved")), (0.0, False), resp.text)
            await call_tool(bash, self.kwargs, {"command": FIX}, "traj-a")
            resp, reward, metrics = await call_tool(submit, self.kwargs, {}, "traj-a")
            self.assertEqual((reward, metrics.get("resolved")), (1.0, True), resp.text)
            self.assertIn("timings", metrics)

        self.run_async(trajectory())
        # Both trajectories submitted: their boxes are released.
        self.assertEqual(sandbox_count(), 0)

    def test_errors_are_tool_text(self):
        bash = self.tools["bash"]

        async def calls():
            kwargs = {"bash": {"create_kwargs": {"instance_id": "nope__nope-1"}}}
            resp, reward, metrics = await call_tool(bash, kwargs, {"command": "true"}, "traj-c")
            self.assertEqual(reward, 0.0)
            self.assertIn("nope__nope-1", resp.text)
            self.assertEqual(metrics["status"], 400)
            resp, _, metrics = await call_tool(bash, self.kwargs, {}, "traj-d")
            self.assertIn("command", resp.text)
            await bash.release_trajectory("traj-d")
            await bash.release_trajectory("traj-d")  # idempotent

        self.run_async(calls())

    def test_converted_rows(self):
        """Each row swerve convert verl wrote, driven with its own
        tools_kwargs as ToolAgentLoop passes them: a trajectory that changes
        nothing earns 0, one that applies the row's gold patch earns 1, and
        every box is released."""
        path = os.environ.get("SWERVE_VERL_ROWS")
        if not path:
            self.skipTest("SWERVE_VERL_ROWS is not set (TestServeVerlAdapter sets it)")
        rows = [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
        self.assertTrue(rows)
        bash, submit = self.tools["bash"], self.tools["submit_solution"]

        async def trajectories(row):
            extra = row["extra_info"]
            iid = extra["instance_id"]
            self.assertTrue(extra["need_tools_kwargs"])
            kwargs = extra["tools_kwargs"]  # keyed by the called tool's name
            self.assertEqual(set(kwargs), {"bash", "submit_solution"})
            self.assertEqual(kwargs["bash"]["create_kwargs"]["instance_id"], iid)

            empty, gold = iid + "/empty", iid + "/gold"
            resp, _, metrics = await call_tool(bash, kwargs, {"command": "git status --short"}, empty)
            self.assertEqual((resp.text, metrics.get("exit_code")), ("", 0), resp.text)
            resp, reward, metrics = await call_tool(submit, kwargs, {}, empty)
            self.assertEqual((reward, metrics.get("resolved")), (0.0, False), resp.text)

            patch = base64.b64encode(extra["ground_truth_patch"].encode()).decode()
            # cd persists in the trajectory's shell: apply from the root.
            resp, _, metrics = await call_tool(bash, kwargs, {"command": "cd \"$(git rev-parse --show-toplevel)\""}, gold)
            self.assertEqual(metrics.get("exit_code"), 0, resp.text)
            resp, _, metrics = await call_tool(bash, kwargs, {"command": f"echo {patch} | base64 -d | git apply -"}, gold)
            self.assertEqual(metrics.get("exit_code"), 0, resp.text)
            resp, reward, metrics = await call_tool(submit, kwargs, {}, gold)
            self.assertEqual((reward, metrics.get("resolved")), (1.0, True), resp.text)

        for row in rows:
            with self.subTest(instance_id=row["extra_info"]["instance_id"]):
                self.run_async(trajectories(row))
        self.assertEqual(sandbox_count(), 0)

    def test_calc_reward_unused(self):
        # verl's loop never calls it; it stays the neutral 0.
        self.assertEqual(self.run_async(self.tools["bash"].calc_reward("x")), 0.0)


if __name__ == "__main__":
    unittest.main()
