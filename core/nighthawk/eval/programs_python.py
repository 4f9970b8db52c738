"""Eval programs that ask the model for Python itself: new objects and classes, closures, generators, loops.

Each natural function below is what a user would write; the checks under it say what a good run gives.
"""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from typing import Any

import nighthawk as nh

from .program import Program

__all__ = ["PROGRAMS"]


# --- an object of no predefined class ----------------------------------------------------------------


@nh.natural_function
def spawn_monster(description: str) -> Any:
    """natural
    Return a new object for the monster <description> describes: attributes `name` (str) and `hp` (int),
    and a method `hit(damage)` that lowers `hp` by `damage`, not below 0.
    """


def troll_takes_hits() -> None:
    troll = spawn_monster("a cave troll with 40 hit points")
    assert troll.hp == 40 and isinstance(troll.name, str)
    troll.hit(15)
    troll.hit(30)
    assert troll.hp == 0


def two_monsters_independent() -> None:
    bat, slime = spawn_monster("a bat with 6 hp"), spawn_monster("a slime with 9 hp")
    bat.hit(2)
    assert (bat.hp, slime.hp) == (4, 9)


MONSTER = Program(
    name="monster_object",
    summary="create an object with attributes and a working method, of a class the model defines",
    features=("dynamic class", "methods"),
    checks=(troll_takes_hits, two_monsters_independent),
)


# --- a closure ---------------------------------------------------------------------------------------


@nh.natural_function
def enemy_factory(theme: str) -> Callable[[int], Any]:
    """natural
    Return a function taking a `level` (int) that makes a new enemy object fitting <theme>: its `name` is a
    str and its `hp` is 12 times the level.
    """


def factory_scales_with_level() -> None:
    make = enemy_factory("haunted lighthouse")
    weak, strong = make(1), make(5)
    assert (weak.hp, strong.hp) == (12, 60) and isinstance(strong.name, str)


def factory_makes_new_objects() -> None:
    make = enemy_factory("desert ruins")
    assert make(2) is not make(2)


ENEMY_FACTORY = Program(
    name="enemy_factory",
    summary="return a closure that builds objects on each call",
    features=("closure", "first-class functions"),
    checks=(factory_scales_with_level, factory_makes_new_objects),
)


# --- a citation graph --------------------------------------------------------------------------------


def _graph() -> dict[int, set[int]]:
    return {1: set(), 2: {1}, 3: {1, 2}, 4: {2}}


@nh.natural_function
def edit_graph(cites: dict[int, set[int]], query: str) -> None:
    """natural
    <cites> maps each paper to the set of papers it cites. Change it in place as <query> asks.
    """


def new_citation_points_forward() -> None:
    cites = _graph()
    edit_graph(cites, "Paper 4 now also cites paper 3.")
    assert cites == {1: set(), 2: {1}, 3: {1, 2}, 4: {2, 3}}


def citation_dropped() -> None:
    cites = _graph()
    edit_graph(cites, "Paper 3 no longer cites paper 1.")
    assert cites == {1: set(), 2: {1}, 3: {2}, 4: {2}}


def paper_added() -> None:
    cites = _graph()
    edit_graph(cites, "Add paper 5, which cites papers 3 and 4.")
    assert cites[5] == {3, 4} and len(cites) == 5


def paper_removed_everywhere() -> None:
    cites = _graph()
    edit_graph(cites, "Remove paper 2 from the graph entirely.")
    assert cites == {1: set(), 3: {1}, 4: set()}


GRAPH = Program(
    name="citation_graph",
    summary="edit a dict of sets in place from requests about edges and nodes",
    features=("in-place mutation", "nested containers"),
    checks=(new_citation_points_forward, citation_dropped, paper_added, paper_removed_everywhere),
)


# --- a tagger per language ---------------------------------------------------------------------------


@nh.natural_function
def tagger_for(language: str, vocabulary: list[str]) -> Callable[[str], str]:
    """natural
    Return a function that takes one word of <vocabulary> (words of <language>) and returns its part of
    speech as one of "NOUN", "VERB", "ADJ", "DET".
    """


def spanish_words_tagged() -> None:
    tag = tagger_for("Spanish", ["el", "perro", "corre", "rojo"])
    assert [tag(word) for word in ["perro", "el", "rojo", "corre"]] == ["NOUN", "DET", "ADJ", "VERB"]


def german_words_tagged() -> None:
    tag = tagger_for("German", ["die", "Katze", "schläft", "müde"])
    assert [tag(word) for word in ["schläft", "Katze", "müde", "die"]] == ["VERB", "NOUN", "ADJ", "DET"]


TAGGER = Program(
    name="language_tagger",
    summary="return a function whose behaviour depends on the input language",
    features=("closure", "generated function"),
    checks=(spanish_words_tagged, german_words_tagged),
)


