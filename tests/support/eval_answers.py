"""Right answers to every program of `nighthawk.eval`: a scripted model that does what each block asks.

`ANSWERS[name]` is a `CallbackExecutor` callback `(program_text, step_locals) -> StepResponse` that works the
block out from the live values, the way a good model would, through the same tools (`nh_eval` for in-place
changes, `nh_assign`, the outcome). A program with several blocks tells them apart by their text.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

from nighthawk.testing import Expression, StepResponse, raise_outcome, return_outcome

__all__ = ["ANSWERS"]

Answer = Callable[[str, Mapping[str, Any]], StepResponse]


def returning(value: object) -> StepResponse:
    """Return a Python value (an object, a class, a function) from the block, as the model's own binding."""
    return StepResponse(assign={"made": value}, outcome=return_outcome("made"))


def evaluating(*expressions: str) -> StepResponse:
    return StepResponse(evaluate=expressions)


_NUMBER_WORDS = {"six": 6, "ocho": 8, "nine": 9, "quinze": 15, "zwei": 2, "cinq": 5}


def words_average(text: str, v: Mapping[str, Any]) -> StepResponse:
    values = [float(v[name]) if v[name][-1].isdigit() else _NUMBER_WORDS[v[name]] for name in "abc"]
    return StepResponse(assign={"mean": sum(values) / 3})


_CLOSED = {"(1 + 2 * 3": "(1 + 2) * 3", "((2 + 3) * (4 - 1": "((2 + 3) * (4 - 1))"}


def bracket_closing(text: str, v: Mapping[str, Any]) -> StepResponse:
    return StepResponse(outcome=return_outcome(repr(_CLOSED[v["expression"]])))


def email_routing(text: str, v: Mapping[str, Any]) -> StepResponse:
    email = v["text"]
    for words, member in (("invoice", "BILLING"), ("app ", "TECHNICAL"), ("log in", "ACCOUNT")):
        if words in email:
            return StepResponse(outcome=return_outcome(f"Queue.{member}"))
    return StepResponse(outcome=raise_outcome("a recipe, not a support request", "NoQueueFits"))


def review_sentiment(text: str, v: Mapping[str, Any]) -> StepResponse:
    review = v["review"]
    mood = "mixed" if " but " in review else "negative" if "Broke" in review else "positive"
    return StepResponse(outcome=return_outcome(repr(mood)))


def contact_masking(text: str, v: Mapping[str, Any]) -> StepResponse:
    pattern = r"[\w.]+@[\w.]+\w|\d{3}-\d{4}"
    return StepResponse(assign={"masked": re.sub(pattern, lambda m: "*" * len(m.group()), v["text"])})


def feed_filter(text: str, v: Mapping[str, Any]) -> StepResponse:
    keys = ("trail", "hike") if v["interest"] == "hiking" else ("sourdough",)
    return StepResponse(outcome=return_outcome(f"[p for p in posts if any(k in p.lower() for k in {keys!r})]"))


_CONDITIONS = {
    "is a prime number": "n > 1 and all(n % d for d in range(2, n))",
    "is a perfect square": "int(n ** 0.5) ** 2 == n",
    "has decimal digits that add up to 10": "sum(map(int, str(n))) == 10",
}


def number_filter(text: str, v: Mapping[str, Any]) -> StepResponse:
    return StepResponse(outcome=return_outcome(f"[n for n in numbers if {_CONDITIONS[v['condition']]}]"))


def word_problems(text: str, v: Mapping[str, Any]) -> StepResponse:
    problem = v["problem"]
    expression = "3 * (14 + 28 + 23)" if "muffins" in problem else "-(-6 * 2.5 // 0.75)" if "packet" in problem else "40 * 9 * 3 / 4"
    return StepResponse(assign={"answer": Expression(expression)})


_TRUE_CLAIMS = ("Water boils", "Paris", "Venus")


