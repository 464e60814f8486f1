"""Forms: one definition per document kind, used both to write a document and to read it back.

A ``Form[T]`` pairs a frozen dataclass ``T`` (the document's typed fields) with a template: literal
text and ``{field}`` placeholders. ``form.render(value)`` writes the text a planter adds to the
world; ``form.parse(text)`` reads the same fields back from the text an agent sees (``None`` when
the text is not of this form). The regular expression is generated from the template (literal text
escaped, each field's ``Kind`` pattern; a field used twice must hold the same value both times), so
no task module writes a document body or a regular expression by hand.

Each field's ``Kind`` says how a value is written and read, and which values are allowed:
``render`` raises ``ValueError`` on a value its kind does not accept, which is what keeps
``parse(render(v)) == v`` true (``tests/test_taskkit.py`` checks it per form over generated values).

    @dataclass(frozen=True)
    class Note:
        user: str
        ended: str

    NOTE = Form(Note, "{user} left on {ended}.", user=TOKEN, ended=DATE)
    NOTE.render(Note("NWALSH", "2025-03-01"))      # 'NWALSH left on 2025-03-01.'
    NOTE.parse("NWALSH left on 2025-03-01.")       # Note(user='NWALSH', ended='2025-03-01')

Fields without a kind default by annotation: ``str`` -> ``LINE``, ``int`` -> ``INT``. Values the
builder replaces with ids (``{E:idx}``, ``{D:handle}``) are written with ``entry_ref`` / ``doc_ref``
into ``REF`` fields; after the build the agent reads the entry's or document's id there.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Kind:
    """How one field is written and read: a regular expression for its text, and the two conversions."""

    name: str
    pattern: str
    write: Callable[[Any], str] = str
    read: Callable[[str], Any] = str
    #: for an int kind that accepts only some ints: (lowest, highest, step) of the values it accepts
    domain: tuple[int, int, int] | None = None

    def render(self, value: Any) -> str:
        text = self.write(value)
        if not re.fullmatch(self.pattern, text, flags=re.S):
            raise ValueError(f"{value!r} is not a {self.name} (its text {text!r} must match {self.pattern!r})")
        return text


def fixed(places: int, *, commas: bool = False, signed: bool = False) -> Kind:
    """A decimal written with ``places`` decimals, held as an int count of its smallest unit
    (``fixed(2)`` holds cents: 1234 is written 12.34; ``commas`` groups thousands: 1,234.56;
    ``signed`` always writes the sign: +12.34, -0.05)."""
    unit = 10 ** places
    sep = "," if commas else ""
    sign = "+" if signed else ""
    digits = r"\d{1,3}(?:,\d{3})*" if commas else r"\d+"

    def write(v: int) -> str:
        return f"{int(v) / unit:{sign}{sep}.{places}f}"

    def read(s: str) -> int:
        return int(round(float(s.replace(",", "")) * unit))
    name = f"fixed({places}{', commas' if commas else ''}{', signed' if signed else ''})"
    return Kind(name, rf"{'[+-]' if signed else '-?'}{digits}\.\d{{{places}}}", write, read)


#: any text on one line (a description, a purpose); the template's next literal ends it
LINE = Kind("line", r"[^\n]*?")
#: a name of words (a person, a role, a department, an account name): no separators , ; : ( ) or newline
NAME = Kind("name", r"[^\n,;:()]*[^\n,;:() ]")
#: one token without spaces or separators (a user id, an account code, a reference, a change request)
TOKEN = Kind("token", r"[^\s,;:()]+?")
#: a lower-case word (a basis, a status)
WORD = Kind("word", r"[a-z]+")
#: an integer
INT = Kind("int", r"-?\d+", str, int)
#: an ISO date (held as its text, ``YYYY-MM-DD``)
DATE = Kind("date", r"\d{4}-\d{2}-\d{2}")
#: an amount in cents written as currency, thousands grouped: 1234567 -> 12,345.67
MONEY = fixed(2, commas=True)
#: a signed amount in cents, the sign always written (a difference): 1234567 -> +12,345.67, -5 -> -0.05
SIGNED_MONEY = fixed(2, commas=True, signed=True)


def hhmm(seconds: int) -> str:
    """A time of day in seconds after midnight as ``HH:MM``."""
    if seconds % 60:
        raise ValueError(f"{seconds} s is not a whole minute")
    return f"{seconds // 3600:02d}:{seconds % 3600 // 60:02d}"


def _seconds(text: str) -> int:
    h, m = text.split(":")
    return int(h) * 3600 + int(m) * 60


#: a time of day held as seconds after midnight, written ``HH:MM`` (whole minutes)
HHMM = Kind("hh:mm", r"\d{2}:\d{2}", hhmm, _seconds, domain=(0, 24 * 3600 - 60, 60))
#: a date and time of day as a listing or a log writes them (``2026-01-14 10:23`` or ``2026-01-14 10:23:45``),
#: held as its text
TIMESTAMP = Kind("timestamp", r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}(?::\d{2})?")
#: a count written with thousands grouped (``1,234`` units), held as an int
COUNT = Kind("count", r"\d{1,3}(?:,\d{3})*", lambda v: f"{int(v):,}", lambda s: int(s.replace(",", "")),
             domain=(0, 10**12, 1))
#: an amount in whole currency units, thousands grouped: 25000 -> 25,000 (a limit a policy states); written and
#: read as a ``COUNT`` is
WHOLE_MONEY = COUNT
#: a run of dots leading the eye from a label to its value in a table (``Controller ...... USD 500,000``)
LEADER = Kind("leader", r"\.+")
#: nothing: a field a variant of a document leaves out (its text is empty, its value '')
EMPTY = Kind("empty", "")
#: the books' document number an entry's reference holds (``VN-0001234``: two capitals, a dash, five or
#: more digits), as a whole word, so ``Form.search`` finds it inside a title
DOC_NUMBER = Kind("document number", r"\b[A-Z]{2}-[0-9]{5,}\b")
#: an entry or document reference: ``{E:idx}`` / ``{D:handle}`` when planted, the id once built
REF = Kind("ref", r"\{[ED]:\d+\}|DOC-\d+|\d+")


def entry_ref(idx: int) -> str:
    """The text a ``REF`` field holds for entry ``idx`` (the builder writes the entry's id there)."""
    return f"{{E:{int(idx)}}}"


def doc_ref(handle: int) -> str:
    """The text a ``REF`` field holds for document ``handle`` (the builder writes its id there)."""
    return f"{{D:{int(handle)}}}"


@dataclass(frozen=True)
class Many(Generic[T]):
    """A field holding a sequence of items, each written by one of ``forms`` and separated by
    ``sep`` (the lines of a report). Held as a tuple; an item's text may not contain ``sep``."""

    forms: tuple["Form[Any]", ...]
    sep: str = "\n"

    def kind(self) -> Kind:
        def write(items: Sequence[Any]) -> str:
            return self.sep.join(self._form_of(it).render(it) for it in items)

        def read(text: str) -> tuple[Any, ...]:
            return tuple(self._read_item(t) for t in text.split(self.sep)) if text else ()
        return Kind("many", r".*?", write, read)

    def _form_of(self, item: Any) -> "Form[Any]":
        for f in self.forms:
            if isinstance(item, f.cls):
                return f
        raise ValueError(f"no form of this list writes a {type(item).__name__}")

    def _read_item(self, text: str) -> Any:
        for f in self.forms:
            v = f.parse(text)
            if v is not None:
                return v
        raise ValueError(f"no form of this list reads {text!r}")


_FIELD = re.compile(r"\{(\w+)\}")


class Form(Generic[T]):
    """A document kind: ``cls`` (a frozen dataclass of its fields), a template, and each field's kind."""

    def __init__(self, cls: type[T], template: str, **kinds: Kind | Many[Any]):
        self.cls = cls
        self.template = template
        names = [f.name for f in dataclasses.fields(cls)]  # type: ignore[arg-type]
        types = {f.name: f.type for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
        used = _FIELD.findall(template)
        if set(used) != set(names):
            raise ValueError(f"template fields {sorted(set(used))} differ from {cls.__name__}'s {sorted(names)}")
        if set(kinds) - set(names):
            raise ValueError(f"kinds for unknown fields {sorted(set(kinds) - set(names))}")
        #: each field's kind as given (a ``Many`` stays one: a property test generates its items)
        self.fields: dict[str, Kind | Many[Any]] = {}
        self.kinds: dict[str, Kind] = {}
        for n in names:
            k = kinds.get(n) or (INT if types[n] in (int, "int") else LINE)
            self.fields[n] = k
            self.kinds[n] = k.kind() if isinstance(k, Many) else k
        self._parts = _FIELD.split(template)  # literal, field, literal, field, ..., literal
        regex, seen = [], set()
        for i, part in enumerate(self._parts):
            if i % 2 == 0:
                regex.append(re.escape(part))
            elif part in seen:
                regex.append(f"(?P={part})")
            else:
                seen.add(part)
                regex.append(f"(?P<{part}>{self.kinds[part].pattern})")
        self.regex = re.compile("".join(regex), flags=re.S)

    def render(self, value: T) -> str:
        """The document text of ``value``; ``ValueError`` when a field's value is not of its kind."""
        if not isinstance(value, self.cls):
            raise TypeError(f"{self.cls.__name__} expected, got {type(value).__name__}")
        texts = {n: k.render(getattr(value, n)) for n, k in self.kinds.items()}
        return "".join(part if i % 2 == 0 else texts[part] for i, part in enumerate(self._parts))

    def parse(self, text: str) -> T | None:
        """The fields of a text of this form, or ``None`` when ``text`` is not one."""
        m = self.regex.fullmatch(text)
        if m is None:
            return None
        return self.cls(**{n: k.read(m.group(n)) for n, k in self.kinds.items()})

    def search(self, text: str) -> T | None:
        """The fields of the first passage of ``text`` of this form (a line of a longer document)."""
        m = self.regex.search(text)
        return None if m is None else self.cls(**{n: k.read(m.group(n)) for n, k in self.kinds.items()})

    def find_all(self, text: str) -> list[T]:
        """The fields of every passage of ``text`` of this form, left to right, not overlapping (every
        amount ``USD {amount}`` of a document)."""
        return [self.cls(**{n: k.read(m.group(n)) for n, k in self.kinds.items()}) for m in self.regex.finditer(text)]


@dataclass(frozen=True)
class Lines:
    """A document that is a list of lines between a fixed head and tail (a log, a report)."""

    lines: tuple[Any, ...]


class LinesForm(Form[Lines]):
    """The form of a ``Lines`` document: ``head``, then one line per item (each written by one of
    ``items``, the item forms), then ``tail``. ``in_order`` sorts items by their text, the order
    a log or a report lists them in (by the date each line starts with, then the rest)."""

    def __init__(self, head: str, tail: str, *items: Form[Any], sep: str = "\n"):
        self.items: Many[Any] = Many(tuple(items), sep)
        super().__init__(Lines, head + "{lines}" + tail, lines=self.items)

    def line(self, item: Any) -> str:
        """The text of one item's line."""
        return self.items._form_of(item).render(item)

    def in_order(self, items: Sequence[T]) -> list[T]:
        """``items`` sorted by the text of their lines."""
        return sorted(items, key=self.line)


def mentions(text: str, words: str) -> bool:
    """Whether ``text`` names ``words`` as whole words, in any case (``'akim'`` is in ``'keyed by AKIM.'``,
    not in ``'AKIMBO'``): how a scorer reads a free text (a summary, a rationale) for a name."""
    return bool(re.search(rf"\b{re.escape(words)}\b", text or "", flags=re.I))


def parse_any(text: str, forms: Sequence[Form[Any]]) -> Any:
    """The value of the first of ``forms`` that reads ``text`` (``None`` when none does)."""
    for f in forms:
        v = f.parse(text)
        if v is not None:
            return v
    return None


__all__ = ["COUNT", "DATE", "DOC_NUMBER", "EMPTY", "HHMM", "INT", "LEADER", "LINE", "MONEY", "NAME", "REF",
           "SIGNED_MONEY", "TIMESTAMP", "TOKEN", "WHOLE_MONEY", "WORD", "Form", "Kind", "Lines", "LinesForm", "Many",
           "doc_ref", "hhmm", "entry_ref", "fixed", "mentions", "parse_any"]
