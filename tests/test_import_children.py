"""An import never books one person's visit on another (docs/design.md, "Moving in and out"): a row under a
guardian's NIF with a child's name books that child and says so; a name that is neither the holder's nor a
child's is refused by line, naming them and the patients near it; the dry run says the same. Through the CLI."""

import sqlite3

import pytest
from click.testing import CliRunner

import agenda
from conftest import CLINIC_CSV, MONDAY, Clock, table_rows, valid_dni, write_csv

HEADER = "Fecha;Hora;Duración;Médico;Centro;DNI;Nombre;Apellidos\n"


def invoke(db_path, *args):
    runner = CliRunner(env={"AGENDA_DB": str(db_path), "AGENDA_SECRET": None})
    return runner.invoke(agenda.cli, [str(arg) for arg in args], obj={"now": Clock(MONDAY)}, catch_exceptions=False)


@pytest.fixture
def family_db(db_path, tmp_path):
    """A mother with a NIF and her two children without one; a boy of the family's surname under no guardian."""
    assert invoke(db_path, "seed", write_csv(tmp_path, CLINIC_CSV)).exit_code == 0
    people = write_csv(tmp_path, "Nombre;Apellidos;Fecha de nacimiento;DNI;Teléfono;DNI tutor\n"
                                 "Marta;García Ruiz;01/02/1980;00000001R;611000111;\n"
                                 "Pablo;García Ruiz;03/04/2019;;;00000001R\n"
                                 "Lucía;García Ruiz;05/06/2020;;;00000001R\n"
                                 "Hugo;García;07/08/2021;;;\n", "pacientes.csv")
    done = invoke(db_path, "import-patients", people)
    assert done.exit_code == 0, done.output
    return db_path


def ids(db_path):
    """{first name: patient id}."""
    conn = sqlite3.connect(db_path)
    try:
        return dict(conn.execute("SELECT name, id FROM patients"))
    finally:
        conn.close()


def booked(db_path):
    """[(time, patient id)] of the appointments, by time."""
    conn = sqlite3.connect(db_path)
    try:
        return conn.execute("SELECT time, patient_id FROM appointments ORDER BY time").fetchall()
    finally:
        conn.close()


def citas(tmp_path, *rows, header=HEADER):
    return write_csv(tmp_path, header + "".join(f"{row}\n" for row in rows), "citas.csv")


def test_a_childs_visit_under_the_guardians_nif_books_the_child_and_says_so(family_db, tmp_path):
    who = ids(family_db)
    source = citas(tmp_path, "24/11/2026;09:00;30;MARTIN;C1;00000001R;Marta;García Ruiz",
                   "24/11/2026;09:30;30;MARTIN;C1;00000001R;PABLO;  garcia ",
                   "24/11/2026;10:00;30;MARTIN;C1;00000001R;;",
                   "24/11/2026;10:30;30;MARTIN;C1;00000001-r;Lucia;García López")
    said = [f"line 3: a child of the NIF's holder (patient {who['Marta']}), booked to that child (patient "
            f"{who['Pablo']})", f"line 5: a child of the NIF's holder (patient {who['Marta']}), booked to that child "
                                f"(patient {who['Lucía']})"]
    dry = invoke(family_db, "import-appointments", source, "--dry-run")
    assert dry.exit_code == 0, dry.output
    assert dry.output.splitlines() == said + [
        "Dry run: 4 appointments would be imported, 0 new patients (2 rows booked to a child of the NIF's holder). "
        "Nothing was written."]
    assert booked(family_db) == []
    done = invoke(family_db, "import-appointments", source)
    assert done.exit_code == 0, done.output
    assert done.output.splitlines() == said + [
        "4 appointments imported, 0 new patients (2 rows booked to a child of the NIF's holder)."]
    assert booked(family_db) == [("09:00", who["Marta"]), ("09:30", who["Pablo"]), ("10:00", who["Marta"]),
                                 ("10:30", who["Lucía"])]