# --- propose and verify ------------------------------------------------------------------------------


@nh.natural_function
def propose(riddle: str, rejected: tuple[str, ...]) -> str:
    """natural
    Return a short answer to the riddle <riddle> that is not among <rejected>.
    """


@nh.natural_function
def verify(riddle: str, answer: str) -> bool:
    """natural
    Return whether <answer> correctly answers the riddle <riddle>.
    """


def solve_riddle(riddle: str, rounds: int = 3) -> str | None:
    rejected: tuple[str, ...] = ()
    for _ in range(rounds):
        answer = propose(riddle, rejected)
        if verify(riddle, answer):
            return answer
        rejected += (answer,)
    return None


def keys_riddle_solved() -> None:
    answer = solve_riddle("I have keys but open no locks, and you can play me. What am I?")
    assert answer is not None and "piano" in answer.lower()


def wrong_answer_rejected() -> None:
    assert verify("What has a neck but no head?", "a giraffe") is False


RIDDLES = Program(
    name="riddle_loop",
    summary="a proposer-verifier loop in Python over two natural functions with immutable state",
    features=("control loop", "bool return"),
    checks=(keys_riddle_solved, wrong_answer_rejected),
)


# --- subclasses made to order ------------------------------------------------------------------------


class Shop(ABC):
    def __init__(self, name: str) -> None:
        self.name = name

    @abstractmethod
    def sells(self, item: str) -> bool:
        """Whether this shop would have `item` for sale."""


@nh.natural_function
def shop_class(kind: str) -> type[Shop]:
    """natural
    Define and return a subclass of <Shop> for a <kind>, whose `sells` knows what such a shop sells.
    """


def bakery_subclass() -> None:
    Bakery = shop_class("bakery")
    shop = Bakery("Crumbs")
    assert issubclass(Bakery, Shop) and shop.name == "Crumbs"
    assert shop.sells("sourdough loaf") and not shop.sells("claw hammer")


def hardware_subclass() -> None:
    Hardware = shop_class("hardware store")
    shop = Hardware("Bolt & Co")
    assert isinstance(shop, Shop) and shop.sells("claw hammer") and not shop.sells("croissant")


SHOPS = Program(
    name="shop_subclasses",
    summary="define subclasses of an abstract class from a description, then instantiate them",
    features=("subclass", "abstract method"),
    checks=(bakery_subclass, hardware_subclass),
)


# --- generators --------------------------------------------------------------------------------------


@nh.natural_function
def countdown(start: int) -> Iterator[str]:
    """natural
    Return a generator that yields the English words for the numbers from <start> down to one, lower case.
    """


@nh.natural_function
def headlines(notes: list[str]) -> Iterator[str]:
    for note in notes:
        headline = ""
        """natural
        Turn <note> into a headline in <:headline>: the same words, each capitalised, no final full stop.
        """
        yield headline


def countdown_is_a_generator() -> None:
    words = countdown(4)
    assert inspect.isgenerator(words) and list(words) == ["four", "three", "two", "one"]


def headlines_stream_lazily() -> None:
    stream = headlines(["rain expected today.", "market opens late."])
    assert next(stream) == "Rain Expected Today"
    assert next(stream) == "Market Opens Late"


GENERATORS = Program(
    name="generators",
    summary="return a generator object; run a block once per item a generator yields",
    features=("generator", "block in a loop"),
    checks=(countdown_is_a_generator, headlines_stream_lazily),
)


# --- wordle ------------------------------------------------------------------------------------------


def wordle_candidates(words: list[str], guesses: list[tuple[str, str]]) -> list[str]:
    @nh.natural_function
    def consistent(candidates: list[str], guess: str, marks: str) -> list[str]:
        """natural
        <marks> scores the Wordle guess <guess> letter by letter: "G" right letter in the right place,
        "Y" in the word but elsewhere, "." not in the word. Return the words of <candidates> that could
        still be the answer, in order.
        """

    for guess, marks in guesses:
        words = consistent(words, guess, marks)
    return words


WORDS = ["crane", "crate", "trace", "brave", "grace", "caret", "react", "cater"]


def one_guess_narrows() -> None:
    assert wordle_candidates(WORDS, [("crane", "YGG.G")]) == ["trace", "grace"]


def two_guesses_narrow() -> None:
    assert wordle_candidates(WORDS, [("brave", ".GG.G"), ("trace", ".GGGG")]) == ["grace"]


WORDLE = Program(
    name="wordle_helper",
    summary="a natural function nested in a plain function, applied once per guess",
    features=("nested natural function",),
    checks=(one_guess_narrows, two_guesses_narrow),
)


PROGRAMS = (MONSTER, ENEMY_FACTORY, GRAPH, TAGGER, RIDDLES, SHOPS, GENERATORS, WORDLE)
