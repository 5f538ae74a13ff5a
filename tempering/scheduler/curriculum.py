"""A curriculum over task families: sample where learning happens.

A group teaches something only when its rewards differ (some right, some wrong). We track,
per family, an exponential moving average of how often its groups were informative and
sample families in proportion to that rate plus a floor, so families the model always or
never solves fade but are still revisited. Deterministic given the RNG it is handed.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field


@dataclass
class FamilyCurriculum:
    families: tuple[str, ...]
    floor: float = 0.1
    """Minimum weight of any family, so none is abandoned for good."""
    decay: float = 0.8
    """EMA factor on the informative rate; smaller reacts faster."""
    rates: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for f in self.families:
            self.rates.setdefault(f, 0.5)  # optimistic start: every family gets tried

    def weights(self) -> dict[str, float]:
        return {f: self.floor + self.rates[f] for f in self.families}

    def sample(self, rng: random.Random, k: int) -> list[str | None]:
        """k family names (None for every draw when there are no families)."""
        if not self.families:
            return [None] * k
        w = self.weights()
        return rng.choices(list(w), weights=list(w.values()), k=k)

    def update(self, family: str | None, informative: bool) -> None:
        if family is None or family not in self.rates:
            return
        self.rates[family] = self.decay * self.rates[family] + (1 - self.decay) * float(informative)

    def state_dict(self) -> dict:
        return {"rates": dict(self.rates)}

    def load_state_dict(self, state: dict) -> None:
        self.rates.update(state["rates"])
