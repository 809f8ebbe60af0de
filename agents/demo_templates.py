# Chinese texts use full-width punctuation on purpose.
# ruff: noqa: RUF001
"""The offline demo model's plan templates: a plan header and its subtasks, each with the
outcome the demo reports when it finishes it, chosen by keywords in the request (a trip, a
piece of writing, an event, learning something, or a generic one; Chinese requests get a
Chinese plan)."""

from __future__ import annotations

import re

_NUMBER_WORDS = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "a": 1, "an": 1,
}  # fmt: skip
TRIP_WORDS = re.compile(r"\b(trip|travel|vacation|holiday|journey|visit|itinerary)\b", re.I)

# A few destinations get real highlights; any other place gets a generic itinerary.
_HIGHLIGHTS = {
    "kyoto": [
        "Fushimi Inari at sunrise, then Gion and Pontocho in the evening",
        "Arashiyama bamboo grove and Tenryu-ji in the morning, Kinkaku-ji after lunch",
        "Kiyomizu-dera and the Higashiyama lanes, Nishiki Market for lunch",
        "a half-day trip to Nara's deer park and Todai-ji",
        "the Philosopher's Path and Ginkaku-ji",
    ],
    "tokyo": [
        "Asakusa and Senso-ji, then the Sumida river to Odaiba",
        "Meiji Shrine, Harajuku and Shibuya crossing at dusk",
        "Tsukiji outer market and the Imperial Palace East Gardens",
    ],
    "paris": [
        "the Louvre in the morning and a walk along the Seine to Notre-Dame",
        "Montmartre and Sacre-Coeur, dinner in the Marais",
        "the Musee d'Orsay and the Eiffel Tower at sunset",
    ],
}


def days_of(request: str) -> int:
    found = re.search(r"\b(\d+|[a-z]+)[- ]days?\b", request, re.I)
    if not found:
        return 3
    word = found.group(1).lower()
    days = int(word) if word.isdigit() else _NUMBER_WORDS.get(word, 3)
    return max(1, min(days, 14))


def destination_of(request: str) -> str:
    found = re.search(r"\b(?:to|in|around|visit(?:ing)?)\s+((?:[A-Z][\w'-]*\s?){1,3})", request)
    return found.group(1).strip() if found else "the destination"


def _step(name: str, description: str, expected: str, outcome: str) -> dict[str, str]:
    return {
        "name": name,
        "description": description,
        "expected_outcome": expected,
        "outcome": outcome,
    }


def _trip_plan(request: str) -> tuple[dict[str, str], list[dict[str, str]]]:
    days = days_of(request)
    place = destination_of(request)
    highlights = _HIGHLIGHTS.get(place.lower(), [])
    if highlights:
        itinerary = "; ".join(
            f"day {n + 1}: {highlights[n % len(highlights)]}" for n in range(days)
        )
    else:
        itinerary = (
            f"{days} days, each grouping sights that are close together in {place}, with a "
            "lunch stop and one evening activity"
        )
    header = {
        "name": f"{days}-day trip to {place}",
        "description": f"Prepare everything for the request: {request}",
        "expected_outcome": f"Dates, transport, a place to stay and a day-by-day plan for {place}.",
    }
    steps = [
        _step(
            "Fix the dates and the budget",
            f"Pick {days} consecutive days for {place} and set a budget per person.",
            "Travel dates and a budget split into transport, lodging, food and tickets.",
            f"Chose {days} consecutive weekdays outside public holidays; budget split 35% "
            "lodging, 25% transport, 25% food, 15% tickets and passes.",
        ),
        _step(
            f"Book transport to {place}",
            f"Compare the ways to get to {place} and around it once there.",
            "Outbound and return tickets, plus a plan for local transport.",
            f"Picked the fastest rail or air connection to {place} with reserved seats both "
            "ways, and a day pass for local buses and trains.",
        ),
        _step(
            "Choose where to stay",
            "Find a central, well-connected area and a place within budget.",
            "A booked room for every night of the trip.",
            f"Booked {days - 1 if days > 1 else 1} night(s) in a central area a short walk "
            "from a main station, free cancellation until two days before arrival.",
        ),
        _step(
            "Draft the day-by-day itinerary",
            "Group nearby sights per day so little time is spent travelling.",
            f"A plan for each of the {days} days.",
            f"Itinerary ready: {itinerary}.",
        ),
    ]
    return header, steps


def _writing_plan(request: str) -> tuple[dict[str, str], list[dict[str, str]]]:
    header = {
        "name": "Writing plan",
        "description": f"Produce the text asked for: {request}",
        "expected_outcome": "A finished, proofread text that answers the request.",
    }
    steps = [
        _step(
            "Define the audience and the key message",
            "Decide who reads it and the one thing they should take away.",
            "A one-sentence key message and a reader profile.",
            "Audience: informed non-specialists; key message stated in one sentence at the top.",
        ),
        _step(
            "Collect material",
            "Gather facts, examples and sources.",
            "A list of points with a source for each.",
            "Collected seven supporting points, each with a source and one concrete example.",
        ),
        _step(
            "Outline the structure",
            "Order the points into sections.",
            "An outline with section headings.",
            "Outline: introduction, three body sections, a short conclusion with next steps.",
        ),
        _step(
            "Write and polish the draft",
            "Write the full text, then edit for clarity and length.",
            "A proofread final version.",
            "Final draft written and trimmed by 15%; spelling and facts checked.",
        ),
    ]
    return header, steps


