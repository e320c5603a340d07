"""A run's events as Server-Sent Events: replayed from the journal, then followed live.

The journal's observer (`EventHub.observe`, fed by `ObservedJournal` at each commit) hands
every durable event, with its position, to the streams following its run. A stream subscribes
first, then replays the journal from the client's `Last-Event-ID`, then sends what the hub
brings that is past the last position it sent: an event committed between the replay and the
subscription is in the hub's queue (and maybe also in the replay: then it is dropped as already
sent), so none is lost and none is sent twice. Each event's SSE id is its journal position,
`SEQ.INDEX` (the row's sequence number, the event's place in the row); a client reconnecting
with `Last-Event-ID` gets exactly what followed it.

A follower that falls `QUEUE` events behind is ended rather than buffered without bound; its
client reconnects with `Last-Event-ID` and catches up from the journal. A stream ends after the
run's `run.done`; while the run waits for a person it stays open, with a comment every
`keepalive_s` seconds.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator

from ember.errors import RunNotFoundError
from ember.journal import START, Journal, Recorded, RunDone
from ember.journal.events import encode_event
from ember.server.errors import ApiError

__all__ = ["QUEUE", "EventHub", "Follower", "frame", "parse_last_event_id", "stream"]

QUEUE = 10_000


class Follower:
    """One stream's queue of a run's events; `None` in it: it fell behind and must end."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[Recorded | None] = asyncio.Queue()
        self.behind = False

    def put(self, recorded: Recorded) -> None:
        if self.behind:
            return
        if self.queue.qsize() >= QUEUE:
            self.behind = True
            self.queue.put_nowait(None)
            return
        self.queue.put_nowait(recorded)


class EventHub:
    """Fans the journal's commits out to the streams that follow each run."""

    def __init__(self) -> None:
        self._followers: dict[str, set[Follower]] = {}

    def observe(self, recorded: Recorded) -> None:
        """The journal observer: on the event loop, at each commit (must not block)."""
        for follower in self._followers.get(recorded.event.run_id, ()):
            follower.put(recorded)

    @contextlib.contextmanager
    def follow(self, run_id: str) -> Iterator[Follower]:
        follower = Follower()
        self._followers.setdefault(run_id, set()).add(follower)
        try:
            yield follower
        finally:
            followers = self._followers[run_id]
            followers.discard(follower)
            if not followers:
                del self._followers[run_id]

    def following(self, run_id: str) -> int:
        return len(self._followers.get(run_id, ()))


def parse_last_event_id(header: str | None) -> tuple[int, int]:
    """The position a `Last-Event-ID` names (`SEQ.INDEX`); `START` when absent or empty."""
    if not header:
        return START
    seq, _, index = header.partition(".")
    if not (seq.isdigit() and (index.isdigit() or not index)):
        raise ApiError(
            400,
            f"Last-Event-ID {header!r} is not an event id of this server",
            "send the id of the last event received (SEQ.INDEX), or none to start over",
            "Last-Event-ID",
        )
    return (int(seq), int(index or 0))


def frame(recorded: Recorded) -> bytes:
    """One event as an SSE message: id (its position), event (its kind), data (its JSON)."""
    kind = type(recorded.event).__struct_config__.tag
    data = encode_event(recorded.event)
    return b"id: %d.%d\nevent: %s\ndata: %s\n\n" % (
        recorded.seq,
        recorded.index,
        str(kind).encode(),
        data,
    )


async def stream(
    hub: EventHub,
    journal: Journal,
    run_id: str,
    after: tuple[int, int],
    *,
    finished: bool = False,
    keepalive_s: float = 15.0,
    poll_s: float | None = None,
) -> AsyncIterator[bytes]:
    """The SSE body: the run's events after `after`, replayed then followed, until run.done
    (`finished`: the run is over, so the replay is all there is). `poll_s`: also read the
    journal this often for what other processes wrote (a cluster's workers)."""
    with hub.follow(run_id) as follower:  # subscribed before the replay: nothing falls between
        sent, last, over = _frames(_replay(journal, run_id, after), after)
        yield b"retry: 1000\n\n" + sent  # one write for the whole replay
        if over or finished:
            return
        quiet = 0.0
        while True:
            try:
                first = await asyncio.wait_for(follower.queue.get(), poll_s or keepalive_s)
            except TimeoutError:
                if poll_s is not None:
                    sent, last, over = _frames(_replay(journal, run_id, last), last)
                    quiet = 0.0 if sent else quiet + poll_s
                    if sent:
                        yield sent
                    if over:
                        return
                    if quiet < keepalive_s:
                        continue
                quiet = 0.0
                yield b": keep-alive\n\n"
                continue
            batch = [first]
            while not follower.queue.empty():  # what one commit brought: one write
                batch.append(follower.queue.get_nowait())
            live = [item for item in batch if item is not None]
            sent, last, over = _frames(live, last)
            if sent:
                yield sent
            if over or len(live) < len(batch):
                return  # done, or behind: the client reconnects from its Last-Event-ID


def _replay(journal: Journal, run_id: str, after: tuple[int, int]) -> list[Recorded]:
    try:
        return journal.read_after(run_id, after)
    except RunNotFoundError:
        return []  # started but nothing durable yet: it all comes through the hub (or a poll)


def _frames(recorded: list[Recorded], last: tuple[int, int]) -> tuple[bytes, tuple[int, int], bool]:
    """The frames of the events past `last`, up to run.done; the new last position; whether
    run.done was among them."""
    frames = []
    for one in recorded:
        if one.position <= last:
            continue  # in the replay already
        last = one.position
        frames.append(frame(one))
        if isinstance(one.event, RunDone):
            return b"".join(frames), last, True
    return b"".join(frames), last, False
