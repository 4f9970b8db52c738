"""Eval programs over objects the caller owns: records built, lists and dicts changed in place, methods called.

Each natural function below is what a user would write; the checks under it say what a good run gives.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import nighthawk as nh

from .program import Program, raises

__all__ = ["PROGRAMS"]


# --- a fight, in place -------------------------------------------------------------------------------


@dataclass
class Fighter:
    name: str
    hp: int


def _party() -> list[Fighter]:
    return [Fighter("Ash", 20), Fighter("Bree", 12), Fighter("Cato", 8)]


@nh.natural_function
def play_turn(fighters: list[Fighter], action: str) -> None:
    """natural
    Apply <action> to the fighters of <fighters>, changing the objects and the list in place. A fighter
    whose hp falls to 0 or below leaves the list.
    """


def hit_lowers_one_fighter() -> None:
    fighters = _party()
    play_turn(fighters, "Ash hits Bree for 5 damage.")
    assert [(f.name, f.hp) for f in fighters] == [("Ash", 20), ("Bree", 7), ("Cato", 8)]


def healing_reaches_everyone() -> None:
    fighters = _party()
    play_turn(fighters, "A healing spring restores 3 hp to every fighter.")
    assert [f.hp for f in fighters] == [23, 15, 11]


def knocked_out_fighter_leaves() -> None:
    fighters = _party()
    cato = fighters[2]
    play_turn(fighters, "A falling rock deals 10 damage to Cato.")
    assert [f.name for f in fighters] == ["Ash", "Bree"] and cato.hp <= 0


ARENA = Program(
    name="arena_turn",
    summary="update a list of objects from a description of what happened in a turn",
    features=("in-place mutation", "list removal"),
    checks=(hit_lowers_one_fighter, healing_reaches_everyone, knocked_out_fighter_leaves),
)


# --- a calendar through its methods ------------------------------------------------------------------


class Calendar:
    """Appointments by weekday; only `book`, `cancel` and `on` are meant for callers."""

    DAYS = ("monday", "tuesday", "wednesday", "thursday", "friday")

    def __init__(self) -> None:
        self._slots: dict[str, list[str]] = {day: [] for day in self.DAYS}
        self.operations = 0

    def book(self, title: str, day: str) -> None:
        self._slots[day.lower()].append(title)
        self.operations += 1

    def cancel(self, title: str) -> None:
        for titles in self._slots.values():
            if title in titles:
                titles.remove(title)
                self.operations += 1
                return
        raise KeyError(title)

    def on(self, day: str) -> list[str]:
        return list(self._slots[day.lower()])


@nh.natural_function
def handle_request(calendar: Calendar, request: str) -> None:
    """natural
    Carry out <request> on <calendar>, calling only its public methods.
    """


def two_bookings_made() -> None:
    calendar = Calendar()
    handle_request(calendar, "Book 'dentist' on Tuesday and 'lunch with Sam' on Friday.")
    assert calendar.on("tuesday") == ["dentist"] and calendar.on("friday") == ["lunch with Sam"]
    assert calendar.operations == 2


def booking_moved() -> None:
    calendar = Calendar()
    calendar.book("standup", "monday")
    calendar.book("review", "wednesday")
    handle_request(calendar, "Move 'review' to Thursday.")
    assert calendar.on("wednesday") == [] and calendar.on("thursday") == ["review"]
    assert calendar.operations == 4  # through cancel and book, not by editing the private slots


CALENDAR = Program(
    name="calendar_requests",
    summary="change an object's state through its public methods only",
    features=("method calls", "tool-style use"),
    checks=(two_bookings_made, booking_moved),
)


# --- building a dataclass ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Character:
    name: str
    role: Literal["warrior", "mage", "rogue"]
    strength: int
    magic: int


@nh.natural_function
def build_character(description: str) -> Character | None:
    hero: Character | None = None
    """natural
    Create the <Character> that <description> describes, with `strength` and `magic` between 1 and 10,
    and store it in <:hero>.
    """
    return hero


def wizard_built() -> None:
    hero = build_character("Orla, a frail old wizard who reads the stars")
    assert hero is not None and (hero.name, hero.role) == ("Orla", "mage")
    assert 1 <= hero.strength < hero.magic <= 10


def brute_built() -> None:
    hero = build_character("Grum the axe-swinging brute, who never learned a single spell")
    assert hero is not None and (hero.name, hero.role) == ("Grum", "warrior")
    assert 1 <= hero.magic < hero.strength <= 10


CHARACTER = Program(
    name="character_sheet",
    summary="create an instance of a predefined frozen dataclass from a description",
    features=("dataclass write", "Literal field"),
    checks=(wizard_built, brute_built),
)


# --- coffee orders -----------------------------------------------------------------------------------

MENU = {"espresso": ("single", "double"), "latte": ("small", "large"), "mocha": ("small", "large"), "tea": ("one size",)}


@dataclass(frozen=True)
class OrderLine:
    drink: str
    size: str
    quantity: int


class NotOnMenu(ValueError):
    """The order asks for something the shop does not sell."""


@nh.natural_function
def take_order(request: str) -> list[OrderLine]:
    """natural
    Return the <OrderLine>s of the coffee order <request>, in the order asked, with drinks and sizes
    spelled as in <MENU>. If the order includes anything not on <MENU>, raise <NotOnMenu> naming it.
    """


def lattes_and_mocha() -> None:
    lines = take_order("two small lattes and a large mocha please")
    assert lines == [OrderLine("latte", "small", 2), OrderLine("mocha", "large", 1)]


def tea_has_one_size() -> None:
    assert take_order("a tea and a double espresso") == [OrderLine("tea", "one size", 1), OrderLine("espresso", "double", 1)]


def cake_is_refused() -> None:
    assert raises(NotOnMenu, lambda: take_order("one latte, small, and a slice of carrot cake"))


COFFEE = Program(
    name="coffee_order",
    summary="parse an order into dataclass lines limited to a menu, raising for anything else",
    features=("structured output", "custom exception"),
    checks=(lattes_and_mocha, tea_has_one_size, cake_is_refused),
)


# --- stock taken by orders ---------------------------------------------------------------------------

RECIPES = {"pancakes": {"egg": 2, "flour": 1, "milk": 1}, "omelette": {"egg": 3, "cheese": 1}, "toast": {"bread": 2}}


class OutOfStock(Exception):
    """The pantry cannot make the order."""


@nh.natural_function
def cook(pantry: dict[str, int], order: str) -> None:
    """natural
    Take from <pantry> (in place) the ingredients that the dishes of <order> need, by <RECIPES>. If the
    pantry cannot make the whole order, change nothing and raise <OutOfStock>.
    """


def ingredients_taken() -> None:
    pantry = {"egg": 6, "flour": 2, "milk": 2, "cheese": 1, "bread": 4}
    cook(pantry, "one pancakes and two toasts")
    assert pantry == {"egg": 4, "flour": 1, "milk": 1, "cheese": 1, "bread": 0}


def short_pantry_untouched() -> None:
    pantry = {"egg": 4, "flour": 1, "milk": 1, "cheese": 2, "bread": 0}
    before = dict(pantry)
    assert raises(OutOfStock, lambda: cook(pantry, "two omelettes"))
    assert pantry == before


PANTRY = Program(
    name="pantry_stock",
    summary="update an inventory dict in place, or raise and leave it whole",
    features=("in-place mutation", "all or nothing"),
    checks=(ingredients_taken, short_pantry_untouched),
)


# --- tasks marked done -------------------------------------------------------------------------------


@dataclass
class Task:
    title: str
    done: bool = False


@nh.natural_function
def mark_finished(tasks: list[Task], report: str) -> None:
    """natural
    Set `done` to True on each task of <tasks> that <report> says is finished; change nothing else.
    """


def two_tasks_finished() -> None:
    tasks = [Task("write slides"), Task("book venue"), Task("send invites")]
    mark_finished(tasks, "Slides are written and the invites went out this morning; the venue is still open.")
    assert [task.done for task in tasks] == [True, False, True]


def done_task_stays_done() -> None:
    tasks = [Task("pay rent", done=True), Task("fix bike")]
    mark_finished(tasks, "Finally got the bike repaired.")
    assert [task.done for task in tasks] == [True, True]


TASKS = Program(
    name="task_marking",
    summary="set attributes on objects in a list from a free-text report",
    features=("attribute mutation",),
    checks=(two_tasks_finished, done_task_stays_done),
)


# --- a small bookshop --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Book:
    title: str
    author: str
    genre: str
    pages: int


SHELF = (
    Book("The Salt Road", "I. Marsh", "historical fiction", 512),
    Book("Quiet Circuits", "D. Okafor", "science fiction", 288),
    Book("Forty Soups", "R. Lindqvist", "cookery", 160),
    Book("Night Ferry", "P. Duarte", "crime", 224),
)


@nh.natural_function
def recommend(request: str) -> Book:
    """natural
    Return the book of <SHELF> (the object itself) that best answers <request>. If no book fits, raise
    LookupError.
    """


def short_crime_found() -> None:
    assert recommend("something gripping about a murder, not too long") is SHELF[3]


def cookbook_found() -> None:
    assert recommend("I want to cook warming dinners this winter") is SHELF[2]


def gardening_not_found() -> None:
    assert raises(LookupError, lambda: recommend("a guide to pruning fruit trees"))


BOOKSHOP = Program(
    name="bookshop",
    summary="pick the matching object out of a catalogue, or raise when none fits",
    features=("object identity", "builtin exception"),
    checks=(short_crime_found, cookbook_found, gardening_not_found),
)


# --- a health diary ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Entry:
    kind: Literal["medication", "symptom", "measurement"]
    name: str
    amount: float | None = None
    unit: str | None = None


@dataclass
class Diary:
    entries: list[Entry] = field(default_factory=list)


@nh.natural_function
def log_message(diary: Diary, message: str) -> str:
    """natural
    The user wrote <message> to their health diary <diary>. Append one <Entry> per thing it reports to
    `diary.entries` and return a one-sentence confirmation. A medication or measurement needs its amount;
    if one is missing, append nothing and return a question asking for it (ending with "?").
    """


def medication_logged() -> None:
    diary = Diary()
    reply = log_message(diary, "Took 200 mg of ibuprofen after lunch.")
    logged = [(entry.kind, entry.name.lower(), entry.amount, entry.unit) for entry in diary.entries]
    assert logged == [("medication", "ibuprofen", 200, "mg")] and isinstance(reply, str) and reply


def missing_amount_asked() -> None:
    diary = Diary()
    reply = log_message(diary, "I measured my blood sugar this morning.")
    assert diary.entries == [] and reply.strip().endswith("?")


HEALTH = Program(
    name="health_diary",
    summary="a chat turn that appends typed entries to an object, or asks a question instead",
    features=("in-place mutation", "conversation"),
    checks=(medication_logged, missing_amount_asked),
)


PROGRAMS = (ARENA, CALENDAR, CHARACTER, COFFEE, PANTRY, TASKS, BOOKSHOP, HEALTH)
