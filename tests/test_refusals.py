"""Refusals are codes all the way (docs/design.md, "Errors" and "Staff desk"): every (code, rule, field) the
clinic can raise has words in Spanish and English in texts.py, found by the code and the rule, never by
reading the English message; the desk shows them, each beside its field, and never the API's English."""

import ast
import datetime as dt
import importlib
import re

import pytest
import webtest
from hypothesis import given, settings, strategies as st

from _agenda.domain.slots import SLOT_REFUSALS
from _agenda.words.texts import refusal_fields, refusal_key, refusal_text, TEXTS, translator
from _agenda.domain.patients import patient_fields
from _agenda.values.refusals import ClinicError
from _agenda.web.answers import STATUS_OF
from conftest import ROOT, table_rows
from test_desk import last_form, log_in, PASSWORD

PACKAGE = ROOT / "_agenda"
SPANISH, ENGLISH = translator("es"), translator("en")


def trees():
    """Every module of the package parsed, each node knowing its parent."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            for child in ast.iter_child_nodes(node):
                child.parent = node
        found[path.relative_to(PACKAGE).with_suffix("").as_posix()] = tree
    return found


TREES = trees()
RAISES = [node for tree in TREES.values() for node in ast.walk(tree)
          if isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("invalid", "ClinicError")]
# The command line names its options (--date) in its own messages: its calls name no field of the clinic's.
CALLS = [node for module, tree in TREES.items() if module.split("/")[0] != "cli" for node in ast.walk(tree)
         if isinstance(node, ast.Call)]


def called(call):
    return call.func.id if isinstance(call.func, ast.Name) else getattr(call.func, "attr", None)


def where(node):
    module = next(name for name, tree in TREES.items() if any(n is node for n in ast.walk(tree)))
    return f"_agenda/{module}.py:{node.lineno}"


def argument(call, index, name):
    """The expression a call passes for a parameter, by keyword or position; None when it passes none."""
    by_name = [keyword.value for keyword in call.keywords if keyword.arg == name]
    if by_name:
        return by_name[0]
    if index is None or index >= len(call.args) or any(isinstance(a, ast.Starred) for a in call.args[:index + 1]):
        return None
    return call.args[index]


def enclosing(node, kinds):
    while not isinstance(node, kinds):
        node = node.parent
    return node


def module_literal(name):
    """The literal tuple or list a module of the package binds to `name` at its top (CATALOG_COLUMNS = (...)), or None."""
    found = [node.value for tree in TREES.values() for node in tree.body if isinstance(node, ast.Assign)
             and [getattr(t, "id", None) for t in node.targets] == [name]
             and isinstance(node.value, (ast.Tuple, ast.List))]
    return found[0] if len(found) == 1 else None


def built_literal(name):
    """A tuple of texts a module of the package builds at import (RECTIFIABLE from PATIENT_COLUMNS) by this
    name, as the literal it amounts to, or None."""
    found = {value for stem in TREES if isinstance(value := getattr(importlib.import_module("_agenda." + stem.replace("/", ".")),
                                                                    name, None), tuple)
             and value and all(isinstance(item, str) for item in value)}
    return ast.Tuple([ast.Constant(item) for item in found.pop()]) if len(found) == 1 else None


def literal_items(iterable, target, name):
    """The constants a loop over a literal tuple binds to `name`, or None when it binds no such name."""
    if isinstance(iterable, ast.Name):
        iterable = module_literal(iterable.id) or built_literal(iterable.id) or iterable
    if isinstance(iterable, ast.Tuple) and any(isinstance(item, ast.Starred) for item in iterable.elts):
        spread = [built_literal(item.value.id) if isinstance(item, ast.Starred) and isinstance(item.value, ast.Name)
                  else item for item in iterable.elts]
        if None in spread:
            return None
        iterable = ast.Tuple([part for item in spread for part in (item.elts if isinstance(item, ast.Tuple) else
                                                                   [item])])
    names = [target.id] if isinstance(target, ast.Name) else [getattr(n, "id", None) for n in target.elts]
    if name not in names or not isinstance(iterable, (ast.Tuple, ast.List)):
        return None
    items = [item if isinstance(target, ast.Name) else item.elts[names.index(name)] for item in iterable.elts]
    return {item.value for item in items}


def vararg_values(iterable, target, name):
    """What the calls of a function pass in its *args, when a loop over them binds `name`; else None."""
    function = enclosing(iterable, (ast.FunctionDef, ast.Module))
    if not (isinstance(target, ast.Name) and target.id == name and isinstance(iterable, ast.Name)
            and getattr(getattr(function, "args", None), "vararg", None) and function.args.vararg.arg == iterable.id):
        return None
    return set().union(*(values_of(arg) for call in CALLS if called(call) == function.name
                         for arg in call.args[len(function.args.args):]))


def values_of(expr):
    """The texts an expression at a raise site can be: a constant, a loop's literal items, or a parameter's
    values at every call of its function (transitively)."""
    if expr is None or isinstance(expr, ast.Constant):
        return {getattr(expr, "value", None)}
    assert isinstance(expr, ast.Name), f"{where(expr)}: a refusal's rule or field is a name or a constant"
    node = expr
    while not isinstance(node, ast.Module):
        node = node.parent
        loops = [(node.iter, node.target)] if isinstance(node, ast.For) else [
            (g.iter, g.target) for g in getattr(node, "generators", [])]
        for iterable, target in loops:
            items = literal_items(iterable, target, expr.id) or vararg_values(iterable, target, expr.id)
            if items is not None:
                return items
        if isinstance(node, (ast.FunctionDef, ast.Lambda)) and expr.id in [a.arg for a in node.args.args]:
            return parameter_values(node, expr.id, guards(expr, node))
    raise AssertionError(f"{where(expr)}: {expr.id} cannot be followed to its values")


def guards(node, function):
    """The parameters a raise needs to be true (`if required:`) to be reached."""
    found = set()
    while node is not function:
        parent = node.parent
        if isinstance(parent, ast.If) and isinstance(parent.test, ast.Name) and node in parent.body:
            found.add(parent.test.id)
        node = parent
    return found & {a.arg for a in function.args.args}


def parameter_values(function, name, needed=()):
    """What the calls of `function` pass for its parameter `name` (its default when they pass none),
    among the calls passing a true value for each parameter in `needed`."""
    if isinstance(function, ast.Lambda):
        raise AssertionError(f"{where(function)}: a lambda's parameter names a refusal's field")
    params = [a.arg for a in function.args.args]
    offset = 1 if params[0] in ("self", "cls") else 0
    defaults = dict(zip(params[len(params) - len(function.args.defaults):], function.args.defaults))
    found = set()
    for call in (c for c in CALLS if called(c) == function.name):
        def passed(param):
            return argument(call, params.index(param) - offset, param) or defaults.get(param)
        if any(isinstance(passed(p), ast.Constant) and not passed(p).value for p in needed):
            continue
        found |= values_of(passed(name))
    return found


def raised():
    """Every (code, rule, field) the raise sites of the package can give, and what is wrong with any site
    (an INVALID_REQUEST without its rule, a rule or field that cannot be followed to its texts)."""
    found, problems = set(), []
    for call in RAISES:
        name = called(call)
        if getattr(enclosing(call, (ast.FunctionDef, ast.Module)), "name", None) == "invalid":
            continue
        first = 0 if name == "invalid" else 1
        code = "INVALID_REQUEST" if name == "invalid" else getattr(call.args[0], "value", None) if call.args and \
            not isinstance(call.args[0], ast.Starred) else None
        if code is None or argument(call, None, "parts") is not None:
            continue  # a code chosen elsewhere (STATUS_OF covers it), or a refusal made of others' parts
        try:
            rules = set(SLOT_REFUSALS) if code == "SLOT_NOT_AVAILABLE" else values_of(argument(call, first + 1, "rule"))
            assert code != "INVALID_REQUEST" or None not in rules, f"{where(call)}: an INVALID_REQUEST names its rule"
            found |= {(code, rule, field) for rule in rules for field in values_of(argument(call, first + 2, "field"))}
        except AssertionError as problem:
            problems.append(str(problem))
    return sorted(found, key=lambda part: tuple(str(p) for p in part)), problems


RAISED, PROBLEMS = raised()


def test_every_raise_site_names_its_rule_and_field_plainly():
    assert PROBLEMS == []


def test_the_walk_finds_the_refusals_of_the_parsers_and_of_the_clinic():
    assert {("INVALID_REQUEST", "required", "nif"), ("INVALID_REQUEST", "real_date", "birthDate"),
            ("INVALID_NIF", None, "nif"), ("INVALID_PHONE", None, "phone"), ("INVALID_REQUEST", "required", "dates"),
            ("INVALID_REQUEST", "guardian", "guardianNif"), ("SLOT_NOT_AVAILABLE", "taken", None),
            ("INVALID_REQUEST", "time_shape", "newTime"), ("INVALID_REQUEST", "catalog", "insurance"),
            ("PATIENT_NOT_FOUND", None, None)} <= set(RAISED)
    assert ("INVALID_REQUEST", "required", "kept") not in RAISED  # query_text("kept") is never required


def words(key):
    found = TEXTS.get(key)
    return found if found and len(found) == 2 and all(isinstance(w, str) and w.strip() for w in found) else None


@pytest.mark.parametrize("code, rule, field", RAISED, ids=["/".join(map(str, part)) for part in RAISED])
def test_every_refusal_the_clinic_can_raise_has_spanish_and_english_words(code, rule, field):
    said = words(refusal_key(code, rule))
    assert said, f"no words for {refusal_key(code, rule)}"
    assert field is None or words(f"field_{field}"), f"no words for field_{field}"
    assert field is not None or not any("{field}" in w for w in said), "words naming a field for a refusal of none"
    error = ClinicError(code, "an English message", rule, field)
    for t in (SPANISH, ENGLISH):
        text = refusal_text(t, error)
        assert "{field}" not in text and "English" not in text and "rule_" not in text and "field_" not in text


@pytest.mark.parametrize("code", sorted(STATUS_OF))
def test_every_code_either_edge_answers_has_words_of_its_own(code):
    assert words(code)


def test_every_code_raised_has_its_status():
    assert {part[0] for part in RAISED} <= set(STATUS_OF)


@pytest.mark.parametrize("reason", sorted(SLOT_REFUSALS))
def test_every_reason_a_slot_is_refused_for_has_words(reason):
    assert words(f"reason_{reason}")


def test_a_refusal_naming_several_fields_holds_each_as_a_part_and_the_api_message_is_unchanged():
    with pytest.raises(ClinicError) as refused:
        patient_fields({"name": " ", "nif": "12345678A", "birthDate": "31/02/2000", "phone": "12"},
                       dt.date(2026, 11, 23))
    error = refused.value
    assert error.code == "INVALID_REQUEST" and error.message == (
        "name is required; nif is not a valid DNI: check its digits and letter; birthDate is not a real date; "
        "phone is not a valid phone number")
    assert error.payload() == {"error": {"code": "INVALID_REQUEST", "message": error.message}}
    assert error.parts == (("INVALID_REQUEST", "required", "name"), ("INVALID_NIF", None, "nif"),
                           ("INVALID_REQUEST", "real_date", "birthDate"), ("INVALID_PHONE", None, "phone"))
    assert refusal_fields(SPANISH, error) == {
        "name": "Nombre: falta este dato.", "nif": "El NIF no es válido: hay que revisar sus números y la letra.",
        "birthDate": "Nacimiento: esa fecha no existe.", "phone": "El teléfono no es válido."}
    assert refusal_fields(ENGLISH, error)["birthDate"] == "Birth date: that date does not exist."
    assert refusal_text(SPANISH, error).startswith("Nombre: falta este dato. El NIF no es válido")


def test_one_bad_field_is_its_own_refusal_with_its_rule_and_field():
    with pytest.raises(ClinicError) as refused:
        patient_fields({"name": "Eva", "nif": "11111111H", "birthDate": "1/1/2099"}, dt.date(2026, 11, 23))
    assert (refused.value.code, refused.value.rule, refused.value.field) == ("INVALID_REQUEST", "future", "birthDate")
    assert refused.value.parts == (("INVALID_REQUEST", "future", "birthDate"),)
    assert refusal_text(SPANISH, refused.value) == "Nacimiento: no puede ser una fecha futura."


FORM_TEXT = st.one_of(st.none(), st.text(max_size=14), st.sampled_from(
    ["", " ", "12345678Z", "12345678A", "X1234567L", "Y1234567A", "612345678", "12", "+34 699", "31/02/2000",
     "1/1/2099", "03/04/2019", "2019-04-03", "ab/cd/efgh", "PA1234567"]))


@settings(max_examples=300, deadline=None)
@given(fields=st.fixed_dictionaries({name: FORM_TEXT for name in ("name", "surname", "nif", "phone", "birthDate")}),
       guarded=st.booleans())
def test_whatever_a_patient_form_holds_its_refusal_is_in_the_desks_words_beside_its_fields(fields, guarded):
    try:
        patient_fields({k: v for k, v in fields.items() if v is not None}, dt.date(2026, 11, 23), guarded=guarded)
    except ClinicError as error:
        assert set(error.message.split("; ")) and len(error.parts) == len(error.message.split("; "))
        for t in (SPANISH, ENGLISH):
            beside = refusal_fields(t, error)
            assert set(beside) == {part[2] for part in error.parts} <= set(fields)
            for part in error.message.split("; "):
                assert part not in refusal_text(t, error)
            assert all(words(refusal_key(code, rule)) for code, rule, _ in error.parts)


@pytest.fixture
def desk(api):
    api.app.accounts.add_staff("ana", PASSWORD)
    client = webtest.TestApp(api.app)
    log_in(client)
    return client


def beside(page, name):
    """The words shown beside a form's field (inside its label), or None."""
    note = page.html.find("input", attrs={"name": name}).find_parent("label").find("span", class_="wrong")
    return note.text if note else None


