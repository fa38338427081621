"""The templates of the generated tool-call suite: value pools and one draw function per
family of cases. Each family draws its values from the split's random generator and
says which calls they imply (or, for a no-call case, what the answer must contain);
its wordings are in ``wordings.toml`` under the family's name. See generate_cases.py.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass, field
from typing import Any, Callable


@dataclass
class Draft:
    """One drawn case before its wording: the slots the wording fills, the expected calls,
    and for a no-call case the answer patterns and any turns after the question."""

    slots: dict[str, Any]
    expected: list[dict[str, Any]] = field(default_factory=list)
    answer: list[str] = field(default_factory=list)
    after: list[dict[str, Any]] = field(default_factory=list)  # an assistant call and its result
    example: str = ""  # a right answer, which every pattern must match (checked when generating)


@dataclass
class Family:
    """A template: its category, the tools it offers, and how it draws a case."""

    name: str
    category: str
    tools: list[str]
    draw: Callable[[random.Random], Draft]


FAMILIES: list[Family] = []


def family(category: str, *tools: str) -> Callable[[Callable[[random.Random], Draft]], Callable[[random.Random], Draft]]:
    """Register a draw function as a family of ``category`` offering ``tools``."""
    def register(fn: Callable[[random.Random], Draft]) -> Callable[[random.Random], Draft]:
        FAMILIES.append(Family(fn.__name__, category, list(tools), fn))
        return fn
    return register


def call(tool: str, loose: tuple[str, ...] = (), /, **arguments: list[Any]) -> dict[str, Any]:
    """An expected call of ``tool``, each argument's acceptable values; ``loose`` arguments
    are compared ignoring case and white space."""
    d: dict[str, Any] = {"name": tool, "arguments": arguments}
    if loose:
        d["loose"] = list(loose)
    return d


def joined(items: list[str]) -> str:
    """``a, b and c``."""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def result_turn(name: str, arguments: dict[str, Any], content: str) -> list[dict[str, Any]]:
    """An assistant turn calling ``name`` and the tool's result."""
    return [
        {"role": "assistant", "content": "", "tool_calls": [{"name": name, "arguments": arguments}]},
        {"role": "tool", "name": name, "content": content},
    ]


# --- value pools ----------------------------------------------------------------------------

CITIES = [
    ("Paris", "France"), ("Rome", "Italy"), ("Oslo", "Norway"), ("Lisbon", "Portugal"), ("Madrid", "Spain"),
    ("Berlin", "Germany"), ("Vienna", "Austria"), ("Prague", "Czech Republic"), ("Dublin", "Ireland"),
    ("Athens", "Greece"), ("Warsaw", "Poland"), ("Helsinki", "Finland"), ("Cairo", "Egypt"), ("Nairobi", "Kenya"),
    ("Tokyo", "Japan"), ("Seoul", "South Korea"), ("Lima", "Peru"), ("Toronto", "Canada"), ("Sydney", "Australia"),
    ("Mumbai", "India"), ("Istanbul", "Turkey"), ("Budapest", "Hungary"), ("Copenhagen", "Denmark"),
    ("Stockholm", "Sweden"), ("Zurich", "Switzerland"), ("Hanoi", "Vietnam"), ("Manila", "Philippines"),
]
CAPITALS = [
    ("France", "Paris"), ("Italy", "Rome"), ("Norway", "Oslo"), ("Portugal", "Lisbon"), ("Spain", "Madrid"),
    ("Germany", "Berlin"), ("Austria", "Vienna"), ("Ireland", "Dublin"), ("Greece", "Athens"), ("Poland", "Warsaw"),
    ("Finland", "Helsinki"), ("Egypt", "Cairo"), ("Kenya", "Nairobi"), ("Japan", "Tokyo"), ("Peru", "Lima"),
    ("Canada", "Ottawa"), ("Australia", "Canberra"), ("Hungary", "Budapest"), ("Sweden", "Stockholm"),
]
FILES = [
    "README.md", "src/main.py", "config/settings.yaml", "../tests/test_app.py", "/etc/hosts", "docs/install.md",
    "notes.txt", "src/utils/helpers.py", "data/users.csv", "/var/log/app.log", "../shared/notes.md", "setup.cfg",
]
FOLDERS = ["src", "tests", "../tests", "/config", "docs/api", "scripts", "data/raw", "/tmp/build"]
PATTERNS = ["TODO", "FIXME", "deprecated", "import numpy", "password", "localhost"]
PHONES = ["+447700900123", "+14155550142", "+33612345678", "+4915112345678", "+61412345678", "+819012345678"]
MESSAGES = ["Running late, start without me", "The keys are under the mat", "Call me when you land", "Dinner is at eight", "Meeting moved to Friday"]
STOCKS = [("Apple", "AAPL"), ("Microsoft", "MSFT"), ("Nvidia", "NVDA"), ("Tesla", "TSLA"), ("Amazon", "AMZN"), ("Netflix", "NFLX"), ("Intel", "INTC")]
LANGUAGES = ["french", "german", "spanish", "italian", "portuguese", "japanese"]
PHRASES = ["Good morning", "Where is the station?", "Thank you very much", "The meeting is cancelled", "See you tomorrow", "How much does it cost?"]
CURRENCIES = ["USD", "EUR", "GBP", "JPY", "CHF", "CAD"]
PEOPLE = ["Alice Moreau", "Bob Okafor", "Chen Wei", "Dara Singh", "Emil Novak", "Farah Haddad", "Goran Petrov", "Hana Sato"]
PRODUCTS = ["Blue Mug", "Teapot", "Desk Lamp", "USB Cable", "Notebook", "Water Bottle", "Phone Stand"]
STREETS = [("12 Baker Street", "London", "NW1 6XE"), ("5 Main St", "Springfield", "62701"), ("8 Rue Cler", "Paris", "75007"), ("40 Elm Road", "Leeds", "LS6 2AB")]
WORDS = ["necessary", "calendar", "umbrella", "keyboard", "lantern", "pyramid", "whisper", "mountain"]
FRUITS = ["pear", "apple", "fig", "mango", "cherry", "kiwi", "banana", "plum", "grape"]
TEMPERATURE_UNITS = ["", "celsius", "fahrenheit"]

