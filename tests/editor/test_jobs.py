"""Editor jobs: a new job on a kernel cancels the running one; a request's cancel reaches only its own job."""

from __future__ import annotations

from htam_core.editor.jobs import Jobs


def test_a_new_job_cancels_the_running_one_of_the_same_key():
    jobs = Jobs()
    first = jobs.start(("a.cu", "k"), request_id=1)
    other = jobs.start(("a.cu", "other"))
    second = jobs.start(("a.cu", "k"), request_id=2)
    assert first.is_set() and not second.is_set() and not other.is_set()
    jobs.finish(("a.cu", "k"), first, 1)  # the cancelled job ends after the new one started: the new one stays
    assert jobs.cancel_request(2) and second.is_set()
    jobs.finish(("a.cu", "k"), second, 2)
    jobs.finish(("a.cu", "other"), other)
    assert not jobs.running and not jobs.cancel_request(2)


def test_cancel_request_of_an_unknown_id_does_nothing():
    jobs = Jobs()
    ev = jobs.start("k", request_id="r1")
    assert not jobs.cancel_request("r2") and not ev.is_set() and jobs.running
