"""The code-aware tokenizer."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from codenib.core.errors import BadInputError
from codenib.core.tokens import Tokenizer, TokenizerConfig, split_identifier

PLAIN = Tokenizer(TokenizerConfig(stemmer=None))


def test_identifier_splitting():
    assert split_identifier("getHTTPResponseCode") == ["get", "HTTP", "Response", "Code"]
    assert split_identifier("snake_case_name") == ["snake", "case", "name"]
    assert split_identifier("_private2go") == ["private", "2", "go"]
    assert split_identifier("HTTPServer") == ["HTTP", "Server"]


def test_whole_identifier_is_kept_beside_its_parts():
    assert PLAIN("ProgressBar.format_eta()") == ["progressbar", "progress", "bar", "format_eta", "format", "eta"]


def test_lowercase_stopwords_and_code_stopwords():
    assert PLAIN("The value of self is None") == ["value"]


def test_stemming_is_optional():
    stemmed = Tokenizer(TokenizerConfig(stemmer="english"))
    assert stemmed("running parsers") == ["run", "parser"]
    assert PLAIN("running parsers") == ["running", "parsers"]
    # Whole identifiers are not stemmed: exact names must match exactly.
    assert "parse_args" in stemmed("parse_args")


def test_non_ascii_long_and_numeric_tokens():
    assert PLAIN("café_crème 42") == ["café_crème", "café", "crème", "42"]
    assert PLAIN("x" * 200 + " ok") == ["ok"]  # a 200-character token is data, not a word


def test_config_round_trip():
    cfg = TokenizerConfig(stemmer=None, stopwords="english")
    assert TokenizerConfig.from_dict(cfg.to_dict()) == cfg


def test_code_of_other_languages_splits_on_scope_arrows_and_case():
    tok = Tokenizer(TokenizerConfig(stemmer=None, stopwords="none"))
    assert tok("fmt::detail::write_int") == ["fmt", "detail", "write_int", "write", "int"]
    assert tok("p->jv_free(x)") == ["p", "jv_free", "jv", "free", "x"]
    assert tok("this.resetTransport()") == ["this", "resettransport", "reset", "transport"]
    assert tok("impl<T> Display for InteractivePrinter<'a>") == [
        "impl", "t", "display", "for", "interactiveprinter", "interactive", "printer", "a"]


def test_cjk_runs_become_character_bigrams():
    assert PLAIN("解析日期") == ["解析", "析日", "日期"]
    assert PLAIN("中 文") == ["中", "文"]                           # a lone character is itself
    # Mixed words: the CJK run as bigrams, the identifier around it as before.
    assert PLAIN("parseDate解析失败") == ["parsedate", "parse", "date", "解析", "析失", "失败"]
    # A clause longer than a token's limit is still read (Chinese has no spaces).
    assert len(PLAIN("日" * 100)) == 99
    assert PLAIN("일이 삼") == ["일이", "삼"] and PLAIN("テスト") == ["テス", "スト"]


def test_a_word_seen_before_gives_the_same_tokens_again():
    # Each distinct word's tokens are remembered: the second time comes from memory.
    tok = Tokenizer(TokenizerConfig(stemmer=None))
    once = ["progressbar", "progress", "bar", "日期", "value"]
    assert tok("ProgressBar 日期 value") == once
    assert tok("ProgressBar 日期 value ProgressBar") == once + ["progressbar", "progress", "bar"]
    assert tok("the The") == []


def test_an_index_built_before_bigrams_keeps_its_runs_whole():
    old = TokenizerConfig.from_dict({"lowercase": True, "split_identifiers": True, "keep_whole": True,
                                     "stopwords": "english+code", "stemmer": None})
    assert old.cjk == "none" and Tokenizer(old)("解析日期") == ["解析日期"]
    assert TokenizerConfig().cjk == "bigrams"


def test_unknown_cjk_mode_is_refused():
    with pytest.raises(BadInputError, match="bigrams"):
        Tokenizer(TokenizerConfig(cjk="words"))


@given(st.text(alphabet=st.characters(max_codepoint=0x2FFF), max_size=200))
def test_text_without_cjk_tokenizes_as_before(text):
    for stemmer in (None, "english"):
        assert (Tokenizer(TokenizerConfig(stemmer=stemmer))(text)
                == Tokenizer(TokenizerConfig(stemmer=stemmer, cjk="none"))(text))


def test_cjk_characters_counts_han_kana_and_hangul_only():
    from codenib.core.tokens import cjk_characters

    assert cjk_characters("解析 date 日期") == 4
    assert cjk_characters("ひらがな カタカナ 한국어") == 11
    assert cjk_characters("plain ASCII, ü and ß") == 0