_ONES = "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen".split()
_TENS = "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()


def words(n: int) -> str:
    """``n`` (0 to 9999) in English words: 45 is ``forty-five``, 1500 ``one thousand five hundred``."""
    if n < 20:
        return _ONES[n]
    if n < 100:
        return _TENS[n // 10] + ("-" + _ONES[n % 10] if n % 10 else "")
    if n < 1000:
        return _ONES[n // 100] + " hundred" + (" and " + words(n % 100) if n % 100 else "")
    return words(n // 1000) + " thousand" + (" " + words(n % 1000) if n % 1000 else "")


def city(rng: random.Random, k: int = 1) -> list[tuple[str, str]]:
    """``k`` distinct cities with their countries."""
    return rng.sample(CITIES, k)


def city_values(c: tuple[str, str]) -> list[str]:
    """How a city may be written: the name, or the name and country."""
    return [c[0], f"{c[0]}, {c[1]}"]


def hhmm(rng: random.Random) -> tuple[str, str]:
    """A time as 24-hour HH:MM, and a pattern that accepts it or its 12-hour form."""
    h, m = rng.randrange(7, 22), rng.choice([0, 15, 30, 45, 5, 50])
    twelve = f"{h - 12 if h > 12 else h}:{m:02d}"
    return f"{h:02d}:{m:02d}", rf"\b({h:02d}:{m:02d}|{twelve})\b"



# --- one_tool: one tool offered -------------------------------------------------------------


@family("one_tool", "get_weather")
def weather(rng: random.Random) -> Draft:
    (c,) = city(rng)
    return Draft({"city": c[0]}, [call("get_weather", ("city",), city=city_values(c), unit=TEMPERATURE_UNITS)])


@family("one_tool", "read_file")
def read_file(rng: random.Random) -> Draft:
    path = rng.choice(FILES)  # exactly as written: ../tests is not tests, /etc is not etc
    return Draft({"path": path}, [call("read_file", path=[path])])


@family("one_tool", "list_dir")
def list_dir(rng: random.Random) -> Draft:
    path = rng.choice(FOLDERS)
    return Draft({"path": path}, [call("list_dir", path=[path])])


@family("one_tool", "send_sms")
def send_sms(rng: random.Random) -> Draft:
    phone, text = rng.choice(PHONES), rng.choice(MESSAGES)
    return Draft({"phone": phone, "text": text}, [call("send_sms", ("message",), phone_number=[phone], message=[text, text + "."])])


@family("one_tool", "get_stock_price")
def stock(rng: random.Random) -> Draft:
    company, symbol = rng.choice(STOCKS)
    return Draft({"company": company, "symbol": symbol}, [call("get_stock_price", symbol=[symbol])])


@family("one_tool", "translate_text")
def translate(rng: random.Random) -> Draft:
    phrase, lang = rng.choice(PHRASES), rng.choice(LANGUAGES)
    return Draft({"phrase": phrase, "language": lang.capitalize()}, [call("translate_text", ("text",), text=[phrase], target_language=[lang])])


# --- choose_tool: the right one among similar tools ---------------------------------------------

WEATHER_TOOLS = ("get_weather", "get_forecast", "get_air_quality", "get_time")
FILE_TOOLS = ("read_file", "list_dir", "delete_file", "move_file", "search_files")
MONEY_TOOLS = ("convert_currency", "get_exchange_rate", "transfer_money")


@family("choose_tool", *WEATHER_TOOLS)
def choose_forecast(rng: random.Random) -> Draft:
    (c,), days = city(rng), rng.randrange(2, 11)
    return Draft({"city": c[0], "days": days}, [call("get_forecast", ("city",), city=city_values(c), days=[days])])


@family("choose_tool", *WEATHER_TOOLS)
def choose_air(rng: random.Random) -> Draft:
    (c,) = city(rng)
    return Draft({"city": c[0]}, [call("get_air_quality", ("city",), city=city_values(c))])


@family("choose_tool", *WEATHER_TOOLS)
def choose_time(rng: random.Random) -> Draft:
    (c,) = city(rng)
    return Draft({"city": c[0]}, [call("get_time", ("city",), city=city_values(c))])


@family("choose_tool", *FILE_TOOLS)
def choose_delete(rng: random.Random) -> Draft:
    path = rng.choice(FILES)
    return Draft({"path": path}, [call("delete_file", path=[path])])


@family("choose_tool", *FILE_TOOLS)
def choose_move(rng: random.Random) -> Draft:
    source, folder = rng.choice(FILES), rng.choice(FOLDERS)
    dest = f"{folder}/{source.rsplit('/', 1)[-1]}"
    return Draft({"source": source, "destination": dest}, [call("move_file", source=[source], destination=[dest])])


@family("choose_tool", *FILE_TOOLS)
def choose_search(rng: random.Random) -> Draft:
    pattern, folder = rng.choice(PATTERNS), rng.choice(FOLDERS)
    return Draft({"pattern": pattern, "path": folder}, [call("search_files", pattern=[pattern], path=[folder])])


@family("choose_tool", *MONEY_TOOLS)
def choose_rate(rng: random.Random) -> Draft:
    base, quote = rng.sample(CURRENCIES, 2)
    return Draft({"base": base, "quote": quote}, [call("get_exchange_rate", base=[base], quote=[quote])])


@family("choose_tool", *MONEY_TOOLS)
def choose_convert(rng: random.Random) -> Draft:
    base, quote = rng.sample(CURRENCIES, 2)
    amount = rng.choice([20, 75, 120, 250, 1000, 49.5])
    return Draft({"amount": amount, "base": base, "quote": quote}, [call("convert_currency", amount=[amount], from_currency=[base], to_currency=[quote])])


# --- multiple_calls: two to five calls in one turn, distinct values ----------------------------


@family("multiple_calls", "get_weather")
def weather_many(rng: random.Random) -> Draft:
    cs = city(rng, rng.randrange(2, 6))
    calls = [call("get_weather", ("city",), city=city_values(c), unit=TEMPERATURE_UNITS) for c in cs]
    return Draft({"cities": joined([c[0] for c in cs])}, calls)


@family("multiple_calls", "get_stock_price", "get_exchange_rate")
def stock_many(rng: random.Random) -> Draft:
    picks = rng.sample(STOCKS, rng.randrange(2, 5))
    return Draft({"companies": joined([p[0] for p in picks])}, [call("get_stock_price", symbol=[p[1]]) for p in picks])


@family("multiple_calls", "get_time", "get_weather")
def time_many(rng: random.Random) -> Draft:
    cs = city(rng, rng.randrange(2, 5))
    return Draft({"cities": joined([c[0] for c in cs])}, [call("get_time", ("city",), city=city_values(c)) for c in cs])


@family("multiple_calls", "read_file", "list_dir")
def read_many(rng: random.Random) -> Draft:
    paths = rng.sample(FILES, rng.randrange(2, 4))
    return Draft({"paths": joined(paths)}, [call("read_file", path=[p]) for p in paths])


@family("multiple_calls", "set_light")
def lights_many(rng: random.Random) -> Draft:
    rooms = rng.sample(list(ROOMS), rng.randrange(2, 5))
    calls = [call("set_light", room=[r], on=[False], color=[""] + COLORS) for r in rooms]
    return Draft({"rooms": joined([ROOMS[r] for r in rooms])}, calls)


@family("multiple_calls", *WEATHER_TOOLS)
def weather_and_forecast(rng: random.Random) -> Draft:
    a, b = city(rng, 2)
    days = rng.randrange(2, 8)
    calls = [
        call("get_weather", ("city",), city=city_values(a), unit=TEMPERATURE_UNITS),
        call("get_forecast", ("city",), city=city_values(b), days=[days]),
    ]
    return Draft({"city": a[0], "other": b[0], "days": days}, calls)


@family("multiple_calls", *WEATHER_TOOLS)
def three_tools(rng: random.Random) -> Draft:
    a, b, c = city(rng, 3)
    calls = [
        call("get_weather", ("city",), city=city_values(a), unit=TEMPERATURE_UNITS),
        call("get_air_quality", ("city",), city=city_values(b)),
        call("get_time", ("city",), city=city_values(c)),
    ]
    return Draft({"weather": a[0], "air": b[0], "time": c[0]}, calls)


@family("multiple_calls", "send_sms", "set_timer", "set_alarm")
def sms_and_timer(rng: random.Random) -> Draft:
    phone, text, minutes = rng.choice(PHONES), rng.choice(MESSAGES), rng.choice([5, 10, 15, 20, 30, 45])
    calls = [
        call("send_sms", ("message",), phone_number=[phone], message=[text, text + "."]),
        call("set_timer", minutes=[minutes], label=[""]),
    ]
    return Draft({"phone": phone, "text": text, "minutes": minutes}, calls)


@family("multiple_calls", "convert_currency", "get_stock_price", "get_exchange_rate")
def convert_and_stock(rng: random.Random) -> Draft:
    base, quote = rng.sample(CURRENCIES, 2)
    amount, (company, symbol) = rng.choice([50, 200, 300, 1500]), rng.choice(STOCKS)
    calls = [call("convert_currency", amount=[amount], from_currency=[base], to_currency=[quote]), call("get_stock_price", symbol=[symbol])]
    return Draft({"amount": amount, "base": base, "quote": quote, "company": company}, calls)


# --- no_tool: no call is right --------------------------------------------------------------
# Three kinds: no offered tool fits; the question is answered by its own text; a tool
# result already in the messages holds the answer. Where the answer is known, the prose
# must contain it (``expected_answer``), so that any prose is not counted right.


@family("no_tool", "get_weather", "get_time")
def none_capital(rng: random.Random) -> Draft:
    country, capital = rng.choice(CAPITALS)
    return Draft({"country": country}, answer=[rf"\b{capital}\b"], example=f"The capital of {country} is {capital}.")


@family("no_tool", "read_file", "list_dir")
def none_sum(rng: random.Random) -> Draft:
    a, b = rng.randrange(12, 90), rng.randrange(12, 90)
    return Draft({"a": a, "b": b}, answer=[rf"(?<![\d.]){a + b}(?![\d])"], example=f"{a} plus {b} is {a + b}.")


@family("no_tool", "get_weather", "get_forecast")
def none_unfit(rng: random.Random) -> Draft:
    # Nothing offered can do it: any prose is right, a call is not.
    n, (c, _) = rng.randrange(2, 7), rng.choice(CITIES)
    return Draft({"n": n, "city": c, "restaurant": rng.choice(["Luigi's", "The Olive Tree", "Sakura", "Chez Marie"])})


@family("no_tool", "translate_text", "web_search")
def none_reverse(rng: random.Random) -> Draft:
    word = rng.choice(WORDS)
    return Draft({"word": word}, answer=[rf"(?i)\b{word[::-1]}\b"], example=f'"{word}" backwards is "{word[::-1]}".')


@family("no_tool", "translate_text", "web_search")
def none_upper(rng: random.Random) -> Draft:
    phrase = rng.choice(PHRASES).rstrip("?")
    return Draft({"phrase": phrase}, answer=[re.escape(phrase.upper())], example=phrase.upper())


@family("no_tool", "list_events", "create_event")
def none_note(rng: random.Random) -> Draft:
    time, pattern = hhmm(rng)
    what = rng.choice(["dentist", "team meeting", "yoga class", "call with the bank", "haircut"])
    return Draft({"time": time, "what": what, "day": rng.choice(["Monday", "Tuesday", "Thursday", "Friday"])}, answer=[pattern], example=f"The {what} is at {time}.")


@family("no_tool", "search_files", "read_file")
def none_count(rng: random.Random) -> Draft:
    items = rng.sample(FRUITS, rng.randrange(3, 8))
    n = len(items)
    return Draft({"items": ", ".join(items)}, answer=[rf"(?i)\b({n}|{words(n)})\b"], example=f"There are {n} items.")


@family("no_tool", "get_weather", "get_forecast")
def result_weather(rng: random.Random) -> Draft:
    (c,), t = city(rng), rng.randrange(-8, 33)
    condition = rng.choice(["light rain", "sunny", "overcast", "snow", "fog", "thunderstorms"])
    content = json.dumps({"city": c[0], "temperature": t, "unit": "celsius", "condition": condition})
    sign = "(-|−|minus )" if t < 0 else r"(?<![\d.\-−])"
    return Draft({"city": c[0]}, answer=[rf"{sign}{abs(t)}(?![\d])"], example=f"It is {t} °C in {c[0]}, {condition}.", after=result_turn("get_weather", {"city": c[0]}, content))


@family("no_tool", "get_stock_price", "get_exchange_rate")
def result_stock(rng: random.Random) -> Draft:
    company, symbol = rng.choice(STOCKS)
    price = f"{rng.randrange(20, 900)}.{rng.randrange(10, 99)}"
    shown = str(float(price))  # as the tool returns it: 500.3, which 500.30 also says
    content = json.dumps({"symbol": symbol, "price": float(price), "currency": "USD"})
    answer = rf"(?<![\d.]){re.escape(shown)}0?(?![\d])"
    return Draft({"company": company}, answer=[answer], example=f"{company} is at {shown} USD.", after=result_turn("get_stock_price", {"symbol": symbol}, content))


@family("no_tool", "read_file", "list_dir")
def result_file(rng: random.Random) -> Draft:
    version = f"{rng.randrange(1, 6)}.{rng.randrange(0, 20)}.{rng.randrange(0, 10)}"
    path = rng.choice(["setup.cfg", "pyproject.toml", "config/app.ini"])
    content = f"[project]\nname = demo\nversion = {version}\nlicense = MIT\n"
    return Draft({"path": path}, answer=[rf"(?<![\d.]){re.escape(version)}(?![\d])"], example=f"The version is {version}.", after=result_turn("read_file", {"path": path}, content))


@family("no_tool", "get_time", "get_weather")
def result_time(rng: random.Random) -> Draft:
    (c,), (time, pattern) = city(rng), hhmm(rng)
    content = json.dumps({"city": c[0], "local_time": time})
    return Draft({"city": c[0]}, answer=[pattern], example=f"It is {time} in {c[0]}.", after=result_turn("get_time", {"city": c[0]}, content))


# --- nested_args: objects and arrays ----------------------------------------------------------


@family("nested_args", "create_order")
def order(rng: random.Random) -> Draft:
    items = [{"product": p, "quantity": rng.randrange(1, 6)} for p in rng.sample(PRODUCTS, rng.randrange(1, 4))]
    street, town, code = rng.choice(STREETS)
    listed = joined([f'{i["quantity"]} "{i["product"]}"' for i in items])
    shipping = {"street": street, "city": town, "postal_code": code}
    return Draft({"items": listed, "address": f"{street}, {town}, {code}"}, [call("create_order", items=[items], shipping=[shipping], express=["", False])])


@family("nested_args", "create_contact")
def contact(rng: random.Random) -> Draft:
    name, phone, label = rng.choice(PEOPLE), rng.choice(PHONES), rng.choice(["mobile", "home", "work"])
    tag = rng.choice(["family", "work", "football", "book club"])
    expected = call("create_contact", name=[name], phones=[[{"label": label, "number": phone}]], tags=[[tag]])
    return Draft({"name": name, "phone": phone, "label": label, "tag": tag}, [expected])


@family("nested_args", "send_email")
def email(rng: random.Random) -> Draft:
    people = rng.sample(PEOPLE, rng.randrange(1, 3))
    to = [p.split()[0].lower() + "@example.com" for p in people]
    subject = rng.choice(["Quarterly report", "Lunch on Friday", "Server outage", "Holiday plans"])
    body = rng.choice(["Please see the attached figures", "Are you free at noon", "It is fixed now", "I am away next week"])
    expected = call("send_email", ("subject", "body"), to=[to], subject=[subject], body=[body, body + "."], cc=[""])
    return Draft({"to": joined(to), "subject": subject, "body": body}, [expected])


@family("nested_args", "create_event")
def event(rng: random.Random) -> Draft:
    title = rng.choice(["Design review", "Sprint planning", "Budget meeting", "Team lunch"])
    day, (start, _) = f"2025-0{rng.randrange(1, 10)}-{rng.randrange(10, 29)}", hhmm(rng)
    guests = [p.split()[0].lower() + "@example.com" for p in rng.sample(PEOPLE, rng.randrange(2, 4))]
    expected = call("create_event", ("title",), title=[title], date=[day], start_time=[start], attendees=[guests], duration_minutes=["", 60])
    return Draft({"title": title, "date": day, "time": start, "guests": joined(guests)}, [expected])


# --- enums -------------------------------------------------------------------------------------

ROOMS = {"kitchen": "kitchen", "living_room": "living room", "bedroom": "bedroom", "bathroom": "bathroom", "office": "office"}
COLORS = ["white", "warm_white", "red", "green", "blue", "purple"]
DRINKS = {"espresso": "espresso", "americano": "americano", "latte": "latte", "cappuccino": "cappuccino", "flat_white": "flat white", "mocha": "mocha"}


@family("enums", "set_thermostat")
def thermostat(rng: random.Random) -> Draft:
    mode, how = rng.choice([("heat", "heating"), ("cool", "cooling"), ("auto", "automatic")])
    t = rng.randrange(16, 27)
    return Draft({"temperature": t, "mode": how}, [call("set_thermostat", temperature=[t], mode=[mode])])


@family("enums", "order_coffee")
def coffee(rng: random.Random) -> Draft:
    drink, size = rng.choice(list(DRINKS)), rng.choice(["small", "medium", "large"])
    milk = rng.choice(["whole", "skim", "oat", "soy"])
    return Draft({"drink": DRINKS[drink], "size": size, "milk": milk}, [call("order_coffee", drink=[drink], size=[size], milk=[milk])])


@family("enums", "set_light")
def light(rng: random.Random) -> Draft:
    room, color = rng.choice(list(ROOMS)), rng.choice(COLORS)
    return Draft({"room": ROOMS[room], "color": color.replace("_", " ")}, [call("set_light", room=[room], on=[True], color=[color])])


@family("enums", "create_ticket")
def ticket(rng: random.Random) -> Draft:
    severity, component = rng.choice(["low", "medium", "high", "critical"]), rng.choice(["frontend", "backend", "database", "infra"])
    title = rng.choice(["Login page is blank", "Slow search results", "Disk almost full", "Wrong totals in export"])
    return Draft({"severity": severity, "component": component, "title": title}, [call("create_ticket", ("title",), title=[title], severity=[severity], component=[component])])


# --- number_words: numbers written out ----------------------------------------------------------


@family("number_words", "set_timer")
def timer_words(rng: random.Random) -> Draft:
    n = rng.choice([3, 7, 12, 15, 25, 40, 45, 90])
    return Draft({"n": words(n)}, [call("set_timer", minutes=[n], label=[""])])


@family("number_words", "set_volume")
def volume_words(rng: random.Random) -> Draft:
    n = rng.choice([5, 18, 30, 35, 62, 75, 80])
    return Draft({"n": words(n)}, [call("set_volume", level=[n])])


@family("number_words", "transfer_money")
def transfer_words(rng: random.Random) -> Draft:
    n, who = rng.choice([40, 65, 120, 250, 300, 1500]), rng.choice(PEOPLE)
    return Draft({"n": words(n), "who": who}, [call("transfer_money", ("recipient",), recipient=[who, who.split()[0]], amount=[n])])


UNITS = [(("km", "kilometers", "kilometres"), ("mi", "miles"), "kilometres", "miles"), (("kg", "kilograms"), ("lb", "pounds", "lbs"), "kilograms", "pounds"),
         (("l", "liters", "litres"), ("gal", "gallons"), "litres", "gallons"), (("g", "grams"), ("oz", "ounces"), "grams", "ounces")]


@family("number_words", "convert_units")
def convert_words(rng: random.Random) -> Draft:
    n = rng.choice([12, 26, 80, 150, 300, 2000])
    src, dst, src_word, dst_word = rng.choice(UNITS)
    return Draft({"n": words(n), "from": src_word, "to": dst_word}, [call("convert_units", ("from_unit", "to_unit"), value=[n], from_unit=list(src), to_unit=list(dst))])
