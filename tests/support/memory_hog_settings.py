"""Planboard's settings plus the memory hog model (`tests.support.memory_hog`), for worker
processes started by the memory-limit fault test."""

from planboard.settings import *  # noqa: F403
from planboard.settings import PLANBOARD_LOCAL_MODELS

PLANBOARD_LOCAL_MODELS = {**PLANBOARD_LOCAL_MODELS, "hog": "tests.support.memory_hog.HogModel"}
