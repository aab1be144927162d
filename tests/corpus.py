"""Deterministic, realistic filler memories for retrieval tests (no randomness)."""

from __future__ import annotations

import itertools

_SUBJECTS = ["the billing service", "the auth gateway", "the mobile app", "the data pipeline", "the admin panel",
             "the search API", "the notification worker", "the CI pipeline", "the design system", "the analytics job"]
_FACTS = [
    "is deployed with Helm on the staging cluster",
    "keeps its configuration in environment variables",
    "was rewritten in Go last quarter",
    "logs to Loki and alerts through PagerDuty",
    "uses feature flags from LaunchDarkly",
    "has a nightly backup retained for 30 days",
    "is owned by the platform team",
    "runs its integration tests against a Docker Compose stack",
    "reads from a read replica to keep latency low",
    "caches responses in Redis for five minutes",
    "is documented in the wiki under Architecture",
    "depends on the shared protobuf definitions",
    "was load tested at 2,000 requests per second",
    "publishes events to Kafka topic orders.v2",
    "needs a manual approval before production deploys",
    "stores uploaded files in S3 with lifecycle rules",
    "is monitored with a Grafana dashboard",
    "pins Python 3.11 in its Dockerfile",
    "uses Tailwind for its styles",
    "sends emails through Postmark",
]


def filler_memories(n: int) -> list[str]:
    """``n`` distinct plausible project facts, the same on every call."""
    combos = itertools.product(_FACTS, _SUBJECTS)
    return [f"{s[0].upper()}{s[1:]} {f}." for f, s in itertools.islice(combos, n)]
