"""Eval programs over text and numbers: parsing, classifying, filtering, computing.

Each natural function below is what a user would write; the checks under it say what a good run gives.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum
from typing import Literal

import nighthawk as nh

from .program import Program, raises

__all__ = ["PROGRAMS"]


# --- numbers written in words ----------------------------------------------------------------------------


@nh.natural_function
def mean_of_three(a: str, b: str, c: str) -> float:
    mean = 0.0
    """natural
    <a>, <b> and <c> are numbers, each written either in digits or as a word of some language.
    Store their arithmetic mean in <:mean>.
    """
    return mean


def digits_and_words() -> None:
    assert mean_of_three("4", "six", "ocho") == 6.0


def fractions_and_negatives() -> None:
    assert math.isclose(mean_of_three("-3", "nine", "quinze"), 7.0)


def three_languages() -> None:
    assert math.isclose(mean_of_three("zwei", "1.5", "cinq"), 2.8333333333333335, rel_tol=1e-6)


AVERAGE = Program(
    name="words_average",
    summary="average three numbers written as digits or as words in several languages",
    features=("write binding", "parsing"),
    checks=(digits_and_words, fractions_and_negatives, three_languages),
)


# --- brackets ----------------------------------------------------------------------------------------


@nh.natural_function
def close_brackets(expression: str, intent: str) -> str:
    """natural
    <expression> lacks one or more closing parentheses. Return it with the missing ")" inserted where
    <intent> says they belong, changing nothing else (spaces included).
    """


def precedence_from_intent() -> None:
    fixed = close_brackets("(1 + 2 * 3", "add 1 and 2 first, then multiply the sum by 3")
    assert fixed == "(1 + 2) * 3" and eval(fixed) == 9


def nested_groups() -> None:
    fixed = close_brackets("((2 + 3) * (4 - 1", "the product of the sum and of the difference")
    assert fixed == "((2 + 3) * (4 - 1))" and eval(fixed) == 15


BRACKETS = Program(
    name="bracket_closing",
    summary="insert missing closing parentheses where the stated meaning needs them",
    features=("return value", "reasoning"),
    checks=(precedence_from_intent, nested_groups),
)


# --- email triage ------------------------------------------------------------------------------------


class Queue(Enum):
    BILLING = "billing"
    TECHNICAL = "technical"
    ACCOUNT = "account"


class NoQueueFits(Exception):
    """The message belongs in none of the support queues."""


@nh.natural_function
def route_email(text: str) -> Queue:
    """natural
    Return the member of <Queue> that should handle the support email <text>. If none fits, raise
    <NoQueueFits> with a short reason.
    """


def invoice_goes_to_billing() -> None:
    assert route_email("Hello, I was charged twice for my March invoice. Please refund one.") is Queue.BILLING


def crash_goes_to_technical() -> None:
    assert route_email("The app closes itself every time I open the export screen.") is Queue.TECHNICAL


def password_goes_to_account() -> None:
    assert route_email("I cannot log in since I changed my email address; please reset my login.") is Queue.ACCOUNT


def recipe_fits_no_queue() -> None:
    assert raises(NoQueueFits, lambda: route_email("Grandma's lemon cake: 200 g flour, 3 eggs, one lemon."))


EMAILS = Program(
    name="email_routing",
    summary="classify a support email into an Enum, raising a custom error when no queue fits",
    features=("enum return", "custom exception"),
    checks=(invoice_goes_to_billing, crash_goes_to_technical, password_goes_to_account, recipe_fits_no_queue),
)


# --- sentiment ---------------------------------------------------------------------------------------

Mood = Literal["positive", "negative", "mixed"]


@nh.natural_function
def review_mood(review: str) -> Mood:
    """natural
    Return the overall sentiment of the product review <review>.
    """


def praise_is_positive() -> None:
    assert review_mood("Arrived early, fits perfectly and the fabric feels great.") == "positive"


def complaint_is_negative() -> None:
    assert review_mood("Broke after two days and support never answered.") == "negative"


def praise_and_complaint_is_mixed() -> None:
    assert review_mood("Lovely colour, but the zip jammed on the first day.") == "mixed"


SENTIMENT = Program(
    name="review_sentiment",
    summary="label a review with one value of a Literal type",
    features=("Literal return",),
    checks=(praise_is_positive, complaint_is_negative, praise_and_complaint_is_mixed),
)


# --- masking -----------------------------------------------------------------------------------------


@nh.natural_function
def mask_contacts(text: str) -> str:
    masked = ""
    """natural
    Copy <text> into <:masked> with every character of each email address and phone number replaced by
    "*" (one star per character); leave all other text as it is.
    """
    return masked


def phone_number_masked() -> None:
    assert mask_contacts("Call me on 555-0142 after six.") == "Call me on ******** after six."


def email_masked_punctuation_kept() -> None:
    assert mask_contacts("Write to ana@example.org, not to me.") == "Write to ***************, not to me."


MASKING = Program(
    name="contact_masking",
    summary="build a string with emails and phone numbers starred out, character for character",
    features=("write binding", "exact strings"),
    checks=(phone_number_masked, email_masked_punctuation_kept),
)


# --- feed filtering ----------------------------------------------------------------------------------

POSTS = (
    "New trail opened above the lake: 12 km of ridge views",
    "Quarterly earnings beat expectations for the chip maker",
    "Packing list for a three-day hut-to-hut hike",
    "Ten tips for sourdough starters",
    "Which boots survive muddy spring trails?",
)


@nh.natural_function
def keep_for_reader(posts: list[str], interest: str) -> list[str]:
    """natural
    Return a new list with the posts of <posts> that a reader interested in <interest> would want to see,
    in their original order. Do not change <posts>.
    """


def hiking_posts_kept_in_order() -> None:
    posts = list(POSTS)
    assert keep_for_reader(posts, "hiking") == [POSTS[0], POSTS[2], POSTS[4]]
    assert posts == list(POSTS)


def baking_posts_only() -> None:
    assert keep_for_reader(list(POSTS), "baking bread") == [POSTS[3]]


FEED = Program(
    name="feed_filter",
    summary="filter a list of strings by a reader's interest without touching the input",
    features=("functional list", "no side effects"),
    checks=(hiking_posts_kept_in_order, baking_posts_only),
)


# --- numbers by a property ---------------------------------------------------------------------------


@nh.natural_function
def numbers_that(numbers: list[int], condition: str) -> list[int]:
    """natural
    Return the numbers of <numbers> that satisfy <condition>, in their order.
    """


def primes_selected() -> None:
    assert numbers_that([4, 7, 9, 11, 15, 23, 27], "is a prime number") == [7, 11, 23]


def squares_selected() -> None:
    assert numbers_that([10, 16, 20, 25, 36, 50], "is a perfect square") == [16, 25, 36]


def digit_sums_selected() -> None:
    assert numbers_that([19, 28, 30, 37, 46, 55], "has decimal digits that add up to 10") == [19, 28, 37, 46, 55]


NUMBERS = Program(
    name="number_filter",
    summary="keep the numbers of a list that have a property stated in words",
    features=("list return",),
    checks=(primes_selected, squares_selected, digit_sums_selected),
)


# --- word problems -----------------------------------------------------------------------------------


@nh.natural_function
def solve_word_problem(problem: str) -> float:
    answer = 0.0
    """natural
    Work out <problem> step by step, computing with Python expressions, and store the final number in
    <:answer>.
    """
    return answer


def bakery_problem() -> None:
    problem = (
        "A bakery sells muffins at 3 dollars each. On Monday it sells 14 muffins, on Tuesday twice as many, "
        "and on Wednesday 5 fewer than on Tuesday. How many dollars did it take in over the three days?"
    )
    assert solve_word_problem(problem) == 3 * (14 + 28 + 23)


def garden_problem() -> None:
    problem = (
        "A garden bed is 6 metres long and 2.5 metres wide. Seed covers 0.75 square metres per packet. "
        "How many packets are needed, rounded up to whole packets?"
    )
    assert solve_word_problem(problem) == 20


def savings_problem() -> None:
    problem = (
        "Lena saves 40 dollars a week. After 9 weeks she spends a quarter of her savings on a jacket. "
        "How many dollars does she have left?"
    )
    assert solve_word_problem(problem) == 270


WORD_PROBLEMS = Program(
    name="word_problems",
    summary="solve grade-school word problems by evaluating Python expressions",
    features=("nh_eval arithmetic", "write binding"),
    checks=(bakery_problem, garden_problem, savings_problem),
)


# --- fact checking -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Verdict:
    claim: str
    holds: bool


@nh.natural_function
def check_facts(text: str, log: list[Verdict]) -> None:
    """natural
    Split <text> into its factual claims. For each claim, in order, append to <log> (in place, keeping
    what it already holds) a <Verdict> with the claim and whether it is true.
    """


def three_claims_appended() -> None:
    log: list[Verdict] = []
    check_facts("Water boils at 100 °C at sea level. The Moon is larger than the Earth. Paris is in France.", log)
    assert [verdict.holds for verdict in log] == [True, False, True]


def earlier_entries_kept() -> None:
    first = Verdict("Snow is cold.", True)
    log = [first]
    check_facts("Spiders have six legs. Venus orbits the Sun.", log)
    assert log[0] is first and [verdict.holds for verdict in log[1:]] == [False, True]


FACTS = Program(
    name="fact_log",
    summary="append a verdict per claim to a list passed in, in place",
    features=("in-place mutation", "dataclass values"),
    checks=(three_claims_appended, earlier_entries_kept),
)


PROGRAMS = (AVERAGE, BRACKETS, EMAILS, SENTIMENT, MASKING, FEED, NUMBERS, WORD_PROBLEMS, FACTS)
