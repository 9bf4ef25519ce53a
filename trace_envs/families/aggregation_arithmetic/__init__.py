"""Aggregation and arithmetic over records: read every record involved and report the computed figure."""

from trace_envs.families.aggregation_arithmetic.task import AggregationEnv, AggregationParams

__all__ = ["AggregationEnv", "AggregationParams"]
