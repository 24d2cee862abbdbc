"""Every word asked for exists (docs/design.md, "Staff desk"): each key a template or the code asks `t` for, read from
the files themselves, is in TEXTS in Spanish and English, so a missing label fails here rather than showing its key;
a key built from a prefix ('mailkind_' + kind) has words for at least one value."""

import ast
import re

import pytest

from _agenda.words.texts import TEXTS
from conftest import ROOT

PACKAGE = ROOT / "_agenda"
LITERAL = re.compile(r"""\bt\(\s*(['"])([a-z][a-z0-9_.]*)\1\s*([,)+])""")


def asked_in_templates():
    """(file, key, whether it is a prefix) for each t('...') of every template."""
    for path in sorted(PACKAGE.rglob("*.tpl")):
        for match in LITERAL.finditer(path.read_text(encoding="utf-8")):
            yield path.name, match.group(2), match.group(3) == "+"


def asked_in_code():
    """(module, key, whether it is a prefix) for each call of a translator named t with a literal or an f-string."""
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "t" and node.args):
                continue
            first = node.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                yield path.name, first.value, False
            elif isinstance(first, ast.JoinedStr) and isinstance(first.values[0], ast.Constant):
                yield path.name, first.values[0].value, True
            elif isinstance(first, ast.BinOp) and isinstance(first.left, ast.Constant):
                yield path.name, first.left.value, True


ASKED = sorted(set(asked_in_templates()) | set(asked_in_code()))


def missing(asked, texts):
    """What of `asked` has no words in `texts`, in both languages, as the lines a test prints."""
    wrong = []
    for where, key, prefix in asked:
        found = [name for name in texts if name.startswith(key)] if prefix else [key] if key in texts else []
        if not found or not all(all(texts[name]) for name in found):
            wrong.append(f"{where} asks for {key!r}{' + ...' if prefix else ''}: add it to TEXTS in words/texts.py")
    return wrong


def test_every_word_asked_for_is_there_in_both_languages():
    assert len(ASKED) > 300 and ("appointment.tpl", "mail_send", False) in ASKED  # the reader finds them
    assert ("outbox.py", "x", False) not in ASKED
    assert not missing(ASKED, TEXTS), "\n".join(missing(ASKED, TEXTS))


def test_a_word_missing_or_half_written_is_named():
    texts = {key: value for key, value in TEXTS.items() if key not in ("mail_send", "mailkind_state")}
    texts["cancel"] = ("Anular", "")
    found = missing(ASKED, texts)
    assert any("appointment.tpl asks for 'mail_send'" in line for line in found)
    assert any("'cancel'" in line for line in found)


def test_no_key_of_texts_is_written_twice():
    """A key written twice in TEXTS (the patient's words in it too) keeps only its last words, silently: another
    room's words would replace these."""
    keys = []
    for module, name in (("texts.py", "TEXTS"), ("patient_texts.py", "PATIENT_TEXTS")):
        tree = ast.parse((PACKAGE / "words" / module).read_text(encoding="utf-8"))
        table = next(node.value for node in tree.body if isinstance(node, ast.Assign)
                     and getattr(node.targets[0], "id", None) == name)
        keys += [key.value for key in table.keys if isinstance(key, ast.Constant)]
    assert sorted({key for key in keys if keys.count(key) > 1}) == []
