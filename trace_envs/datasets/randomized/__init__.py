"""The domain randomizer: planted-deficit domains drawn along named axes, the yardstick the miner is measured with on
domains nobody here shaped (`python -m benchmarks mining --random 30`; docs/randomizer.md).

`random_domain(seed)` draws a `RandomDomain` (a `trace_envs.datasets.sim.PlantedDomain`): a business theme with its
own nouns, ids and fields; a tool naming style and verb synonyms; record and error shapes; the user turn that carries
the request; an option count; a source format; with or without expected actions; user and agent sentences taken from
real runs; and a deficit of 4 to 6 capability families at varied rates, plus a decoy and noise. `AXES` lists every
axis and its values.
"""

from trace_envs.datasets.randomized.axes import AXES, draw_axes, draw_families
from trace_envs.datasets.randomized.domain import RandomDomain, random_domain
from trace_envs.datasets.randomized.kinds import FAMILIES

__all__ = ["AXES", "FAMILIES", "RandomDomain", "draw_axes", "draw_families", "random_domain"]
