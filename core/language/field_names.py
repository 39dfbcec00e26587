"""Field names of technical documents in six languages (English, German, Polish, French, Italian, Spanish):
the words in which a question and a page in two languages share no letters ("voltage", "Spannung",
"napięcie"). The small local embedding model does not single out the answering line in another language,
and words match only themselves; the extractive reader lets a page's own language's name of a field the
question names stand in for the question's word. Each entry gives the six languages in that order, then
common synonyms in any of them (these are recognised in a question, never looked for on a page: their
language is not known). General vocabulary of datasheets and manuals, written without looking at any
evaluation question; not tuned to a corpus.

Kept, measured against Debian's FreeDict pairs of English with the other five in its place (every
translation of a question's words and two-word phrases into the page's language standing in): key fact in
the lead fell from 0.435 to 0.413 on the broad judging half and anywhere from 0.543 to 0.522, though
techdocs gained 3 leads and the tuning half 1 (eval/RESULTS.md, thirteenth session).
"""

from __future__ import annotations

from . import identify
from .fold import fold
from .phrases import Phrases
from .stopwords import STOPWORDS
from .tokens import stem, tokens

FIELD_NAMES: tuple[tuple[str, ...], ...] = (
    # --- electrical quantities and parts ---
    ("voltage", "spannung", "napięcie", "tension", "tensione", "tensión", "voltaje"),
    ("current", "strom", "prąd", "courant", "corrente", "corriente", "stromstärke", "natężenie"),
    ("power", "leistung", "moc", "puissance", "potenza", "potencia"),
    ("resistance", "widerstand", "rezystancja", "résistance", "resistenza", "resistencia", "opór"),
    ("resistor", "widerstand", "rezystor", "résistance", "resistore", "resistencia", "resistor"),
    ("capacitor", "kondensator", "kondensator", "condensateur", "condensatore", "condensador"),
    ("battery", "batterie", "bateria", "batterie", "batteria", "batería", "akku", "akumulator"),
    ("fuse", "sicherung", "bezpiecznik", "fusible", "fusibile", "fusible"),
    ("ground", "masse", "masa", "masse", "massa", "masa", "earth", "erde", "uziemienie", "terre", "terra", "tierra"),
    ("power supply", "netzteil", "zasilacz", "alimentation", "alimentatore", "fuente de alimentación"),
    ("supply", "versorgung", "zasilanie", "alimentation", "alimentazione", "alimentación", "stromversorgung"),
    ("charger", "ladegerät", "ładowarka", "chargeur", "caricabatterie", "cargador", "caricatore"),
    ("input", "eingang", "wejście", "entrée", "ingresso", "entrada"),
    ("output", "ausgang", "wyjście", "sortie", "uscita", "salida"),
    ("pin", "pin", "pin", "broche", "pin", "pin", "piedino", "patilla"),
    ("connector", "steckverbinder", "złącze", "connecteur", "connettore", "conector"),
    ("plug", "stecker", "wtyczka", "fiche", "spina", "clavija"),
    ("socket", "steckdose", "gniazdo", "prise", "presa", "enchufe", "buchse", "gniazdko", "outlet"),
    ("cable", "kabel", "kabel", "câble", "cavo", "cable"),
    ("wire", "draht", "przewód", "fil", "filo", "hilo"),
    ("terminal", "klemme", "zacisk", "borne", "morsetto", "borne", "terminal"),
    ("switch", "schalter", "przełącznik", "interrupteur", "interruttore", "interruptor", "włącznik"),
    ("button", "taste", "przycisk", "bouton", "pulsante", "botón", "knopf", "tasto"),
    ("channel", "kanal", "kanał", "canal", "canale", "canal"),
    ("signal", "signal", "sygnał", "signal", "segnale", "señal"),
    ("receiver", "empfänger", "odbiornik", "récepteur", "ricevitore", "receptor"),
    ("transmitter", "sender", "nadajnik", "émetteur", "trasmettitore", "transmisor", "emisor"),
    ("sensor", "sensor", "czujnik", "capteur", "sensore", "sensor", "fühler"),
    ("motor", "motor", "silnik", "moteur", "motore", "motor"),
    ("driver", "treiber", "sterownik", "pilote", "driver", "controlador"),
    ("lamp", "lampe", "lampa", "lampe", "lampada", "lámpara"),
    ("light", "licht", "światło", "lumière", "luce", "luz"),
    ("brightness", "helligkeit", "jasność", "luminosité", "luminosità", "brillo"),
    ("polarity", "polarität", "polaryzacja", "polarité", "polarità", "polaridad", "biegunowość"),
    ("short circuit", "kurzschluss", "zwarcie", "court-circuit", "cortocircuito", "cortocircuito"),
    ("frequency", "frequenz", "częstotliwość", "fréquence", "frequenza", "frecuencia"),
    ("circuit", "schaltung", "obwód", "circuit", "circuito", "circuito", "stromkreis", "schaltkreis"),
    ("load", "last", "obciążenie", "charge", "carico", "carga"),
    ("consumption", "verbrauch", "pobór", "consommation", "consumo", "consumo", "zużycie"),
    ("capacity", "kapazität", "pojemność", "capacité", "capacità", "capacidad"),
    ("display", "anzeige", "wyświetlacz", "afficheur", "display", "pantalla", "affichage"),
    ("indicator", "anzeige", "wskaźnik", "voyant", "spia", "indicador", "kontrollleuchte", "indicateur", "indicatore"),
    # --- mechanical and physical ---
    ("size", "größe", "rozmiar", "taille", "dimensione", "tamaño", "wielkość"),
    ("dimension", "abmessung", "wymiar", "dimension", "dimensione", "dimensión", "maß"),
    ("width", "breite", "szerokość", "largeur", "larghezza", "anchura", "ancho"),
    ("height", "höhe", "wysokość", "hauteur", "altezza", "altura", "alto"),
    ("length", "länge", "długość", "longueur", "lunghezza", "longitud", "largo"),
    ("depth", "tiefe", "głębokość", "profondeur", "profondità", "profundidad", "fondo"),
    ("thickness", "dicke", "grubość", "épaisseur", "spessore", "grosor", "stärke", "espesor"),
    ("diameter", "durchmesser", "średnica", "diamètre", "diametro", "diámetro"),
    ("weight", "gewicht", "waga", "poids", "peso", "peso", "ciężar"),
    ("distance", "abstand", "odległość", "distance", "distanza", "distancia", "entfernung"),
    ("angle", "winkel", "kąt", "angle", "angolo", "ángulo"),
    ("hole", "loch", "otwór", "trou", "foro", "agujero", "bohrung", "orificio"),
    ("screw", "schraube", "śruba", "vis", "vite", "tornillo", "wkręt"),
    ("nut", "mutter", "nakrętka", "écrou", "dado", "tuerca"),
    ("washer", "unterlegscheibe", "podkładka", "rondelle", "rondella", "arandela"),
    ("thread", "gewinde", "gwint", "filetage", "filettatura", "rosca"),
    ("mounting", "montage", "montaż", "montage", "montaggio", "montaje", "assembly", "fixation"),
    ("installation", "installation", "instalacja", "installation", "installazione", "instalación", "einbau"),
    ("bracket", "halterung", "uchwyt", "support", "staffa", "soporte", "halter", "wspornik"),
    ("housing", "gehäuse", "obudowa", "boîtier", "involucro", "carcasa", "enclosure", "case", "contenitore"),
    ("cover", "abdeckung", "pokrywa", "couvercle", "coperchio", "tapa", "deckel"),
    ("material", "material", "materiał", "matériau", "materiale", "material"),
    ("color", "farbe", "kolor", "couleur", "colore", "color", "colour"),
    ("temperature", "temperatur", "temperatura", "température", "temperatura", "temperatura"),
    ("humidity", "feuchtigkeit", "wilgotność", "humidité", "umidità", "humedad", "luftfeuchtigkeit"),
    ("waterproof", "wasserdicht", "wodoodporny", "étanche", "impermeabile", "impermeable", "wodoszczelny"),
    ("pressure", "druck", "ciśnienie", "pression", "pressione", "presión"),
    ("noise", "geräusch", "hałas", "bruit", "rumore", "ruido", "lärm"),
    ("cooling", "kühlung", "chłodzenie", "refroidissement", "raffreddamento", "refrigeración"),
    ("overheating", "überhitzung", "przegrzanie", "surchauffe", "surriscaldamento", "sobrecalentamiento"),
    ("fan", "lüfter", "wentylator", "ventilateur", "ventola", "ventilador", "ventilator", "ventilatore"),
    ("tool", "werkzeug", "narzędzie", "outil", "utensile", "herramienta", "attrezzo"),
    ("accessory", "zubehör", "akcesorium", "accessoire", "accessorio", "accesorio"),
    ("spare part", "ersatzteil", "część zamienna", "pièce de rechange", "ricambio", "repuesto"),
    ("label", "etikett", "etykieta", "étiquette", "etichetta", "etiqueta"),
    ("packaging", "verpackung", "opakowanie", "emballage", "imballaggio", "embalaje"),
    ("protection", "schutz", "ochrona", "protection", "protezione", "protección", "zabezpieczenie"),
    ("storage", "lagerung", "przechowywanie", "stockage", "conservazione", "almacenamiento", "entreposage"),
    # --- data and software ---
    ("firmware", "firmware", "firmware", "micrologiciel", "firmware", "firmware", "oprogramowanie układowe"),
    ("software", "software", "oprogramowanie", "logiciel", "software", "software"),
    ("update", "aktualisierung", "aktualizacja", "mise à jour", "aggiornamento", "actualización", "update"),
    ("file", "datei", "plik", "fichier", "file", "archivo", "fichero"),
    ("folder", "ordner", "folder", "dossier", "cartella", "carpeta", "katalog", "directory", "verzeichnis"),
    ("format", "format", "format", "format", "formato", "formato"),
    ("data", "daten", "dane", "données", "dati", "datos"),
    ("setting", "einstellung", "ustawienie", "réglage", "impostazione", "ajuste", "paramètre"),
    ("parameter", "parameter", "parametr", "paramètre", "parametro", "parámetro"),
    ("configuration", "konfiguration", "konfiguracja", "configuration", "configurazione", "configuración"),
    ("menu", "menü", "menu", "menu", "menu", "menú"),
    ("option", "option", "opcja", "option", "opzione", "opción"),
    ("mode", "modus", "tryb", "mode", "modalità", "modo", "betriebsart"),
    ("memory", "speicher", "pamięć", "mémoire", "memoria", "memoria"),
    ("data storage", "speicherplatz", "pamięć masowa", "stockage", "archiviazione", "almacenamiento"),
    ("speed", "geschwindigkeit", "prędkość", "vitesse", "velocità", "velocidad", "szybkość"),
    ("interface", "schnittstelle", "interfejs", "interface", "interfaccia", "interfaz"),
    ("port", "port", "port", "port", "porta", "puerto"),
    ("connection", "anschluss", "połączenie", "connexion", "collegamento", "conexión", "verbindung", "connessione"),
    ("network", "netzwerk", "sieć", "réseau", "rete", "red", "netz"),
    ("wireless", "drahtlos", "bezprzewodowy", "sans fil", "wireless", "inalámbrico", "senza fili", "kabellos"),
    ("version", "version", "wersja", "version", "versione", "versión"),
    ("language", "sprache", "język", "langue", "lingua", "idioma"),
    ("device", "gerät", "urządzenie", "appareil", "dispositivo", "dispositivo", "dispositif"),
    ("app", "app", "aplikacja", "application", "applicazione", "aplicación", "application"),
    ("password", "passwort", "hasło", "mot de passe", "password", "contraseña", "kennwort"),
    ("download", "herunterladen", "pobrać", "télécharger", "scaricare", "descargar", "pobierać"),
    ("install", "installieren", "zainstalować", "installer", "installare", "instalar", "instalować"),
    ("save", "speichern", "zapisać", "enregistrer", "salvare", "guardar", "sauvegarder"),
    ("delete", "löschen", "usunąć", "supprimer", "eliminare", "eliminar", "cancellare", "borrar"),
    ("record", "aufnehmen", "nagrywać", "enregistrer", "registrare", "grabar", "nagrać"),
    ("export", "exportieren", "eksportować", "exporter", "esportare", "exportar"),
    ("import", "importieren", "importować", "importer", "importare", "importar"),
    ("track", "spur", "ścieżka", "piste", "traccia", "pista"),
    ("volume", "lautstärke", "głośność", "volume", "volume", "volumen"),
    ("resolution", "auflösung", "rozdzielczość", "résolution", "risoluzione", "resolución"),
    ("status", "status", "stan", "état", "stato", "estado", "zustand"),
    ("message", "meldung", "komunikat", "message", "messaggio", "mensaje", "nachricht", "wiadomość"),
    (
        "pair",
        "koppeln",
        "sparować",
        "appairer",
        "associare",
        "emparejar",
        "associer",
        "jumeler",
        "accoppiare",
        "vincular",
    ),
    # --- manual structure, specifications and actions ---
    ("manual", "anleitung", "instrukcja", "manuel", "manuale", "manual", "handbuch", "bedienungsanleitung"),
    (
        "datasheet",
        "datenblatt",
        "karta katalogowa",
        "fiche technique",
        "scheda tecnica",
        "hoja de datos",
        "ficha técnica",
    ),
    ("specification", "spezifikation", "specyfikacja", "spécification", "specifica", "especificación"),
    ("schematic", "schaltplan", "schemat", "schéma", "schema", "esquema", "diagram", "schaltbild"),
    ("wiring", "verdrahtung", "okablowanie", "câblage", "cablaggio", "cableado", "verkabelung"),
    ("function", "funktion", "funkcja", "fonction", "funzione", "función"),
    (
        "operation",
        "betrieb",
        "działanie",
        "fonctionnement",
        "funzionamento",
        "funcionamiento",
        "operating",
        "bedienung",
        "obsługa",
    ),
    ("use", "verwendung", "użytkowanie", "utilisation", "uso", "uso", "gebrauch", "użycie", "usage"),
    ("model", "modell", "model", "modèle", "modello", "modelo"),
    ("serial number", "seriennummer", "numer seryjny", "numéro de série", "numero di serie", "número de serie"),
    (
        "accuracy",
        "genauigkeit",
        "dokładność",
        "précision",
        "precisione",
        "precisión",
        "exactitude",
        "accuratezza",
        "exactitud",
    ),
    ("range", "bereich", "zakres", "plage", "intervallo", "rango", "gamme", "gamma", "intervalo"),
    ("range", "reichweite", "zasięg", "portée", "portata", "alcance"),
    ("maximum", "maximum", "maksimum", "maximum", "massimo", "máximo", "max", "maksymalny", "maximal"),
    ("minimum", "minimum", "minimum", "minimum", "minimo", "mínimo", "min", "minimalny", "minimal"),
    (
        "rated",
        "nennwert",
        "znamionowy",
        "nominal",
        "nominale",
        "nominal",
        "nominal value",
        "wartość znamionowa",
        "valeur nominale",
        "valore nominale",
        "valor nominal",
    ),
    ("default", "standard", "domyślny", "par défaut", "predefinito", "predeterminado", "voreinstellung", "por defecto"),
    (
        "factory setting",
        "werkseinstellung",
        "ustawienie fabryczne",
        "réglage d'usine",
        "impostazione di fabbrica",
        "configuración de fábrica",
        "paramètres d'usine",
    ),
    ("warning", "warnung", "ostrzeżenie", "avertissement", "avvertenza", "advertencia", "avvertimento"),
    ("caution", "vorsicht", "uwaga", "attention", "attenzione", "precaución", "précaution"),
    ("danger", "gefahr", "niebezpieczeństwo", "danger", "pericolo", "peligro"),
    ("note", "hinweis", "uwaga", "remarque", "nota", "nota"),
    ("safety", "sicherheit", "bezpieczeństwo", "sécurité", "sicurezza", "seguridad"),
    ("warranty", "garantie", "gwarancja", "garantie", "garanzia", "garantía", "gewährleistung", "guarantee"),
    ("maintenance", "wartung", "konserwacja", "entretien", "manutenzione", "mantenimiento", "maintenance"),
    ("cleaning", "reinigung", "czyszczenie", "nettoyage", "pulizia", "limpieza"),
    ("repair", "reparatur", "naprawa", "réparation", "riparazione", "reparación"),
    (
        "troubleshooting",
        "fehlerbehebung",
        "rozwiązywanie problemów",
        "dépannage",
        "risoluzione dei problemi",
        "solución de problemas",
        "störungsbeseitigung",
    ),
    ("error", "fehler", "błąd", "erreur", "errore", "error"),
    ("fault", "störung", "usterka", "panne", "guasto", "avería", "malfunction", "défaut", "fallo", "awaria"),
    ("disposal", "entsorgung", "utylizacja", "élimination", "smaltimento", "eliminación"),
    ("step", "schritt", "krok", "étape", "passaggio", "paso", "passo"),
    ("procedure", "vorgehensweise", "procedura", "procédure", "procedura", "procedimiento", "verfahren"),
    ("check", "prüfen", "sprawdzić", "vérifier", "controllare", "comprobar", "überprüfen", "verificare", "verificar"),
    ("connect", "anschließen", "podłączyć", "connecter", "collegare", "conectar", "verbinden", "połączyć", "brancher"),
    ("disconnect", "trennen", "odłączyć", "déconnecter", "scollegare", "desconectar", "débrancher", "disconnettere"),
    ("press", "drücken", "nacisnąć", "appuyer", "premere", "pulsar", "presionar", "naciskać"),
    ("hold", "halten", "przytrzymać", "maintenir", "tenere", "mantener", "gedrückt halten", "tenere premuto"),
    ("click", "klicken", "kliknąć", "cliquer", "cliccare", "hacer clic"),
    ("select", "auswählen", "wybrać", "sélectionner", "selezionare", "seleccionar", "wählen"),
    ("turn on", "einschalten", "włączyć", "allumer", "accendere", "encender", "switch on"),
    ("turn off", "ausschalten", "wyłączyć", "éteindre", "spegnere", "apagar", "switch off"),
    ("reset", "zurücksetzen", "zresetować", "réinitialiser", "ripristinare", "restablecer", "resetować", "resettare"),
    ("adjust", "einstellen", "regulować", "régler", "regolare", "ajustar", "ajuster"),
    ("calibrate", "kalibrieren", "kalibrować", "calibrer", "calibrare", "calibrar", "étalonner"),
    ("remove", "entfernen", "wyjąć", "retirer", "rimuovere", "retirar", "quitar", "zdjąć"),
)


