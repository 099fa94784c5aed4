"""Code-aware tokenizer shared by index building and querying (settings live in the manifest)."""

from __future__ import annotations

import re
import threading
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Any, Iterable

from codenib.core.errors import BadInputError

_WORD = re.compile(r"[^\W\d]\w*|\d+", re.UNICODE)
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")

#: English function words (a compact list; BM25's idf handles the rest).
ENGLISH_STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers herself him himself his how i if in into is it
    its itself just me more most my myself no nor not now of off on once only or other our ours
    ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself yourselves
    """.split()
)

#: Words in nearly every Python definition: they carry no signal for retrieval.
CODE_STOPWORDS = frozenset({"self", "cls", "def", "elif", "lambda", "none", "true", "false", "pass"})

STOPWORD_SETS = {
    "none": frozenset(),
    "english": ENGLISH_STOPWORDS,
    "english+code": ENGLISH_STOPWORDS | CODE_STOPWORDS,
}

#: Tokens longer than this are hashes, base64 or minified data, not words.
MAX_TOKEN_CHARS = 64
#: Han, kana and Hangul: scripts written without spaces between words, so a `\w+` run is a
#: whole clause; their runs become overlapping character bigrams (`cjk="bigrams"`), the usual
#: index unit for CJK text without a segmenter.
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+")
#: How CJK runs are tokenized: "bigrams", or "none" (a run is one word, as before bigrams).
CJK_MODES = ("bigrams", "none")


@dataclass(frozen=True, slots=True)
class TokenizerConfig:
    """How text becomes BM25 tokens; saved in the manifest so queries match the index."""

    lowercase: bool = True
    split_identifiers: bool = True   # camelCase, PascalCase, snake_case and digits
    keep_whole: bool = True          # also keep the whole identifier as one token
    stopwords: str = "english+code"
    stemmer: str | None = "english"  # a PyStemmer algorithm name, or None
    cjk: str = "bigrams"             # CJK_MODES

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "TokenizerConfig":
        known = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        # A manifest written before CJK bigrams keeps its CJK runs whole, as it was built.
        known.setdefault("cjk", "none")
        return cls(**known)


class Tokenizer:
    """Turns code or queries into tokens. Thread-safe; stems are memoised."""

    def __init__(self, config: TokenizerConfig = TokenizerConfig()):
        if config.stopwords not in STOPWORD_SETS:
            raise BadInputError(f"unknown stopword set {config.stopwords!r}",
                                fix=f"use one of: {', '.join(sorted(STOPWORD_SETS))}")
        if config.cjk not in CJK_MODES:
            raise BadInputError(f"unknown CJK tokenization {config.cjk!r}", fix=f"use one of: {', '.join(CJK_MODES)}")
        self.config = config
        self._bigrams = config.cjk == "bigrams"
        self._stop = STOPWORD_SETS[config.stopwords]
        self._stem = _stemmer(config.stemmer) if config.stemmer else None
        # Code repeats its identifiers: each distinct word is split, filtered and stemmed once
        # (a build's texts hold ~30 words per distinct one). Dict reads and writes are atomic.
        self._words: dict[str, tuple[str, ...]] = {}

    def __call__(self, text: str) -> list[str]:
        return self.tokenize(text)

    def tokenize(self, text: str) -> list[str]:
        """Tokens of one text, in order (duplicates kept: they are term frequencies)."""
        out: list[str] = []
        words = self._words
        for word in _WORD.findall(text):
            known = words.get(word)
            if known is not None:
                out.extend(known)
            elif self._bigrams and not word.isascii() and _CJK.search(word):
                self._cjk_word(word, out)
            else:
                self._word(word, out)
        return out

    def tokenize_many(self, texts: Iterable[str]) -> list[list[str]]:
        return [self.tokenize(t) for t in texts]

    def _cjk_word(self, word: str, out: list[str]) -> None:
        """A word holding CJK runs: each run as its character bigrams (a lone character as
        itself), the text between runs as ordinary words."""
        at = 0
        for m in _CJK.finditer(word):
            if m.start() > at:
                self._word(word[at:m.start()], out)
            run = m.group()
            out.extend([run] if len(run) == 1 else [run[i:i + 2] for i in range(len(run) - 1)])
            at = m.end()
        if at < len(word):
            self._word(word[at:], out)

    def _word(self, word: str, out: list[str]) -> None:
        """One word's tokens (remembered for the next time it is seen)."""
        tokens: list[str] = []
        self._word_tokens(word, tokens)
        if len(self._words) >= _MAX_WORDS_KEPT:
            self._words.clear()
        self._words[word] = tuple(tokens)
        out.extend(tokens)

    def _word_tokens(self, word: str, out: list[str]) -> None:
        """One word's tokens: the whole identifier beside its parts, stopwords out, stems."""
        cfg = self.config
        if len(word) > MAX_TOKEN_CHARS:
            return
        parts = split_identifier(word) if cfg.split_identifiers else [word]
        if cfg.keep_whole and len(parts) > 1:
            whole = word.strip("_")
            out.append(whole.lower() if cfg.lowercase else whole)
        for part in parts:
            low = part.lower()
            if low in self._stop:
                continue
            token = low if cfg.lowercase else part
            if self._stem is not None and not token.isdigit():
                token = self._stem(token)
            out.append(token)


def cjk_characters(text: str) -> int:
    """How many Han, kana and Hangul characters `text` holds (its words are not spaced out)."""
    return sum(len(run) for run in _CJK.findall(text))


#: Distinct words whose tokens a tokenizer remembers (then it starts again from none).
_MAX_WORDS_KEPT = 200_000


@lru_cache(maxsize=200_000)
def split_identifier(word: str) -> list[str]:
    """`HTTPServer_v2` -> ["HTTP", "Server", "v", "2"]: snake, camel and Pascal parts and digits."""
    parts: list[str] = []
    for chunk in word.split("_"):
        if chunk:
            # Case boundaries are only split in ASCII: re has no Unicode upper/lower classes.
            parts.extend((_CAMEL.findall(chunk) or [chunk]) if chunk.isascii() else [chunk])
    return parts or [word]


def _stemmer(name: str):
    try:
        import Stemmer  # PyStemmer
    except ImportError as exc:  # pragma: no cover - a declared dependency
        from codenib.core.errors import MissingDependencyError

        raise MissingDependencyError("Stemmer", "PyStemmer", "stemming") from exc
    try:
        stemmer = Stemmer.Stemmer(name)
    except KeyError as exc:
        raise BadInputError(f"unknown stemmer {name!r}",
                            fix=f"use one of: {', '.join(Stemmer.algorithms())}, or none") from exc
    lock = threading.Lock()  # PyStemmer objects are not thread-safe

    @lru_cache(maxsize=200_000)
    def stem(word: str) -> str:
        with lock:
            return stemmer.stemWord(word)

    return stem