def test_a_name_neither_the_holders_nor_a_childs_is_refused_naming_them_and_those_near_it(family_db, tmp_path):
    who = ids(family_db)
    before = table_rows(family_db)
    source = citas(tmp_path, "24/11/2026;09:00;30;MARTIN;C1;00000001R;Hugo;García",
                   "24/11/2026;09:30;30;MARTIN;C1;00000001R;Lucas;García",
                   "24/11/2026;10:00;30;MARTIN;C1;00000001R;Pablo;García",
                   "24/11/2026;10:30;30;MARTIN;C1;00000001R;Rosa;Pérez")
    family = f"the name fits neither the NIF's holder (patient {who['Marta']}) nor a child of theirs (patients " \
             f"{who['Pablo']}, {who['Lucía']})"
    advice = ": correct the name, or register the child under the NIF's holder, and import again"
    for dry_run in (("--dry-run",), ()):
        refused = invoke(family_db, "import-appointments", source, *dry_run)
        assert refused.exit_code == 1
        said = [line for line in refused.output.splitlines() if line.startswith("line ")]
        assert said == [f"line 4: a child of the NIF's holder (patient {who['Marta']}), booked to that child "
                        f"(patient {who['Pablo']})",
                        f"line 2: {family}; near it: patient {who['Hugo']}{advice}",  # under no guardian
                        f"line 3: {family}; near it: patient {who['Lucía']}{advice}",  # Lucas, Lucía
                        f"line 5: {family}{advice}"], refused.output
        assert "3 bad rows; nothing was imported" in refused.output
        assert table_rows(family_db) == before


def test_a_holder_named_as_the_old_system_wrote_them_or_not_named_at_all_is_booked_as_before(family_db, tmp_path):
    """The name in one cell, surnames first, or no name column at all: the NIF's holder, no note."""
    who = ids(family_db)
    done = invoke(family_db, "import-appointments", citas(
        tmp_path, "24/11/2026,09:00,MARTIN,00000001R,\"García Ruiz, Marta\"", "24/11/2026,09:30,MARTIN,00000001R,"
        "\"GARCÍA, Pablo\"", header="date,time,doctor,nif,name\n"))
    assert done.exit_code == 0, done.output
    assert [line for line in done.output.splitlines() if line.startswith("line ")] == [
        f"line 3: a child of the NIF's holder (patient {who['Marta']}), booked to that child (patient {who['Pablo']})"]
    bare = invoke(family_db, "import-appointments", citas(tmp_path, "26/11/2026,09:00,MARTIN,00000001R",
                                                          header="date,time,doctor,nif\n"))
    assert bare.exit_code == 0 and bare.output == "1 appointment imported, 0 new patients.\n", bare.output
    assert booked(family_db) == [("09:00", who["Marta"]), ("09:00", who["Marta"]), ("09:30", who["Pablo"])]


def test_a_new_patients_nif_on_a_later_line_with_another_name_is_refused(family_db, tmp_path):
    before = table_rows(family_db)
    refused = invoke(family_db, "import-appointments", citas(
        tmp_path, f"24/11/2026;09:00;30;MARTIN;C1;{valid_dni(7)};Íñigo;Núñez", f"24/11/2026;09:30;30;MARTIN;C1;"
        f"{valid_dni(7)};inigo;NUNEZ PEÑA", f"24/11/2026;10:00;30;MARTIN;C1;{valid_dni(7)};Iker;Núñez"))
    assert refused.exit_code == 1
    assert [line for line in refused.output.splitlines() if line.startswith("line ")] == [
        "line 4: the name fits neither the NIF's holder (the new patient of line 2) nor a child of theirs (none here): "
        "correct the name, or register the child under the NIF's holder, and import again"]
    assert table_rows(family_db) == before


def test_a_name_that_fits_two_children_alike_is_refused(family_db, tmp_path):
    twin = write_csv(tmp_path, "name,surname,birthDate,nif,guardianNif\nPablo,García Ruiz,09/10/2022,,00000001R\n",
                     "more.csv")
    added = invoke(family_db, "import-patients", twin)
    assert added.exit_code == 0, added.output
    conn = sqlite3.connect(family_db)
    pablos = [row[0] for row in conn.execute("SELECT id FROM patients WHERE name = 'Pablo' ORDER BY id")]
    conn.close()
    refused = invoke(family_db, "import-appointments", citas(tmp_path, "24/11/2026;09:00;30;MARTIN;C1;00000001R;"
                                                                       "Pablo;García"))
    assert refused.exit_code == 1
    assert (f"line 2: the name fits more than one child of the NIF's holder (patient {ids(family_db)['Marta']}): "
            f"patients {pablos[0]}, {pablos[1]}; take the row out and book it at the desk") in refused.output