def english_of(error_messages, page):
    """The API's English messages a page shows, part by part (none, at the desk)."""
    return [part for message in error_messages for part in message.split("; ") if part in page.text]


def test_a_new_patient_with_three_bad_fields_hears_each_beside_its_field_in_spanish(api, desk, db_path):
    before = table_rows(db_path)
    form = last_form(desk.get("/desk/book?doctorId=MARTIN&date=24/11/2026&time=09:30&centerId=C1"))
    for name, value in {"name": "Eva", "nif": "12345678A", "phone": "12", "birthDate": "31/02/2000"}.items():
        form[name] = value
    refused = form.submit(expect_errors=True)
    assert refused.status_int == 400
    assert beside(refused, "nif") == "El NIF no es válido: hay que revisar sus números y la letra."
    assert beside(refused, "phone") == "El teléfono no es válido."
    assert beside(refused, "birthDate") == "Nacimiento: esa fecha no existe."
    assert beside(refused, "name") is None and beside(refused, "surname") is None
    assert "Nacimiento: esa fecha no existe." in refused.html.find("p", class_="error").text
    assert [last_form(refused)[name].value for name in ("nif", "phone", "birthDate")] == ["12345678A", "12",
                                                                                            "31/02/2000"]
    assert english_of(["nif is not a valid DNI; phone is not a valid phone number; birthDate is not a real date"],
                      refused) == []
    assert table_rows(db_path) == before


