"""What kind of answer a question asks for, from its interrogative phrase, in the languages people ask in.

A quantity question ("how much", "wie groß", "ile", "combien") is answered by a number with its unit;
a procedure question ("how do I", "wie kann ich", "jak", "comment") by the steps after the section's
introduction. Other questions get no preference. For a quantity question that names a measure (a current,
a temperature) asked_measure() says how a value of it is printed, so that quotes without one are owned up
to; counted() says how a count of the things asked about is printed, asked_shortcut() a key combination.
The phrases cover the common European languages, not only the shared corpus's: the reader must serve a
French or Italian manual as well as a German one.
"""

from __future__ import annotations

import re

from .fold import fold
from .stopwords import STOPWORDS

# The phrases that ask for a quantity or for steps: no kept library tells what kind of answer a question
# asks for, and the reader's preference for a number or for the steps rests on these.
QUANTITY = re.compile(
    r"""\b(
    how\s+(much|many|big|large|small|long|wide|high|tall|heavy|far|fast|thick|deep|often)
  | (what|which)('s|\s+is|\s+are)?\s+(\w+\s+){0,2}(size|dimensions?|voltage|current|weight|temperature|frequency|
      diameter|distance|capacity|range|rate|length|width|height|speed|power|value)
  | wie\s+(viel\w*|gross|lang|breit|hoch|schwer|weit|schnell|dick|tief|oft)
  | welche\w*\s+(\w+\s+){0,2}(grosse|abmessung\w*|spannung|strom\w*|gewicht|temperatur|frequenz|durchmesser|abstand|
      kapazitat|lange|breite|hohe|wert)
  | ile | jak[aeio]\w*\s+(\w+\s+){0,2}(rozmiar\w*|wymiar\w*|napiec\w*|prad\w*|wag\w*|temperatur\w*|czestotliwosc\w*|
      srednic\w*|odleglosc\w*|wartosc\w*)
  | jak\s+(duz\w*|dlug\w*|szerok\w*|wysok\w*|ciezk\w*|dalek\w*|czest\w*)
  | combien | quel\w*\s+(\w+\s+){0,2}(taille|dimensions?|tension|courant|poids|temperature|frequence|diametre|
      distance|capacite|longueur|largeur|hauteur)
  | quant[oaie]\w* | qual\w*\s+(\w+\s+){0,2}(dimension\w*|tension\w*|corrente|peso|temperatura|frequenza|diametro|
      distanza|capacita|lunghezza|larghezza|altezza)
  | cu[aá]nt[oa]s? | qu[eé]\s+(\w+\s+){0,2}(tamano|dimensiones|tension|corriente|peso|temperatura|frecuencia|
      diametro|distancia|capacidad)
  | hoeveel | hoe\s+(groot|lang|breed|hoog|zwaar)
)\b""",
    re.X,
)
PROCEDURE = re.compile(
    r"""\b(
    how\s+(do|can|should|would)\s+(i|you|we|one)\b | how\s+to\b | (which|what)\s+steps
  | wie\s+(\w+\s+){0,2}(ich|man)\b
  | jak\s+(\w+\s+){0,2}(moge|mozna|nalezy|trzeba|zrobic|ustawic|wlaczyc|usunac|nagrac|zainstalowac)\w* | jak\s+krok
  | comment\s+(faire|puis|peut|dois|on|je)\b
  | come\s+(si|posso|faccio|devo)\b
  | c[oó]mo\s+(se|puedo|hago|debo)\b
  | hoe\s+(kan|moet)\s+(ik|je|men)\b
)""",
    re.X,
)


def asks_quantity(question: str) -> bool:
    return bool(QUANTITY.search(fold(question)))


def asks_procedure(question: str) -> bool:
    return bool(PROCEDURE.search(fold(question)))