LANGUAGES = ("en", "de", "pl", "fr", "it", "es")  # the order of each entry's first six forms
# A form's word matches a question's word when equal, or, from this length on, when the question's word
# continues it by up to three letters ("cable" ~ "cables", "spannung" ~ "spannungen").
INFLECTABLE = 5
_FORMS = Phrases(((fold(form), concept) for concept, forms in enumerate(FIELD_NAMES) for form in forms), INFLECTABLE)


def field_names_in(text: str) -> list[tuple[int, set[str]]]:
    """The field names `text` uses, in any of the languages: (concept, the search terms of its words there).
    A name of two words is one field, not also a field of its second word ("power supply", not "supply")."""
    words = tokens(text)
    found, end = [], 0
    for start, stop, concept in _FORMS.spans(words):
        if start >= end:
            found.append((concept, _terms(" ".join(words[start:stop]))))
            end = stop
    return found


def language_of(text: str) -> str | None:
    """Which of the six languages a page is written in (identify.py); None for another or a mixed one."""
    return identify.language_of(text, LANGUAGES)


def name_in(concept: int, language: str) -> set[str]:
    """The search terms of a field's name in one of the six languages."""
    return _terms(FIELD_NAMES[concept][LANGUAGES.index(language)])


def _terms(name: str) -> set[str]:
    """A name's search terms: its words' stems (no abbreviations added, each must be on the line)."""
    return {stem(t) for t in tokens(name) if t not in STOPWORDS}
