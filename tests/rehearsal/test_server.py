"""The loopback server's fault mix: the opening faults a small run is sure to meet."""

from __future__ import annotations

import dataclasses

import pytest

from rubriclab.rehearsal.server import FaultMix, RehearsalServer

CHAT = "/v1/chat/completions"


def _body(n: int) -> dict:
    return {"model": "gpt-4o-mini", "max_tokens": 64,
            "messages": [{"role": "user", "content": f"Say hello, number {n}."}]}


def test_the_opening_faults_meet_the_first_ordinary_calls_in_order_then_the_mix_takes_over():
    faults = dataclasses.replace(FaultMix.none(), opening=("rate_limited", "server_error",
                                                           "hang"), hang_s=0.0)
    server = RehearsalServer(faults=faults)
    statuses = [server.handle(CHAT, _body(n))[0] for n in range(5)]
    assert statuses[0] == 429
    assert statuses[1] in (500, 503, 529)
    assert statuses[2] is None  # a hang: no answer at all
    assert statuses[3:] == [200, 200]  # an empty mix after the opening: no more faults
    assert server.stats_dict()["faults"] == {"rate_limited": 1, "server_error": 1, "hang": 1}


def test_batch_rows_do_not_take_the_opening_faults():
    faults = dataclasses.replace(FaultMix.none(), opening=("hang",), hang_s=0.0)
    server = RehearsalServer(faults=faults)
    assert server.handle(CHAT, _body(0), in_batch=True)[0] == 200
    assert server.handle(CHAT, _body(1))[0] is None  # the first ordinary call still hangs


def test_an_opening_fault_that_is_not_a_transport_fault_is_refused_by_name():
    with pytest.raises(ValueError, match=r"opening: \['refusal'\]"):
        FaultMix(opening=("hang", "refusal"))


def test_the_server_counts_answers_by_the_request_they_answer():
    """What the cluster rehearsal's 1.000 rests on: the same request answered twice is two
    answers of one distinct request; a failed call (429) is no answer; a different budget is
    another request."""
    faults = dataclasses.replace(FaultMix.none(), opening=("rate_limited",))
    server = RehearsalServer(faults=faults)
    assert server.handle(CHAT, _body(0))[0] == 429
    assert server.handle(CHAT, _body(0))[0] == 200
    assert server.handle(CHAT, _body(0))[0] == 200
    assert server.handle(CHAT, {**_body(0), "max_tokens": 128})[0] == 200
    assert server.handle(CHAT, _body(1), in_batch=True)[0] == 200
    stats = server.stats_dict()
    assert (stats["answers"], stats["distinct_requests"]) == (4, 3)
