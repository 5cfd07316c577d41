"""The shared webhook vectors (clients/webhook-vectors.json), which the server's signer and every SDK pass."""

import json
import pathlib

import pytest

from media_sdk import WebhookVerificationError, verify_webhook

VECTORS = json.loads((pathlib.Path(__file__).resolve().parents[2] / "webhook-vectors.json").read_text("utf-8"))


@pytest.mark.parametrize("case", VECTORS["verifying"], ids=lambda c: c["name"])
def test_vector(case):
    body = case["body"].encode("utf-8")
    if case["valid"]:
        event = verify_webhook(body, case["header"], case["secrets"], tolerance_seconds=case["tolerance_seconds"], now=case["now"])
        assert event["type"] == "job.succeeded"
    else:
        with pytest.raises(WebhookVerificationError) as refused:
            verify_webhook(body, case["header"], case["secrets"], tolerance_seconds=case["tolerance_seconds"], now=case["now"])
        assert refused.value.reason == case["reason"]


def test_no_secret_is_refused():
    with pytest.raises(ValueError):
        verify_webhook(b"{}", "t=1,v1=00", [])