def _event_plan(request: str) -> tuple[dict[str, str], list[dict[str, str]]]:
    header = {
        "name": "Event plan",
        "description": f"Organise the event: {request}",
        "expected_outcome": "A venue, invited guests, catering and a schedule for the day.",
    }
    steps = [
        _step(
            "Set the date, venue and budget",
            "Choose when and where, within a budget.",
            "A reserved venue and a budget.",
            "Saturday afternoon chosen; venue for 40 people reserved within budget.",
        ),
        _step(
            "Invite the guests",
            "Draw up the guest list and send invitations.",
            "Invitations sent with an RSVP date.",
            "Guest list of 35 drafted; invitations sent with an RSVP date two weeks ahead.",
        ),
        _step(
            "Arrange food and activities",
            "Book catering and plan what happens.",
            "Catering booked and activities chosen.",
            "Buffet catering booked for 40 with vegetarian options; two activities planned.",
        ),
        _step(
            "Prepare the schedule for the day",
            "Write the timeline and who does what.",
            "A timed run sheet.",
            "Run sheet from setup to clean-up, each slot with a named person responsible.",
        ),
    ]
    return header, steps


def _learning_plan(request: str) -> tuple[dict[str, str], list[dict[str, str]]]:
    header = {
        "name": "Learning plan",
        "description": f"Learn what was asked: {request}",
        "expected_outcome": "A schedule, resources and checkpoints to measure progress.",
    }
    steps = [
        _step(
            "Set the goal and the starting point",
            "Say what 'done' looks like and what is known already.",
            "A measurable goal.",
            "Goal written as a concrete skill test; current level assessed as beginner.",
        ),
        _step(
            "Pick the resources",
            "Choose a main course or book and practice material.",
            "One main resource and one practice source.",
            "Chose one structured course plus weekly exercises from a practice site.",
        ),
        _step(
            "Build a weekly schedule",
            "Fit study sessions into the week.",
            "A weekly timetable.",
            "Four 45-minute sessions a week, with a review session every Sunday.",
        ),
        _step(
            "Define checkpoints",
            "Plan how progress is checked.",
            "Dated checkpoints with a small test each.",
            "Checkpoints every two weeks, each with a short self-test and a mini project.",
        ),
    ]
    return header, steps


def _generic_plan(request: str) -> tuple[dict[str, str], list[dict[str, str]]]:
    header = {
        "name": shorten(request, 60) or "Plan",
        "description": f"Carry out the request: {request}",
        "expected_outcome": "The requested result, reviewed and summarised.",
    }
    steps = [
        _step(
            "Clarify the goal and constraints",
            "Restate the request and list the constraints.",
            "A short statement of the goal and its limits.",
            "Goal and constraints written down in five bullet points.",
        ),
        _step(
            "Gather information and options",
            "Collect what is needed and compare the options.",
            "A short list of options with pros and cons.",
            "Compared three options; the second fits the constraints best.",
        ),
        _step(
            "Do the main work",
            "Carry out the chosen option.",
            "The main result.",
            "Main result produced following the chosen option.",
        ),
        _step(
            "Review and summarise",
            "Check the result against the goal.",
            "A checked result and a summary.",
            "Result checked against every constraint; summary written.",
        ),
    ]
    return header, steps


def _chinese_plan(request: str) -> tuple[dict[str, str], list[dict[str, str]]]:
    header = {
        "name": shorten(request, 30) or "计划",
        "description": f"完成用户的请求：{request}",
        "expected_outcome": "一个经过检查、可以直接使用的结果，并附简要总结。",
    }
    steps = [
        _step(
            "明确目标和约束",
            "复述请求，列出时间、预算等限制。",
            "一段清楚的目标说明。",
            "已用五条要点写清目标和约束。",
        ),
        _step(
            "收集信息和方案",
            "收集所需信息，比较可选方案。",
            "一份列出优缺点的方案清单。",
            "比较了三个方案，第二个最符合约束。",
        ),
        _step(
            "执行主要工作", "按选定方案完成主体工作。", "主要成果。", "已按选定方案完成主体工作。"
        ),
        _step(
            "检查并总结",
            "对照目标检查结果。",
            "检查过的结果和总结。",
            "已逐条对照约束检查结果，并写好总结。",
        ),
    ]
    return header, steps


def shorten(text: str, limit: int) -> str:
    one_line = " ".join(text.split())
    return one_line if len(one_line) <= limit else one_line[: limit - 1].rstrip() + "…"


def plan_for(request: str, *, language: str) -> tuple[dict[str, str], list[dict[str, str]]]:
    """The plan header and the subtasks (each with the outcome the demo will report)."""
    if language == "zh":
        return _chinese_plan(request)
    lowered = request.lower()
    if TRIP_WORDS.search(lowered):
        return _trip_plan(request)
    if re.search(r"\b(write|draft|report|essay|article|blog|post|paper)\b", lowered):
        return _writing_plan(request)
    if re.search(r"\b(party|event|wedding|conference|meetup|birthday|workshop)\b", lowered):
        return _event_plan(request)
    if re.search(r"\b(learn|study|course|practice|master)\b", lowered):
        return _learning_plan(request)
    return _generic_plan(request)
