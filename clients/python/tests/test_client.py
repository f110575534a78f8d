"""The Python client against a real local network (`gpunet up`): inputs over tus, the feed, wait, outputs, charges."""
from __future__ import annotations

import base64
import hashlib
import http.client
import os
import time
import urllib.parse

import pytest

from gpunet_client import GpunetError, IntegrityError


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def wait_for(what, check, timeout=60.0):
    """Polls `check` until it answers truthy (a condition on the network, never a fixed sleep)."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


@pytest.fixture(scope="module")
def finished_job(client, network):
    """A job whose input was uploaded over HTTP (tus), followed to its end on the feed."""
    data = os.urandom(1_500_000)
    path = network["work"] / "input.bin"
    path.write_bytes(data)
    script = 'echo "got $(wc -c < "$GPUNET_INPUT_DIR/input.bin") bytes"; sha256sum < "$GPUNET_INPUT_DIR/input.bin" | cut -c1-64 > "$GPUNET_OUTPUT_DIR/sha.txt"'
    spec = {
        "name": "python-client",
        "work": {"kind": "script", "interpreter": "bash", "script": {"inline": script}},
        "data": {"inputs": [client.input_file("input", str(path), "input.bin")]},
        "request": {"gpus": 1, "timeLimit": "1m"},
    }
    submitted = client.submit(spec)
    entries = []
    view = client.wait(submitted["jobId"], timeout=180, on_entry=entries.append)
    return {"jobId": submitted["jobId"], "view": view, "entries": entries, "data": data}


def test_submits_with_an_uploaded_input_and_waits_on_the_feed_to_the_end(finished_job):
    assert finished_job["view"]["state"] == "completed"
    types = [e["type"] for e in finished_job["entries"]]
    for expected in ["InputsStaged", "JobPlaced", "ComputeHeld", "JobStarted", "JobFinished", "ComputeReleased"]:
        assert expected in types
    # The wait ends on the job's one JobEnded, and the view read after it is final, with the outputs.
    assert types[-1] == "JobEnded" and types.count("JobEnded") == 1
    ended = finished_job["entries"][-1]["data"]
    assert ended["outcome"] == "completed" and [f["path"] for f in ended["outputs"]["files"]] == ["sha.txt"]
    assert finished_job["view"]["ended"]["billed"] == ended["billed"]
    assert [f["path"] for f in finished_job["view"]["outputs"]["files"]] == ["sha.txt"]
    positions = [int(e["position"]) for e in finished_job["entries"]]
    assert positions == sorted(positions)
    assert {e["jobId"] for e in finished_job["entries"]} == {finished_job["jobId"]}


def test_downloads_the_outputs_checked_against_their_sha256(client, finished_job, network):
    dest = network["work"] / "out"
    files = client.download_outputs(finished_job["jobId"], str(dest))
    assert [f.path for f in files] == ["sha.txt"]
    assert (dest / "sha.txt").read_text().strip() == sha(finished_job["data"])
    # A file that does not hash to what the job recorded is refused, and nothing is left behind.
    f = files[0]
    with pytest.raises(IntegrityError):
        client.download_output(finished_job["jobId"], f.path, str(dest / "bad.txt"), "0" * 64, f.size)
    assert not (dest / "bad.txt").exists()
    assert [p.name for p in dest.iterdir()] == ["sha.txt"]


def test_reads_the_charges_of_the_job(client, finished_job):
    charges = wait_for("the job's usage line", lambda: (c := client.charges(finished_job["jobId"])) and c["lines"] and c)
    line = charges["lines"][0]
    assert line["jobId"] == finished_job["jobId"]
    assert isinstance(line["amountMicros"], int) and line["billableMs"] > 0


def test_the_feed_resumes_after_a_position_and_never_shows_another_team(client, other, finished_job):
    job = finished_job["jobId"]
    whole = list(client.feed(job_id=job, idle_timeout=3))
    assert [e["eventId"] for e in whole[: len(finished_job["entries"])]] == [e["eventId"] for e in finished_job["entries"]]
    assert whole[0]["type"] == "JobSubmitted" and whole[0]["data"]["spec"]["name"] == "python-client"
    assert {e["team"] for e in whole} == {"local"}
    # From a position: only what came after it.
    middle = whole[len(whole) // 2]
    rest = list(client.feed(job_id=job, after=middle["position"], idle_timeout=3))
    assert [e["eventId"] for e in rest] == [e["eventId"] for e in whole if int(e["position"]) > int(middle["position"])]
    # Another team: the job is not its to follow, and its own feed holds none of it.
    with pytest.raises(GpunetError) as refused:
        next(iter(other.feed(job_id=job)))
    assert refused.value.status == 403
    assert job not in {e["jobId"] for e in other.feed(idle_timeout=2)}
    with pytest.raises(GpunetError) as view:
        other.get_job(job)
    assert view.value.status == 403


def test_an_upload_cut_off_mid_way_resumes_from_what_intake_stored(client, other, network):
    data = os.urandom(3 * 1024 * 1024 + 7)
    path = network["work"] / "big.bin"
    path.write_bytes(data)
    digest = sha(data)
    base = urllib.parse.urlsplit(network["url"])
    headers = {"Authorization": f"Bearer {network['apiKey']}", "Tus-Resumable": "1.0.0"}
    # Create the upload and send half of it on a connection that is then cut.
    conn = http.client.HTTPConnection(base.netloc, timeout=30)

    conn.request("POST", "/v1/uploads", headers={**headers, "Upload-Length": str(len(data)), "Upload-Metadata": "sha256 " + base64.b64encode(digest.encode()).decode()})
    created = conn.getresponse()
    created.read()
    assert created.status == 201
    conn.close()
    cut = http.client.HTTPConnection(base.netloc, timeout=30)
    cut.putrequest("PATCH", f"/v1/uploads/{digest}.{len(data)}")
    for k, v in {**headers, "Upload-Offset": "0", "Content-Type": "application/offset+octet-stream", "Content-Length": str(len(data))}.items():
        cut.putheader(k, v)
    cut.endheaders()
    cut.send(data[:2_200_000])
    cut.sock.close()

    # Intake keeps the whole chunks that arrived; the client resumes from there.
    stored = wait_for("intake to store the chunks sent", lambda: client._upload_offset(f"/v1/uploads/{digest}.{len(data)}") or None)
    assert 0 < stored < len(data)
    # Another team sees none of it.
    assert other._upload_offset(f"/v1/uploads/{digest}.{len(data)}") is None
    blob = client.upload_file(str(path))
    assert (blob.sha256, blob.size, blob.skipped) == (digest, len(data), False)
    assert blob.resumed_from == stored and blob.bytes_sent == len(data) - stored
    # Stored now: a second upload sends nothing; the other team would still start from zero.
    again = client.upload_file(str(path))
    assert again.skipped and again.bytes_sent == 0
    assert other._upload_offset(f"/v1/uploads/{digest}.{len(data)}") is None
