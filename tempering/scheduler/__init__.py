"""Scheduling of rollouts: which tasks to sample and when (curriculum, priorities)."""

from tempering.scheduler.curriculum import FamilyCurriculum

__all__ = ["FamilyCurriculum"]
