"""The words that give a question's topic away (the topics: records.TOPICS) and a price's words and
currencies, in English, German and Polish."""

from __future__ import annotations

import re

PRICE_WORDS = re.compile(r"\b(price|prices|cost|costs|pric\w*|preis\w*|kosten|cena|ceny|koszt\w*)\b", re.I)
CURRENCY = re.compile(r"(€|\$|£|\bEUR\b|\bUSD\b|\bPLN\b|\bzł|\bCHF\b)", re.I)
TOPIC_CUES = [  # words that give a question's topic away (the topics: records.TOPICS)
    ("warranty", ("warrant", "garantie", "gewährleistung", "gwarancj")),
    ("complaint", ("complain", "reklamation", "beschwerde", "reklamacj", "defect")),
    ("price", ("price", "cost", "preis", "kosten", "cena", "koszt")),
    ("service", ("service", "repair", "maintenance", "wartung", "reparatur", "serwis", "napraw", "support")),
    (
        "instructions",
        (
            "how do",
            "how to",
            "install",
            "step",
            "procedure",
            "connect",
            "anleitung",
            "einstell",
            "schritt",
            "jak ",
            "instrukc",
            "krok",
            "update",
            "flash",
        ),
    ),
]