# The quantity a question names, and how a value of it is printed: a number and its unit, in any language.
NUMBER_BEFORE = r"\d(?:[.,]\d+)?\s?"
MEASURES = (
    ("temperature", re.compile(r"\b(temperat\w*)\b"), re.compile(r"°\s?[CF]|℃")),
    (
        "current",
        re.compile(r"\b(current|strom\w*|prad\w*|courant|corrente|corriente)\b"),
        re.compile(NUMBER_BEFORE + r"[mµu]?A\b"),
    ),
    (
        "voltage",
        re.compile(r"\b(voltage|spannung\w*|napiec\w*|tension\w*|tensione)\b"),
        re.compile(NUMBER_BEFORE + r"[mk]?V\b|\dV\d"),
    ),
    (
        "frequency",
        re.compile(r"\b(frequen\w*|czestotliwos\w*|frecuencia|taktrate|clock|sample\s+rate|abtastrate)\b"),
        re.compile(NUMBER_BEFORE + r"[kMG]?Hz\b", re.I),
    ),
    (
        "weight",
        re.compile(r"\b(weight|weigh\w*|gewicht|wag[aie]\w*|poids|peso|how\s+heavy|wie\s+schwer)\b"),
        re.compile(NUMBER_BEFORE + r"(k?g|lbs?|oz)\b"),
    ),
    (
        "power",
        re.compile(
            r"\b(power(?!\s+(supply|tree|jack|input|source))|\w*leistung|moc[ay]?|puissance|potenza|potencia)\b"
        ),
        re.compile(NUMBER_BEFORE + r"[mk]?W\b"),
    ),
    (
        "resistance",
        re.compile(r"\b(resist\w*|\w*widerstand\w*|rezystor\w*|opor\w*)\b"),
        re.compile(NUMBER_BEFORE + r"[kM]?(Ω|[o0]hm)", re.I),
    ),  # OCR reads "Ohm" as "0hm"
    (
        "memory",
        re.compile(r"\b(memory|flash|sram|eeprom|ram|speicher\w*|pamiec\w*|memoire|memoria)\b"),
        re.compile(NUMBER_BEFORE + r"[kKMG]i?B\b|\d\s?(bytes?|kbytes?)\b", re.I),
    ),
    (
        "length",
        re.compile(
            r"\b(how\s+(big|large|small|wide|high|tall|far|thick|deep)|wie\s+(gross|breit|hoch|weit|dick|tief)|"
            r"jak\s+(duz|szerok|wysok|dalek)\w*|size|dimensions?|distance|diameter|length|width|height|spacing|"
            r"thickness|"
            r"\w*abstand|durchmesser|grosse|abmessung\w*|lange|breite|hohe|dicke|"
            r"rozmiar\w*|wymiar\w*|odleglosc\w*|srednic\w*|dlugosc\w*|szerokosc\w*|wysokosc\w*|"
            r"taille|diametre|longueur|largeur|hauteur|dimension\w*|distanza|diametro|lunghezza|"
            r"larghezza|altezza|tamano|distancia)\b"
        ),
        re.compile(NUMBER_BEFORE + r"(mm|cm|m|mil|inch\w*)\b|\d\s?[x×]\s?\d|\d\s?(\"|″)"),
    ),
)


VALUE = re.compile(r"(?<![\w.,])(\d+(?:[.,]\d+)?)\s?(?:[mkµu]?[AVW]|°C|[kM]?Hz|mm)\b")


def stated_values(text: str) -> set[str]:
    """The values with a unit a text states ("3.3 V", "20mA"), as numbers with a dot: the conditions a
    question sets ("from the 3.3 V pin") that a quote giving its measure must share."""
    return {v.replace(",", ".") for v in VALUE.findall(text)}


SHORTCUT = re.compile(
    r"\b(shortcut|hotkey|key\s+combination|keyboard|tastenk\w*|skrot\w*|klawisz\w*|raccourci\w*|"
    r"scorciatoi\w*|atajo\w*)"
)
KEY_COMBINATION = re.compile(r"\b(ctrl|strg|shift|umschalt|alt|cmd|command|option)\s*\+\s*\w", re.I)


def asked_shortcut(question: str) -> re.Pattern | None:
    """For a question asking for a keyboard shortcut: how one is printed ("Ctrl+D", "Strg + I")."""
    return KEY_COMBINATION if SHORTCUT.search(fold(question)) else None


COUNT = re.compile(
    r"\b(how\s+many|wie\s+viele|ile|combien\s+de|quant[ie]|cu[aá]nt[oa]s|hoeveel)\s+((?:[\w/-]+\s+){0,2}[\w/-]+)"
)


def counted(question: str) -> re.Pattern | None:
    """For "how many <things>": how a count of them is printed, a number before one of the words naming
    them, or ending a compound of one ("9 Schaltausgänge", "14 digital I/O pins", "1x 16-bit Timer"), to
    match against folded text."""
    found = COUNT.search(fold(question))
    if not found:
        return None
    roots = [re.escape(w[:5]) for w in re.findall(r"[^\W\d_]{3,}", found.group(2)) if w not in STOPWORDS]
    return (
        re.compile(r"\b\d+x?\s+(\S+\s+){0,2}?\S*?(" + "|".join(roots) + ")") if roots else None
    )  # "2 Wechsler-Kontakte"


def asked_measure(question: str) -> tuple[str, re.Pattern] | None:
    """For a quantity question naming a measure ("what current", "wie viel Strom"): its name and how a
    value of it is printed; None for any other question. The measure is the first named from the
    interrogative on ("According to the power tree, how much current" asks a current)."""
    folded = fold(question)
    asked = QUANTITY.search(folded)
    if not asked:
        return None
    named = [(found.start(), name, value) for name, noun, value in MEASURES for found in noun.finditer(folded)]
    after = [n for n in named if n[0] >= asked.start()]
    return min(after or named, key=lambda n: n[0])[1:] if named else None  # "wie viel Spannung … für den Strom"
