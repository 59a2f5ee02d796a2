"""Load every row of an <exp_name>.jsonl with a pydantic model of the rows
R2E-Gym's and SWE-Factory's tools read, and print how many loaded.

Written for swerve's tests from the field names and types of those tools'
trajectory rows; it checks the rows the way their pydantic models would
(required fields, types, extra fields ignored).

usage: python3 upstream_model.py RUN/exp.jsonl
"""

import json
import sys
from typing import Any, Optional

from pydantic import BaseModel


class Step(BaseModel):
    step_idx: int
    thought: str
    action: str
    observation: str
    done: bool
    info: dict
    token_usage_prompt: int
    token_usage_completion: int
    token_usage_total: int
    llm_exec_time: float
    env_exec_time: float
    total_step_time: float
    total_time_traj: float
    step_count: int


class Row(BaseModel):
    trajectory_steps: list[Step]
    problem_statement: str
    docker_image: str
    exp_name: Optional[str] = None
    env_args: dict[str, Any] = {}
    agent_args: dict[str, Any] = {}
    ds: Optional[dict] = None
    max_steps: int
    max_steps_absolute: int
    max_token_limit: int
    max_llm_time: int
    max_exec_time: int
    max_total_time: int
    exit_reason: str
    output_patch: str
    reward: Optional[float] = None
    reward_calc_time: Optional[float] = None
    test_output: Optional[str] = None
    # The conversation, as SWE-Factory's runner adds it to each row.
    history: list[dict[str, Any]] = []
    custom_test_outputs: dict = {}
    regression_test_output: Optional[str] = None
    verifier_prob: Optional[float] = None
    reproduction_test_scores: list[int] = []


def main(path: str) -> None:
    n = 0
    with open(path) as f:
        for line in f:
            if not line.strip():
                continue
            row = Row.model_validate_json(line)
            # What the post-processing and resume read besides the model.
            assert row.ds is not None and "docker_image" in row.ds and row.ds.get("instance_id"), "ds lacks docker_image or instance_id"
            other = row.agent_args.get("other_args") or {}
            assert isinstance(other, dict), "agent_args.other_args is not an object"
            raw = json.loads(line)
            assert "reward" in raw and isinstance(raw["history"], list)
            n += 1
    print(f"{n} rows loaded")


if __name__ == "__main__":
    main(sys.argv[1])