def test_correcting_a_patient_badly_says_each_field_beside_it_in_english_when_the_browser_asks(api, desk):
    patient_id = api.new_patient()
    english = {"Accept-Language": "en-GB,en;q=0.9"}
    page = desk.get(f"/desk/patients/{patient_id}", headers=english)
    form = next(form for form in page.forms.values() if form.action == f"/desk/patients/{patient_id}")
    form["name"], form["nif"], form["birthDate"] = "", "Y1234567A", "2099-01-01"
    refused = form.submit(headers=english, expect_errors=True)
    assert refused.status_int == 400
    assert beside(refused, "name") == "Name: this is required."
    assert beside(refused, "nif") == "The NIF is not valid: check its digits and letter."
    assert beside(refused, "birthDate") == "Birth date: cannot be in the future."
    assert last_form(refused)["nif"].value == "Y1234567A"
    assert english_of(["name is required; nif is not a valid NIE: check its digits and letter; "
                       "birthDate is in the future"], refused) == []
    assert api.get("/patients?nif=12345678Z").json["name"] == "Ana"


@pytest.mark.parametrize("path, fields, said, english", [
    ("/desk/closures", {"dateFrom": "31/02/2026"}, "Desde: esa fecha no existe.", "dateFrom is not a real date"),
    ("/desk/closures", {"dateFrom": "24/11/2026", "start": "9:00:30", "end": "10:00"},
     "Hora inicio: escribe la hora sin segundos (HH:MM).", "start must be on the minute (HH:MM)"),
    ("/desk/closures", {"dateFrom": "25/11/2026", "dateTo": "24/11/2026"}, "El último día es anterior al primero.",
     "the last day is before the first"),
    ("/desk/waitlist", {"patientId": "1", "doctorId": "MARTIN", "dateFrom": "1/13/2026", "dateTo": "x"},
     "Desde: esa fecha no existe. Hasta: la fecha se escribe DD/MM/AAAA.", "dateFrom is not a real date"),
    ("/desk/series", {"doctorId": "MARTIN", "date": "24/11/2026", "time": "09:30", "centerId": "C1", "n": "x",
                      "unit": "w", "count": "x", "step": "preview"},
     "Cada: un número de semanas o de días (de 1 a 99). Sesiones: de 2 a 60.", "count must be 2 to 60"),
])
def test_no_desk_form_ever_shows_the_apis_english(api, desk, path, fields, said, english):
    patient_id = api.new_patient()
    fields = {**fields, "patientId": patient_id} if path == "/desk/series" else fields
    page = desk.get("/desk/day")
    csrf = page.html.find("input", attrs={"name": "csrf"})["value"]
    refused = desk.post(path, {"csrf": csrf, **fields}, expect_errors=True)
    assert refused.status_int == 400
    assert said in re.sub(r"\s+", " ", refused.html.find(class_="error").text)
    assert english not in refused.text
