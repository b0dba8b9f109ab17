from codex_memories.read.glossary import english_gloss


def test_a_question_in_another_language_gets_the_english_words_of_the_concepts_it_names():
    assert set(english_gloss("¿cómo despliego a producción?").split()) >= {"deploy", "production"}
    assert set(english_gloss("Wo liegt die Konfigurationsdatei?").split()) >= {"configuration"}
    assert set(english_gloss("本地数据库的端口是多少？").split()) >= {"local", "database", "port"}
    assert set(english_gloss("テストはどうやって実行する？").split()) >= {"test", "run"}
    assert set(english_gloss("как запустить миграции?").split()) >= {"migration", "run"}


def test_an_english_question_or_one_naming_no_known_concept_gets_no_gloss():
    assert english_gloss("how do I deploy the app to production?") == ""
    assert english_gloss("¿qué tal?") == ""
    assert english_gloss("") == ""


def test_a_short_form_matches_a_whole_word_only():
    # "бд" (database) is two letters: it must not match inside another word.
    assert "database" in english_gloss("где лежит бд?").split()
    assert "database" not in english_gloss("бдительность").split()


def test_a_whole_word_form_never_matches_inside_another_word():
    # "wo" (German: where) and "sin" (Spanish: without) are whole words, not prefixes or substrings.
    assert "where" not in english_gloss("zwei Dinge sind wichtig").split()
    assert "where" in english_gloss("wo liegt das?").split()
    assert "without" not in english_gloss("sinceramente no sé").split()
