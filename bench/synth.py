"""Synthetic but realistic memory sentences and queries for the speed bench (seeded, no network).

Sentences come from ~30 templates of the kinds an assistant stores (preferences,
decisions, project facts, episodes, procedures, personal facts) filled from slot lists
(people, services, tools, places, numbers, dates) with ``random.Random(seed)``; every
sentence is distinct. Queries are questions over the same slots, so they hit some memories
and miss others, as real recalls do; ``queries`` never repeats one within a call or
within a ``Questions`` stream, because memvault keeps a query-vector cache: a repeated
question is answered without a model run, and a latency bench that repeats questions
measures the cache, not recall.
"""

from __future__ import annotations

import random

PEOPLE = ["Alice", "Bob", "Carmen", "Deepak", "Elena", "Farid", "Grace", "Hiro", "Ines", "Jonas", "Kemal", "Lena",
          "Mateo", "Nadia", "Olu", "Priya", "Quentin", "Rosa", "Sven", "Tariq", "Uma", "Viktor", "Wei", "Yara"]
SERVICES = ["billing service", "auth gateway", "mobile app", "data pipeline", "admin panel", "search API",
            "notification worker", "CI pipeline", "design system", "analytics job", "checkout flow",
            "invoice exporter", "recommendation engine", "feature-flag service", "image resizer", "chat backend"]
TOOLS = ["pnpm", "Poetry", "uv", "Docker Compose", "Terraform", "Helm", "Postgres 16", "Redis", "Kafka",
         "Grafana", "Sentry", "ruff", "mypy", "pytest", "Vite", "Tailwind", "SQLite", "ClickHouse", "Nix",
         "GitHub Actions", "Bazel", "Rust", "Go 1.22", "Node 20", "Python 3.12", "TypeScript", "gRPC", "OpenTelemetry"]
PLACES = ["Lisbon", "Berlin", "Osaka", "Toronto", "Nairobi", "Austin", "Seoul", "Krakow", "Porto", "Melbourne"]
HOBBIES = ["bouldering", "sourdough baking", "trail running", "chess", "watercolour painting", "sailing",
           "birdwatching", "salsa dancing", "pottery", "cycling", "jazz piano", "gardening"]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December"]
TEAMS = ["platform", "payments", "growth", "mobile", "infra", "data", "security", "frontend"]
ISSUES = ["a flaky timezone test", "a memory leak in the worker", "slow cold starts", "a deadlock on deploy",
          "duplicate webhook deliveries", "a broken migration", "a race in the cache", "a TLS handshake failure",
          "an off-by-one in pagination", "stale DNS entries"]

