"""Every natural-language word list and rule of pixelrag: folding, stopwords, tokens, names, abbreviations,
field names, the kind of answer a question asks for, follow-up cues and topic cues. No other module writes
a word of any language; they ask this package.
"""
