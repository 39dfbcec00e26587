"""Technical abbreviations and their written-out forms (English, German, Polish).

Datasheets print "MCU", "PSU" or "GND" where people ask about a microcontroller, a power supply or
ground, and the small local embedding model does not know that they are the same thing. Wherever a
written-out form appears, in a page or in a question, the abbreviation is added as an extra token, so
either wording finds the other and both languages meet on the same token. Only well-established,
unambiguous abbreviations belong here; the list is general technical vocabulary, not tuned to a corpus.
"""

from __future__ import annotations

from .phrases import Phrases

# No kept library maps abbreviations to their written-out forms across languages (FreeDict's pairs translate
# words, not "MCU" to "Mikrocontroller").
# abbreviation -> written-out forms, lowercase, diacritics folded (see fold.py), words separated by
# spaces. Long words also match inflected endings ("microcontrollers", "zasilacza"; see INFLECTABLE).
ABBREVIATIONS: dict[str, tuple[str, ...]] = {
    "mcu": ("microcontroller", "micro controller", "microcontroller unit", "mikrocontroller", "mikrokontroler"),
    "cpu": ("central processing unit",),
    "gpu": ("graphics processing unit", "grafikprozessor", "procesor graficzny"),
    "pcb": ("printed circuit board", "circuit board", "leiterplatte", "platine", "plytka drukowana"),
    "psu": ("power supply unit", "power supply", "netzteil", "zasilacz"),
    "led": ("light emitting diode", "leuchtdiode", "dioda elektroluminescencyjna"),
    "oled": ("organic light emitting diode",),
    "lcd": ("liquid crystal display", "flussigkristallanzeige", "wyswietlacz cieklokrystaliczny"),
    "tft": ("thin film transistor",),
    "esc": ("electronic speed controller", "electronic speed control", "fahrtregler"),
    "bec": ("battery eliminator circuit",),
    "pwm": ("pulse width modulation", "pulsweitenmodulation", "modulacja szerokosci impulsu"),
    "adc": (
        "analog to digital converter",
        "analog digital converter",
        "analog digital wandler",
        "przetwornik analogowo cyfrowy",
    ),
    "dac": (
        "digital to analog converter",
        "digital analog converter",
        "digital analog wandler",
        "przetwornik cyfrowo analogowy",
    ),
    "gpio": ("general purpose input output",),
    "uart": ("universal asynchronous receiver transmitter",),
    "usb": ("universal serial bus",),
    "spi": ("serial peripheral interface",),
    "i2c": ("inter integrated circuit",),
    "ic": ("integrated circuit", "integrierter schaltkreis", "uklad scalony"),
    "eeprom": ("electrically erasable programmable read only memory",),
    "ram": ("random access memory", "arbeitsspeicher", "pamiec operacyjna"),
    "rom": ("read only memory", "festwertspeicher"),
    "gnd": ("ground", "uziemienie"),
    "ac": ("alternating current", "wechselstrom", "prad przemienny"),
    "dc": ("direct current", "gleichstrom", "prad staly"),
    "rpm": ("revolutions per minute", "umdrehungen pro minute", "obrotow na minute"),
    "ntc": ("negative temperature coefficient",),
    "mosfet": ("metal oxide semiconductor field effect transistor",),
    "lipo": ("lithium polymer", "litowo polimerowy"),
    "nimh": ("nickel metal hydride",),
    "os": ("operating system", "betriebssystem", "system operacyjny"),
    "gui": ("graphical user interface", "grafische benutzeroberflache", "graficzny interfejs uzytkownika"),
    "fps": ("frames per second", "bilder pro sekunde", "klatek na sekunde"),
    "dpi": ("dots per inch",),
    "ssd": ("solid state drive", "solid state disk"),
    "hdd": ("hard disk drive", "hard disk", "festplatte", "dysk twardy"),
    "lan": ("local area network", "lokales netzwerk", "siec lokalna"),
    "esd": ("electrostatic discharge", "elektrostatische entladung", "wyladowanie elektrostatyczne"),
    "emc": ("electromagnetic compatibility", "elektromagnetische vertraglichkeit", "kompatybilnosc elektromagnetyczna"),
    "awg": ("american wire gauge",),
    "cnc": ("computer numerical control",),
    "fdm": ("fused deposition modeling",),
}

# Inflected endings (up to 3 more letters) are matched only on words at least this long; shorter ones
# must match whole.
INFLECTABLE = 7
_FORMS = Phrases(((form, abbreviation) for abbreviation, forms in ABBREVIATIONS.items() for form in forms), INFLECTABLE)


def abbreviation_spans(tokens: list[str]) -> list[tuple[int, int, str]]:
    """(start, end, abbreviation) for each written-out form in `tokens` (folded words, in reading order)."""
    return _FORMS.spans(tokens)


def abbreviations_in(tokens: list[str]) -> list[str]:
    return [abbreviation for _, _, abbreviation in abbreviation_spans(tokens)]