def fact_log(text: str, v: Mapping[str, Any]) -> StepResponse:
    claims = [claim.strip() + "." for claim in v["text"].split(".") if claim.strip()]
    verdicts = ", ".join(f"Verdict({c!r}, {any(c.startswith(t) for t in _TRUE_CLAIMS)})" for c in claims)
    return evaluating(f"log.extend([{verdicts}])")


def arena_turn(text: str, v: Mapping[str, Any]) -> StepResponse:
    action = v["action"]
    if "hits" in action:
        return evaluating("setattr(fighters[1], 'hp', fighters[1].hp - 5)")
    if "healing" in action:
        return evaluating("[setattr(f, 'hp', f.hp + 3) for f in fighters]")
    return evaluating("setattr(fighters[2], 'hp', fighters[2].hp - 10)", "fighters.remove(fighters[2])")


def calendar_requests(text: str, v: Mapping[str, Any]) -> StepResponse:
    if v["request"].startswith("Book"):
        return evaluating("calendar.book('dentist', 'tuesday')", "calendar.book('lunch with Sam', 'friday')")
    return evaluating("calendar.cancel('review')", "calendar.book('review', 'thursday')")


def character_sheet(text: str, v: Mapping[str, Any]) -> StepResponse:
    made = "Character('Orla', 'mage', 2, 9)" if "wizard" in v["description"] else "Character('Grum', 'warrior', 9, 1)"
    return StepResponse(assign={"hero": Expression(made)})


_ORDERS = {
    "two small lattes and a large mocha please": "[OrderLine('latte', 'small', 2), OrderLine('mocha', 'large', 1)]",
    "a tea and a double espresso": "[OrderLine('tea', 'one size', 1), OrderLine('espresso', 'double', 1)]",
}


def coffee_order(text: str, v: Mapping[str, Any]) -> StepResponse:
    lines = _ORDERS.get(v["request"])
    if lines is None:
        return StepResponse(outcome=raise_outcome("carrot cake is not on the menu", "NotOnMenu"))
    return StepResponse(outcome=return_outcome(lines))


def pantry_stock(text: str, v: Mapping[str, Any]) -> StepResponse:
    if "omelettes" in v["order"]:
        return StepResponse(outcome=raise_outcome("two omelettes need 6 eggs", "OutOfStock"))
    return evaluating(
        "[pantry.__setitem__(k, pantry[k] - n) for k, n in RECIPES['pancakes'].items()]",
        "pantry.__setitem__('bread', pantry['bread'] - 2 * RECIPES['toast']['bread'])",
    )


def task_marking(text: str, v: Mapping[str, Any]) -> StepResponse:
    done = (0, 2) if "Slides" in v["report"] else (1,)
    return evaluating(*(f"setattr(tasks[{i}], 'done', True)" for i in done))


def bookshop(text: str, v: Mapping[str, Any]) -> StepResponse:
    request = v["request"]
    if "murder" in request:
        return StepResponse(outcome=return_outcome("SHELF[3]"))
    if "cook" in request:
        return StepResponse(outcome=return_outcome("SHELF[2]"))
    return StepResponse(outcome=raise_outcome("no gardening book on the shelf", "LookupError"))


def health_diary(text: str, v: Mapping[str, Any]) -> StepResponse:
    if "ibuprofen" in v["message"]:
        return StepResponse(
            evaluate=["diary.entries.append(Entry('medication', 'ibuprofen', 200, 'mg'))"],
            outcome=return_outcome("'Logged 200 mg of ibuprofen.'"),
        )
    return StepResponse(outcome=return_outcome("'What was the reading?'"))


class _Monster:
    def __init__(self, name: str, hp: int) -> None:
        self.name, self.hp = name, hp

    def hit(self, damage: int) -> None:
        self.hp = max(0, self.hp - damage)