TEMPLATES = [
    "{p} prefers {t} over {t2} for the {s}.",
    "We decided to move the {s} to {t} because {t2} kept timing out under load.",
    "The {s} is owned by the {team} team and {p} is the on-call contact.",
    "{p} fixed {issue} in the {s} by pinning {t} to an older release.",
    "Deploys of the {s} need a manual approval from {p} before {n} pm on Fridays.",
    "{p} lives in {place} and usually works from {n} am to {n2} pm local time.",
    "{p} has been into {hobby} since {month} and goes every weekend.",
    "The {s} stores its config in {t} and reads secrets from the vault at start-up.",
    "In {month} the {s} was load tested at {n}00 requests per second with {t}.",
    "{p} asked to always run {t} before opening a pull request on the {s}.",
    "Never restart the {s} during the {team} team's release window on {month} {n}.",
    "The staging database for the {s} is refreshed every {n} days from a masked snapshot.",
    "{p} and {p2} pair on the {s} every Tuesday; {p2} reviews the {t} changes.",
    "Last sprint the {s} failed because of {issue}; the fix was a retry with backoff.",
    "{p} wants answers in short bullet points and dislikes long code comments.",
    "The {s} exposes metrics through {t} and alerts when p95 latency exceeds {n}0 ms.",
    "{p} moved from {place} to {place2} in {month} and is still looking for a flat.",
    "Use {t} to format the {s}; {p} set the line length to {n}0 characters.",
    "The {team} team chose {t} for the {s} after comparing it with {t2} for {n} weeks.",
    "{p} is allergic to peanuts and brings lunch to the {month} offsite in {place}.",
    "When {issue} shows up in the {s}, clear the {t} cache first, then redeploy.",
    "{p}'s daughter starts school in {place} in {month}, so {p} is off on the first day.",
    "The {s} migration to {t} is planned for {month}; {p} owns the rollback plan.",
    "Budget for the {s} is {n}0 thousand euros a year, mostly spent on {t} hosting.",
    "{p} recommended the book about {hobby} that {p2} mentioned in {month}.",
    "Tests of the {s} run against {t} in a container; locally {p} uses {t2}.",
    "The {s} API keys rotate every {n} months; the runbook is on the {team} wiki.",
    "{p} said the {s} dashboard in {t} is the first thing to check after a deploy.",
    "Since {month}, the {s} sends its logs to {t} and keeps them {n}0 days.",
    "{p} is learning {hobby} with {p2} and wants reminders on {month} {n}.",
]
QUESTIONS = [
    "What does {p} prefer for the {s}?",
    "Who is the on-call contact for the {s}?",
    "How did we fix {issue}?",
    "Where does {p} live?",
    "What hobby is {p} into?",
    "Why did we move the {s} to {t}?",
    "Which tool formats the {s}?",
    "When is the {s} migration planned?",
    "What should I check after deploying the {s}?",
    "Which team owns the {s}?",
    "Did {p} say anything about {t} in the {s}?",
    "What happened to the {s} in {month}?",
    "Who on the {team} team knows {t}?",
    "Is {p} working with {p2} on the {s}?",
    "What did {p} decide about {t} versus {t2}?",
    "When does {p} usually work from {place}?",
    "Which {t} setting did {p} change for the {s}?",
    "What was the root cause of {issue} in the {s}?",
    "Does {p} still do {hobby}?",
    "Where is the runbook for the {s} kept by the {team} team?",
    "How long does the {s} keep its logs in {t}?",
    "What is the latency alert threshold of the {s}?",
    "Who approves deploys of the {s} in {month}?",
    "What did {p} recommend to {p2}?",
    "Why is {p} off in {month}?",
]


def _fill(rng: random.Random, template: str) -> str:
    p, p2 = rng.sample(PEOPLE, 2)
    t, t2 = rng.sample(TOOLS, 2)
    place, place2 = rng.sample(PLACES, 2)
    return template.format(p=p, p2=p2, t=t, t2=t2, s=rng.choice(SERVICES), team=rng.choice(TEAMS),
                           issue=rng.choice(ISSUES), n=rng.randint(2, 9), n2=rng.randint(3, 9), place=place,
                           place2=place2, hobby=rng.choice(HOBBIES), month=rng.choice(MONTHS))


def sentences(n: int, seed: int = 0) -> list[str]:
    """``n`` distinct memory sentences (10-25 words each), the same for the same seed."""
    rng = random.Random(seed)
    out: list[str] = []
    seen: set[str] = set()
    while len(out) < n:
        s = _fill(rng, rng.choice(TEMPLATES))
        if s not in seen:
            seen.add(s)
            out.append(s)
    return out


class Questions:
    """A stream of recall queries that never repeats: every question drawn from one stream
    differs from all drawn before it (so a bench process that draws all its questions from
    one stream asks each at most once, whatever its sizes and phases).

    ``take(n)``: the next ``n`` questions, the same sequence for the same seed. Raises
    ValueError when the templates cannot give that many more distinct questions (tens of
    thousands are available).
    """

    MAX_TRIES = 200
    """Draws in a row that may all repeat earlier questions before the stream is taken as used up."""

    def __init__(self, seed: int = 1) -> None:
        self._rng = random.Random(seed)
        self.asked: set[str] = set()

    def take(self, n: int) -> list[str]:
        out: list[str] = []
        misses = 0
        while len(out) < n:
            q = _fill(self._rng, self._rng.choice(QUESTIONS))
            if q in self.asked:
                misses += 1
                if misses > self.MAX_TRIES:
                    raise ValueError(f"only {len(self.asked)} distinct questions could be drawn; asked for "
                                     f"{n - len(out)} more")
                continue
            misses = 0
            self.asked.add(q)
            out.append(q)
        return out


def queries(n: int, seed: int = 1) -> list[str]:
    """``n`` distinct recall queries over the same slots, the same for the same seed
    (``Questions(seed).take(n)``); raises ValueError beyond the distinct questions available."""
    return Questions(seed).take(n)
