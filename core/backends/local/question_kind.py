"""What kind of answer a question asks for, from its interrogative phrase, in the languages people ask in.

A quantity question ("how much", "wie groß", "ile", "combien") is answered by a number with its unit;
a procedure question ("how do I", "wie kann ich", "jak", "comment") by the steps after the section's
introduction. Other questions get no preference. The phrases cover the common European languages,
not only the shared corpus's: the reader must serve a French or Italian manual as well as a German one.
"""
from __future__ import annotations

import re

from ...text import fold

QUANTITY = re.compile(r"""\b(
    how\s+(much|many|big|large|small|long|wide|high|tall|heavy|far|fast|thick|deep|often)
  | (what|which)\s+(\w+\s+){0,2}(size|dimensions?|voltage|current|weight|temperature|frequency|diameter|distance|capacity|range|rate|length|width|height|speed|power|value)
  | wie\s+(viel\w*|gross|lang|breit|hoch|schwer|weit|schnell|dick|tief|oft)
  | welche\w*\s+(\w+\s+){0,2}(grosse|abmessung\w*|spannung|strom\w*|gewicht|temperatur|frequenz|durchmesser|abstand|kapazitat|lange|breite|hohe|wert)
  | ile | jak[aeio]\w*\s+(\w+\s+){0,2}(rozmiar\w*|wymiar\w*|napiec\w*|prad\w*|wag\w*|temperatur\w*|czestotliwosc\w*|srednic\w*|odleglosc\w*|wartosc\w*)
  | jak\s+(duz\w*|dlug\w*|szerok\w*|wysok\w*|ciezk\w*|dalek\w*|czest\w*)
  | combien | quel\w*\s+(\w+\s+){0,2}(taille|dimensions?|tension|courant|poids|temperature|frequence|diametre|distance|capacite|longueur|largeur|hauteur)
  | quant[oaie]\w* | qual\w*\s+(\w+\s+){0,2}(dimension\w*|tension\w*|corrente|peso|temperatura|frequenza|diametro|distanza|capacita|lunghezza|larghezza|altezza)
  | cu[aá]nt[oa]s? | qu[eé]\s+(\w+\s+){0,2}(tamano|dimensiones|tension|corriente|peso|temperatura|frecuencia|diametro|distancia|capacidad)
  | hoeveel | hoe\s+(groot|lang|breed|hoog|zwaar)
)\b""", re.X)
PROCEDURE = re.compile(r"""\b(
    how\s+(do|can|should|would)\s+(i|you|we|one)\b | how\s+to\b | (which|what)\s+steps
  | wie\s+(\w+\s+){0,2}(ich|man)\b
  | jak\s+(\w+\s+){0,2}(moge|mozna|nalezy|trzeba|zrobic|ustawic|wlaczyc|usunac|nagrac|zainstalowac)\w* | jak\s+krok
  | comment\s+(faire|puis|peut|dois|on|je)\b
  | come\s+(si|posso|faccio|devo)\b
  | c[oó]mo\s+(se|puedo|hago|debo)\b
  | hoe\s+(kan|moet)\s+(ik|je|men)\b
)""", re.X)


def asks_quantity(question: str) -> bool:
    return bool(QUANTITY.search(fold(question)))


def asks_procedure(question: str) -> bool:
    return bool(PROCEDURE.search(fold(question)))