def monster_object(text: str, v: Mapping[str, Any]) -> StepResponse:
    description = v["description"]
    return returning(_Monster(description.split(" with ")[0], int(re.findall(r"\d+", description)[0])))


def enemy_factory(text: str, v: Mapping[str, Any]) -> StepResponse:
    theme = v["theme"]
    return returning(lambda level: _Monster(f"{theme} ghost", 12 * level))


_PARTS = {"el": "DET", "die": "DET", "perro": "NOUN", "Katze": "NOUN", "corre": "VERB", "schläft": "VERB",
          "rojo": "ADJ", "müde": "ADJ"}


def language_tagger(text: str, v: Mapping[str, Any]) -> StepResponse:
    lexicon = {word: _PARTS[word] for word in v["vocabulary"]}
    return returning(lambda word: lexicon[word])


def citation_graph(text: str, v: Mapping[str, Any]) -> StepResponse:
    query = v["query"]
    if query.startswith("Paper 4"):
        return evaluating("cites[4].add(3)")
    if query.startswith("Paper 3"):
        return evaluating("cites[3].discard(1)")
    if query.startswith("Add"):
        return evaluating("cites.__setitem__(5, {3, 4})")
    return evaluating("cites.pop(2)", "[s.discard(2) for s in cites.values()]")


def riddle_loop(text: str, v: Mapping[str, Any]) -> StepResponse:
    if "not among" in text:  # the proposer
        guess = "a piano" if "a door" in v["rejected"] else "a door"
        return StepResponse(outcome=return_outcome(repr(guess)))
    right = "piano" in v["answer"] or "bottle" in v["answer"]
    return StepResponse(outcome=return_outcome(repr(right)))


def shop_subclasses(text: str, v: Mapping[str, Any]) -> StepResponse:
    stock = ("bread", "loaf", "croissant") if v["kind"] == "bakery" else ("hammer", "nail", "screw")
    base = v["Shop"]
    made = type("Made", (base,), {"sells": lambda self, item: any(word in item for word in stock)})
    return returning(made)


def generators(text: str, v: Mapping[str, Any]) -> StepResponse:
    if "generator" in text:
        names = ["one", "two", "three", "four", "five"][: v["start"]]
        return returning(name for name in reversed(names))
    return StepResponse(assign={"headline": Expression("note.rstrip('.').title()")})


def _score(guess: str, answer: str) -> str:
    marks, left = ["."] * 5, Counter(a for g, a in zip(guess, answer) if g != a)
    for i, (g, a) in enumerate(zip(guess, answer)):
        if g == a:
            marks[i] = "G"
    for i, g in enumerate(guess):
        if marks[i] == "." and left[g]:
            marks[i], left[g] = "Y", left[g] - 1
    return "".join(marks)


def wordle_helper(text: str, v: Mapping[str, Any]) -> StepResponse:
    kept = [word for word in v["candidates"] if _score(v["guess"], word) == v["marks"]]
    return StepResponse(outcome=return_outcome(repr(kept)))


ANSWERS: dict[str, Answer] = {
    "words_average": words_average,
    "bracket_closing": bracket_closing,
    "email_routing": email_routing,
    "review_sentiment": review_sentiment,
    "contact_masking": contact_masking,
    "feed_filter": feed_filter,
    "number_filter": number_filter,
    "word_problems": word_problems,
    "fact_log": fact_log,
    "arena_turn": arena_turn,
    "calendar_requests": calendar_requests,
    "character_sheet": character_sheet,
    "coffee_order": coffee_order,
    "pantry_stock": pantry_stock,
    "task_marking": task_marking,
    "bookshop": bookshop,
    "health_diary": health_diary,
    "monster_object": monster_object,
    "enemy_factory": enemy_factory,
    "citation_graph": citation_graph,
    "language_tagger": language_tagger,
    "riddle_loop": riddle_loop,
    "shop_subclasses": shop_subclasses,
    "generators": generators,
    "wordle_helper": wordle_helper,
}
