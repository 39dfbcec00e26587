"""Page ranking, shared by both stores: BM25 over page words (bm25.py, saved by bm25_file.py), dense
page scores (dense.py), their fusion (fusion.py), the neighbouring pages put in (gaps.py), and the
question's words that no visible page holds (absent_words.py).
"""
