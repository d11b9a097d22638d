"""The bounded least-recently-used map behind serve's caches: the pages answered (by URL and views generation,
:class:`pt2logs.serve.app.PageCache`) and the highlighted HTML of graphs and code (by the text's digest,
:mod:`pt2logs.serve.highlight`). Pages are made in several threads: every access holds a lock."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

V = TypeVar("V")


class Lru(Generic[V]):
    """Key -> value, at most ``most`` in weight (``weigh(value)``; by default 1: a count of values), the least
    recently used out first. A value heavier than ``most`` is not kept; a key kept already keeps its value."""

    def __init__(self, most: int, weigh: Callable[[V], int] = lambda _: 1):
        self.most, self.weigh = most, weigh
        self.size = 0
        self.items: OrderedDict[Hashable, V] = OrderedDict()
        self.lock = threading.Lock()

    def __len__(self) -> int:
        return len(self.items)

    def get(self, key: Hashable) -> V | None:
        with self.lock:
            value = self.items.get(key)
            if value is not None:
                self.items.move_to_end(key)
            return value

    def put(self, key: Hashable, value: V) -> None:
        weight = self.weigh(value)
        if weight > self.most:
            return
        with self.lock:
            if key in self.items:
                return
            self.items[key] = value
            self.size += weight
            while self.size > self.most:
                self.size -= self.weigh(self.items.popitem(last=False)[1])

    def clear(self) -> None:
        with self.lock:
            self.items.clear()
            self.size = 0
