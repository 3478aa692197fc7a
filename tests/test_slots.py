"""The service's concurrency limit (textveil.service.slots): first come, first served, never more
than the limit at once, and no slot lost to a request that timed out or went away."""

from __future__ import annotations

import asyncio
import threading

from hypothesis import example, given, settings
from hypothesis import strategies as st

from conftest import HANG_GUARD_S  # a waiter's timeout only stops a hang: no test here is decided by time
from textveil.service.slots import Slots


async def one_held_and_one_waiting() -> tuple[Slots, asyncio.Future]:
    """A gate of one slot, held, with one request queued behind it."""
    slots = Slots(1)
    assert await slots.acquire(1)
    waiter = asyncio.ensure_future(slots.acquire(HANG_GUARD_S))
    await asyncio.sleep(0)
    return slots, waiter


def test_waiters_get_slots_in_the_order_they_asked():
    async def scenario():
        slots = Slots(2)
        assert await slots.acquire(1) and await slots.acquire(1)
        granted: list[int] = []

        async def request(number: int) -> None:
            assert await slots.acquire(HANG_GUARD_S)
            granted.append(number)

        tasks = []
        for number in range(6):
            tasks.append(asyncio.ensure_future(request(number)))
            await asyncio.sleep(0)  # queued in this order
        assert slots.waiting == 6 and slots.busy == 2
        for _ in range(6):
            slots.release()
            await asyncio.sleep(0.001)
        await asyncio.gather(*tasks)
        return granted, slots.busy, slots.waiting

    granted, busy, waiting = asyncio.run(scenario())
    assert granted == list(range(6))
    assert (busy, waiting) == (2, 0)  # the two first holders still hold theirs


def test_a_newcomer_never_overtakes_a_waiter():
    async def scenario():
        slots, waiter = await one_held_and_one_waiting()
        slots.release()  # handed to the waiter, not freed
        newcomer = await slots.acquire(0)
        return await waiter, newcomer, slots.busy

    assert asyncio.run(scenario()) == (True, False, 1)


def test_a_slot_freed_while_a_granted_waiter_wakes_may_go_to_a_newcomer():
    """Fair, though the newcomer resumes first: the waiter was granted its slot before the
    newcomer came, and only a second, free slot went to the newcomer (the property test's
    resumption order can therefore show a later request first)."""
    async def scenario():
        slots = Slots(2)
        assert await slots.acquire(1) and await slots.acquire(1)
        waiter = asyncio.ensure_future(slots.acquire(HANG_GUARD_S))
        await asyncio.sleep(0)
        slots.release()  # handed to the waiter, which wakes a loop step later
        slots.release()  # nobody queues: this one is freed
        newcomer = await slots.acquire(0)
        busy_before_the_waiter_woke = slots.busy
        return newcomer, busy_before_the_waiter_woke, await waiter, slots.busy, slots.waiting

    assert asyncio.run(scenario()) == (True, 2, True, 2, 0)


def test_a_waiter_that_times_out_leaves_the_queue_and_spends_no_slot():
    async def scenario():
        slots = Slots(1)
        assert await slots.acquire(1)
        late = await slots.acquire(0.01)
        after_timeout = (slots.busy, slots.waiting)
        slots.release()
        return late, after_timeout, slots.busy, await slots.acquire(0)

    assert asyncio.run(scenario()) == (False, (1, 0), 0, True)


def test_a_cancelled_waiter_passes_on_a_slot_granted_to_it():
    async def scenario():
        slots = Slots(1)
        assert await slots.acquire(1)
        first = asyncio.ensure_future(slots.acquire(HANG_GUARD_S))
        second = asyncio.ensure_future(slots.acquire(HANG_GUARD_S))
        await asyncio.sleep(0)
        slots.release()  # granted to ``first``; it goes away before it wakes
        first.cancel()
        (outcome,) = await asyncio.gather(first, return_exceptions=True)
        if outcome is True:  # it woke before the cancellation reached it: it holds the slot
            slots.release()
        return await second, slots.busy, slots.waiting

    assert asyncio.run(scenario()) == (True, 1, 0)


def test_a_release_from_a_worker_thread_wakes_the_waiter_on_its_loop():
    async def scenario():
        slots, waiter = await one_held_and_one_waiting()
        worker = threading.Thread(target=slots.release)
        worker.start()
        worker.join()
        return await asyncio.wait_for(waiter, HANG_GUARD_S), slots.busy

    assert asyncio.run(scenario()) == (True, 1)


@settings(max_examples=150, deadline=None)
@example(limit=2, requests=[(2.6e-05, "finish"), (0.0, "finish"), (0.0, "finish"), (0.0, "cancel"), (0.0, "finish")])
@given(limit=st.integers(1, 3),
       requests=st.lists(st.tuples(st.floats(0, 0.004), st.sampled_from(["finish", "cancel"])), min_size=1, max_size=12))
def test_never_more_than_the_limit_and_every_slot_comes_back(limit, requests):
    """Any mix of requests that finish their work or go away (waiting or working): at most
    ``limit`` hold a slot at any moment, slots are granted in arrival order, and all are free
    at the end."""

    async def scenario():
        slots = Slots(limit)
        holding = [0]
        most = [0]
        order: list[int] = []
        newcomers: dict[int, bool] = {}

        async def request(number: int, work: float, fate: str) -> None:
            # Acquire runs without yielding when a slot is free and nobody queues: a newcomer.
            newcomers[number] = slots.busy < slots.limit and not slots.waiting
            if not await slots.acquire(HANG_GUARD_S):
                return
            order.append(number)
            holding[0] += 1
            most[0] = max(most[0], holding[0])
            try:
                await asyncio.sleep(work)
            finally:  # the service gives a slot back when the work ends, whatever its request does
                holding[0] -= 1
                slots.release()

        tasks = []
        for number, (work, fate) in enumerate(requests):
            tasks.append(asyncio.ensure_future(request(number, work, fate)))
            await asyncio.sleep(0)
        for task, (_work, fate) in zip(tasks, requests):
            if fate == "cancel" and not task.done():
                task.cancel()  # the client went away (while waiting or while working)
        await asyncio.gather(*tasks, return_exceptions=True)
        return most[0], order, newcomers, slots.busy, slots.waiting

    most, order, newcomers, busy, waiting = asyncio.run(scenario())
    assert most <= limit
    # Slots are granted in arrival order, so of two requests that never went away the later one
    # resumes first only when it found a slot free and nobody queued: the earlier one had then
    # been granted its slot and was still on its way back (a grant wakes a waiter a loop step
    # later). A request cancelled just as its slot came resumes one step sooner than the others
    # (asyncio.wait_for hands it the result at once), so it is left out.
    finished = [number for number in order if requests[number][1] == "finish"]
    overtaking = [(earlier, later) for position, later in enumerate(finished)
                  for earlier in finished[position + 1:] if earlier < later]
    assert all(newcomers[later] for _earlier, later in overtaking), (order, newcomers)
    assert (busy, waiting) == (0, 0)
