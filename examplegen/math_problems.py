"""GSM8K-style word problems in Turkish and English, built from templates with random numbers.

Each template draws its numbers once and writes the same problem in either language. The questions join
their steps with connectors ("ardından", "sonra", "daha sonra", "ayrıca", "bunun yanında"; "then", "after
that", "also", "in addition") placed mid-sentence, where the finetune augmentation can reword them.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

Language = Literal["tr", "en"]

NAMES: dict[Language, list[str]] = {
    "tr": ["Ayşe", "Mehmet", "Zeynep", "Emre", "Elif", "Can", "Deniz", "Burak", "Selin", "Kerem"],
    "en": ["Maria", "James", "Aisha", "Tom", "Priya", "Lucas", "Emma", "Noah", "Sofia", "Omar"],
}


@dataclass(frozen=True)
class WrongUnit:
    """The answer given in a plausible but wrong unit, e.g. metres where kilometres were asked."""

    value: str
    unit: str


@dataclass(frozen=True)
class Problem:
    question: str
    answer: int
    solution: str
    domain: str
    difficulty: str
    partial: int  # an intermediate result a model may stop at
    explain: Callable[[int], str]  # the worked steps ending in a given final value
    wrong_unit: WrongUnit | None


def format_number(value: int, lang: Language) -> str:
    """Thousands grouped the way each language writes them: 1.250 in Turkish, 1,250 in English."""
    grouped = f"{value:,}"
    return grouped.replace(",", ".") if lang == "tr" else grouped


def _decimal(value: float, lang: Language) -> str:
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    return text.replace(".", ",") if lang == "tr" else text


def _shopping(rng: random.Random, lang: Language) -> Problem:
    name = rng.choice(NAMES[lang])
    kilos, price, bread = rng.randint(2, 9), rng.randint(12, 45), rng.randint(8, 25)
    apples = kilos * price
    answer = apples + bread
    if lang == "tr":
        question = (
            f"{name} pazardan kilosu {price} TL olan elmadan {kilos} kilo aldı, ardından {bread} TL'ye bir "
            f"ekmek aldı. {name} toplam kaç TL ödedi?"
        )

        def explain(final: int) -> str:
            return f"Elmalar: {kilos} × {price} = {apples} TL. Toplam: {apples} + {bread} = {final} TL."

        unit = WrongUnit(str(answer * 100), "kuruş")
    else:
        question = (
            f"{name} bought {kilos} kilograms of apples at {price} dollars per kilogram, then bought a loaf "
            f"of bread for {bread} dollars. How many dollars did {name} pay in total?"
        )

        def explain(final: int) -> str:
            return f"Apples: {kilos} × {price} = {apples}. Total: {apples} + {bread} = {final}."

        unit = WrongUnit(str(answer * 100), "cents")
    return Problem(question, answer, explain(answer), "shopping", "easy", apples, explain, unit)


def _travel(rng: random.Random, lang: Language) -> Problem:
    speed, hours, extra = rng.choice([40, 45, 50, 60, 70, 80, 90]), rng.randint(2, 6), rng.randint(10, 95)
    first = speed * hours
    answer = first + extra
    if lang == "tr":
        question = (
            f"Bir otobüs saatte {speed} km hızla {hours} saat yol aldı, daha sonra {extra} km daha gitti. "
            "Otobüs toplam kaç km yol aldı?"
        )

        def explain(final: int) -> str:
            return f"İlk bölüm: {speed} × {hours} = {first} km. Toplam: {first} + {extra} = {final} km."

        unit = WrongUnit(str(answer * 1000), "metre")
    else:
        question = (
            f"A bus traveled at {speed} km per hour for {hours} hours, and after that it drove {extra} more "
            "km. How many km did the bus travel in total?"
        )

        def explain(final: int) -> str:
            return f"First part: {speed} × {hours} = {first} km. Total: {first} + {extra} = {final} km."

        unit = WrongUnit(str(answer * 1000), "meters")
    return Problem(question, answer, explain(answer), "travel", "medium", first, explain, unit)


def _savings(rng: random.Random, lang: Language) -> Problem:
    name = rng.choice(NAMES[lang])
    weekly, weeks = rng.randint(15, 90), rng.randint(3, 12)
    saved = weekly * weeks
    spent = rng.randint(5, saved - 5)
    answer = saved - spent
    if lang == "tr":
        question = (
            f"{name} her hafta {weekly} TL biriktiriyor. {weeks} hafta boyunca biriktirdi, ardından bu "
            f"paranın {spent} TL'sini harcadı. Geriye kaç TL kaldı?"
        )

        def explain(final: int) -> str:
            return f"Birikim: {weekly} × {weeks} = {saved} TL. Kalan: {saved} - {spent} = {final} TL."

        unit = WrongUnit(str(answer * 100), "kuruş")
    else:
        question = (
            f"{name} saves {weekly} dollars every week. After {weeks} weeks of saving, {name} then spent "
            f"{spent} dollars of it. How many dollars are left?"
        )

        def explain(final: int) -> str:
            return f"Saved: {weekly} × {weeks} = {saved}. Left: {saved} - {spent} = {final}."

        unit = WrongUnit(str(answer * 100), "cents")
    return Problem(question, answer, explain(answer), "savings", "medium", saved, explain, unit)


def _bakery(rng: random.Random, lang: Language) -> Problem:
    morning, afternoon = rng.randint(40, 180), rng.randint(20, 120)
    baked = morning + afternoon
    sold = rng.randint(10, baked - 1)
    answer = baked - sold
    if lang == "tr":
        question = (
            f"Bir fırın sabah {morning} simit üretti, sonra öğleden sonra {afternoon} simit daha üretti. "
            f"Gün boyunca {sold} simit satıldı. Geriye kaç simit kaldı?"
        )

        def explain(final: int) -> str:
            return f"Üretim: {morning} + {afternoon} = {baked}. Kalan: {baked} - {sold} = {final} simit."
    else:
        question = (
            f"A bakery baked {morning} bagels in the morning, then baked {afternoon} more in the afternoon. "
            f"During the day {sold} bagels were sold. How many bagels are left?"
        )

        def explain(final: int) -> str:
            return f"Baked: {morning} + {afternoon} = {baked}. Left: {baked} - {sold} = {final}."

    return Problem(question, answer, explain(answer), "production", "easy", baked, explain, None)


def _reading(rng: random.Random, lang: Language) -> Problem:
    name = rng.choice(NAMES[lang])
    daily, more = rng.choice([15, 20, 25, 30, 35, 40, 45]), rng.choice([5, 10, 15, 20, 30])
    weekdays = 5 * daily
    weekend = 2 * (daily + more)
    answer = weekdays + weekend
    if lang == "tr":
        question = (
            f"{name} hafta içi her gün {daily} dakika kitap okuyor, ayrıca hafta sonu her gün bunun {more} "
            f"dakika fazlasını okuyor. {name} bir haftada toplam kaç dakika kitap okur?"
        )

        def explain(final: int) -> str:
            return (
                f"Hafta içi: 5 × {daily} = {weekdays} dakika. Hafta sonu: 2 × ({daily} + {more}) = {weekend} "
                f"dakika. Toplam: {weekdays} + {weekend} = {final} dakika."
            )

        unit = WrongUnit(_decimal(answer / 60, lang), "saat")
    else:
        question = (
            f"{name} reads for {daily} minutes every weekday, and also reads {more} minutes more than that "
            f"on each weekend day. How many minutes does {name} read in a week?"
        )

        def explain(final: int) -> str:
            return (
                f"Weekdays: 5 × {daily} = {weekdays}. Weekend: 2 × ({daily} + {more}) = {weekend}. "
                f"Total: {weekdays} + {weekend} = {final} minutes."
            )

        unit = WrongUnit(_decimal(answer / 60, lang), "hours")
    return Problem(question, answer, explain(answer), "time", "hard", weekdays, explain, unit)


def _school(rng: random.Random, lang: Language) -> Problem:
    classes, students, teachers = rng.randint(4, 24), rng.randint(18, 34), rng.randint(8, 60)
    pupils = classes * students
    answer = pupils + teachers
    if lang == "tr":
        question = (
            f"Bir okulda {classes} sınıf var ve her sınıfta {students} öğrenci bulunuyor, bunun yanında "
            f"okulda {teachers} öğretmen çalışıyor. Okulda toplam kaç kişi var?"
        )

        def explain(final: int) -> str:
            return f"Öğrenciler: {classes} × {students} = {pupils}. Toplam: {pupils} + {teachers} = {final}."
    else:
        question = (
            f"A school has {classes} classes with {students} students in each class; in addition, "
            f"{teachers} teachers work there. How many people are at the school in total?"
        )

        def explain(final: int) -> str:
            return f"Students: {classes} × {students} = {pupils}. Total: {pupils} + {teachers} = {final}."

    return Problem(question, answer, explain(answer), "school", "easy", pupils, explain, None)


def _discount(rng: random.Random, lang: Language) -> Problem:
    percent = rng.choice([10, 20, 25, 30, 40, 50])
    price = rng.randint(6, 60) * 20
    reduced = price - price * percent // 100
    coupon = rng.randint(5, min(60, reduced - 1))
    answer = reduced - coupon
    if lang == "tr":
        question = (
            f"Bir ceketin fiyatı {price} TL. İndirim döneminde fiyat %{percent} düşürüldü, ardından {coupon} "
            "TL'lik bir kupon kullanıldı. Ceketin son fiyatı kaç TL oldu?"
        )

        def explain(final: int) -> str:
            return (
                f"İndirim: {price} × {percent} / 100 = {price - reduced} TL, yeni fiyat {reduced} TL. "
                f"Kupondan sonra: {reduced} - {coupon} = {final} TL."
            )

        unit = WrongUnit(str(answer * 100), "kuruş")
    else:
        question = (
            f"A jacket costs {price} dollars. During a sale its price was reduced by {percent}%, then a "
            f"coupon of {coupon} dollars was applied. What was the final price of the jacket in dollars?"
        )

        def explain(final: int) -> str:
            return (
                f"Discount: {price} × {percent} / 100 = {price - reduced}, new price {reduced}. "
                f"After the coupon: {reduced} - {coupon} = {final}."
            )

        unit = WrongUnit(str(answer * 100), "cents")
    return Problem(question, answer, explain(answer), "discount", "hard", reduced, explain, unit)


def _tank(rng: random.Random, lang: Language) -> Problem:
    start, added = rng.randint(20, 200) * 2, rng.randint(10, 150) * 2
    total = start + added
    half = total // 2
    cleaning = rng.randint(5, half - 1)
    answer = half - cleaning
    if lang == "tr":
        question = (
            f"Bir depoda {start} litre su vardı. Depoya {added} litre su eklendi, daha sonra suyun yarısı "
            f"bahçe sulamak için kullanıldı, ayrıca temizlik için {cleaning} litre harcandı. Depoda kaç "
            "litre su kaldı?"
        )

        def explain(final: int) -> str:
            return (
                f"Toplam: {start} + {added} = {total} litre. Yarısı kullanıldı: {total} / 2 = {half}. "
                f"Kalan: {half} - {cleaning} = {final} litre."
            )

        unit = WrongUnit(str(answer * 1000), "mililitre")
    else:
        question = (
            f"A tank held {start} liters of water. {added} liters were added, after that half of the water "
            f"was used for the garden, and also {cleaning} liters were used for cleaning. How many liters "
            "are left in the tank?"
        )

        def explain(final: int) -> str:
            return (
                f"Total: {start} + {added} = {total}. Half used: {total} / 2 = {half}. "
                f"Left: {half} - {cleaning} = {final} liters."
            )

        unit = WrongUnit(str(answer * 1000), "milliliters")
    return Problem(question, answer, explain(answer), "volume", "hard", half, explain, unit)


def _factory(rng: random.Random, lang: Language) -> Problem:
    daily, days = rng.randint(120, 480), rng.randint(5, 15)
    made = daily * days
    defective = rng.randint(10, 90)
    answer = made - defective
    if lang == "tr":
        question = (
            f"Bir fabrika günde {daily} vida üretiyor ve {days} gün boyunca çalıştı, ardından üretilen "
            f"vidaların {defective} tanesi kusurlu çıktı. Kaç sağlam vida üretildi?"
        )

        def explain(final: int) -> str:
            return (
                f"Üretim: {daily} × {days} = {format_number(made, lang)} vida. "
                f"Sağlam: {format_number(made, lang)} - {defective} = {format_number(final, lang)} vida."
            )
    else:
        question = (
            f"A factory makes {daily} screws a day and ran for {days} days, then {defective} of the screws "
            "turned out to be defective. How many good screws were made?"
        )

        def explain(final: int) -> str:
            return (
                f"Made: {daily} × {days} = {format_number(made, lang)}. "
                f"Good: {format_number(made, lang)} - {defective} = {format_number(final, lang)}."
            )

    return Problem(question, answer, explain(answer), "production", "medium", made, explain, None)


TEMPLATES: list[Callable[[random.Random, Language], Problem]] = [
    _shopping,
    _travel,
    _savings,
    _bakery,
    _reading,
    _school,
    _discount,
    _tank,
    _factory,
]


def make_problem(rng: random.Random, lang: Language) -> Problem:
    return rng.choice(TEMPLATES)(rng, lang)
