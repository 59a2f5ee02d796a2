"""A verl tool whose calls run in a swerve sandbox.

verl's ToolAgentLoop creates, executes and releases a tool around every
single call, and never calls ``calc_reward``. A coding task needs one box
for the whole trajectory, so this tool keeps nothing between calls itself:
it asks ``swerve serve`` for the sandbox of the trajectory (``POST
/sandboxes`` with the trajectory's id is idempotent: the same id gives the
same box) and runs the call there. ``submit_solution`` grades the
repository in a fresh box and returns the reward as the step reward, then
releases the box. A box nobody uses is closed by the server after its TTL.

Only the standard library is used, plus verl itself (BaseTool, ToolResponse).
"""

import asyncio
import json
import os
import urllib.error
import urllib.request
from typing import Any, Optional
from uuid import uuid4

from verl.tools.base_tool import BaseTool
from verl.tools.schemas import OpenAIFunctionToolSchema, ToolResponse

MODES = ("bash", "submit_solution", "str_replace_editor", "file_editor", "search")


class SwerveError(Exception):
    """A call to swerve serve failed; ``status`` is the HTTP status (0: no answer)."""

    def __init__(self, status: int, message: str):
        super().__init__(f"swerve serve: {status}: {message}" if status else f"swerve serve: {message}")
        self.status = status


class SwerveSandboxTool(BaseTool):
    """One tool of a swerve sandbox: ``config.mode`` says which (bash,
    submit_solution, or an editor); the default is the schema's name.

    config keys: ``server_url`` (default ``$SWERVE_SERVER_URL`` or
    http://127.0.0.1:8000), ``token`` (default ``$SWERVE_TOKEN``), ``mode``,
    ``timeout`` seconds for one HTTP call (default 2000: a grading run may
    take Gym's eval_timeout of 1800 s).
    """

    def __init__(self, config: dict, tool_schema: OpenAIFunctionToolSchema):
        super().__init__(config, tool_schema)
        self.server_url = (config.get("server_url") or os.environ.get("SWERVE_SERVER_URL") or "http://127.0.0.1:8000").rstrip("/")
        self.token = config.get("token") or os.environ.get("SWERVE_TOKEN") or ""
        self.mode = config.get("mode") or self.name
        if self.mode not in MODES:
            raise ValueError(f"swerve tool {self.name}: mode {self.mode!r} is not one of {', '.join(MODES)}")
        self.timeout = float(config.get("timeout", 2000))
        self._create_kwargs: dict[str, dict] = {}
        self._sandboxes: dict[str, str] = {}  # trajectory key -> sandbox id

    # --- HTTP ---------------------------------------------------------------

    def _request(self, method: str, path: str, body: Optional[dict] = None) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.server_url + path, data=data, method=method)
        req.add_header("Content-Type", "application/json")
        if self.token:
            req.add_header("Authorization", "Bearer " + self.token)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                raw = resp.read()
                return resp.status, (json.loads(raw) if raw else None)
        except urllib.error.HTTPError as e:
            raw = e.read()
            try:
                detail = json.loads(raw).get("detail", raw.decode(errors="replace"))
            except (ValueError, AttributeError):
                detail = raw.decode(errors="replace")
            raise SwerveError(e.code, str(detail)) from None
        except (urllib.error.URLError, OSError) as e:
            raise SwerveError(0, str(e)) from None

    async def _call(self, method: str, path: str, body: Optional[dict] = None) -> tuple[int, Any]:
        return await asyncio.to_thread(self._request, method, path, body)

    # --- the trajectory's sandbox --------------------------------------------

    @staticmethod
    def trajectory_key(instance_id: str, create_kwargs: dict, kwargs: dict) -> str:
        """The trajectory's id: ``agent_data.request_id`` (verl's
        ToolAgentLoop passes agent_data to execute), else a ``request_id``
        or ``trajectory_id`` given to execute or in create_kwargs, else this
        call's own instance id (a box for the one call)."""
        agent_data = kwargs.get("agent_data")
        rid = getattr(agent_data, "request_id", None)
        if rid is None and isinstance(agent_data, dict):
            rid = agent_data.get("request_id")
        for src in (kwargs, create_kwargs):
            if rid:
                break
            rid = src.get("request_id") or src.get("trajectory_id")
        return str(rid or instance_id)

    async def _sandbox(self, key: str, create_kwargs: dict) -> str:
        sid = self._sandboxes.get(key)
        if sid:
            return sid
        body = {"request_id": key, "instance_id": create_kwargs.get("instance_id", "")}
        if create_kwargs.get("row"):
            body["row"] = create_kwargs["row"]
        _, out = await self._call("POST", "/sandboxes", body)
        self._sandboxes[key] = out["id"]
        return out["id"]

    # --- verl's lifecycle -----------------------------------------------------

    async def create(self, instance_id: Optional[str] = None, **kwargs) -> tuple[str, ToolResponse]:
        """Remembers the call's create_kwargs (instance_id, and optionally
        the task's row); the box is found or opened at execute, when the
        trajectory's id is known."""
        iid = instance_id or str(uuid4())
        ck = kwargs.get("create_kwargs") or {}
        self._create_kwargs[iid] = dict(ck)
        return iid, ToolResponse()

    async def execute(self, instance_id: str, parameters: dict[str, Any], **kwargs) -> tuple[ToolResponse, float, dict]:
        ck = self._create_kwargs.get(instance_id, {})
        key = self.trajectory_key(instance_id, ck, kwargs)
        body = {"tool": self.mode, "arguments": parameters or {}}
        try:
            for attempt in range(2):
                sid = await self._sandbox(key, ck)
                try:
                    _, out = await self._call("POST", f"/sandboxes/{sid}/execute", body)
                    break
                except SwerveError as e:
                    # The box was reaped (TTL) or released: open the
                    # trajectory's box again, once.
                    self._sandboxes.pop(key, None)
                    if e.status != 404 or attempt == 1:
                        raise
        except SwerveError as e:
            return ToolResponse(text=f"Error: {e}"), 0.0, {"error": str(e), "status": e.status}
        metrics = {k: out[k] for k in ("exit_code", "resolved", "reason", "timings", "infrastructure_error") if k in out}
        reward = float(out.get("reward") or 0.0)
        if self.mode == "submit_solution":
            await self.release_trajectory(key)
        return ToolResponse(text=out.get("output") or ""), reward, metrics

    async def calc_reward(self, instance_id: str, **kwargs) -> float:
        """Not called by verl's current loop; submit_solution's step reward
        carries the grade."""
        return 0.0

    async def release(self, instance_id: str, **kwargs) -> None:
        """Ends this one call. The trajectory's box stays open for its next
        call (the server closes it after submit_solution, or its TTL)."""
        self._create_kwargs.pop(instance_id, None)

    async def release_trajectory(self, key: str) -> None:
        """Closes a trajectory's box now (idempotent)."""
        sid = self._sandboxes.pop(key, None)
        if sid:
            try:
                await self._call("DELETE", f"/sandboxes/{sid}")
            except SwerveError:
                pass
