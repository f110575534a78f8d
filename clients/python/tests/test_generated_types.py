"""gpunet_client/types.py is generated from contracts/generated/json-schema: it must be current."""
import importlib.util
from pathlib import Path

TOOL = Path(__file__).resolve().parent.parent / "tools" / "generate_types.py"


def load_generator():
    spec = importlib.util.spec_from_file_location("generate_types", TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_generated_types_are_current():
    gen = load_generator()
    assert gen.TARGET.read_text() == gen.render(), "gpunet_client/types.py is stale: run `python3 clients/python/tools/generate_types.py` (npm run contracts:export does)"


def test_types_cover_the_messages_a_producer_uses():
    from gpunet_client import types

    for name in ["JobSpec", "SubmitJob", "SubmitJobReply", "GetJobReply", "FeedEntry", "GetChargesReply", "ReadFeed", "ReadFeedReply", "JobEnded"]:
        assert name in types.__all__, name
    # An event's file is the recorded envelope; its `data` has a type of its own.
    assert types.JobEnded.__annotations__["data"] is types.JobEndedData or "JobEndedData" in str(types.JobEnded.__annotations__["data"])
    assert types.FeedEntry.__required_keys__ >= {"position", "type", "jobId", "team", "data"}
    assert "outputs" in types.JobEndedData.__annotations__


def test_the_check_mode_fails_on_a_stale_file(tmp_path, monkeypatch):
    gen = load_generator()
    stale = tmp_path / "types.py"
    stale.write_text(gen.render() + "# edited by hand\n")
    monkeypatch.setattr(gen, "TARGET", stale)
    assert gen.main(["--check"]) == 1
    stale.write_text(gen.render())
    assert gen.main(["--check"]) == 0
