"""Moving in, as a clinic does it ("Patient import", "Catalog file"): the same patient file run twice (or checked
with --dry-run first) doubles no child without a NIF; the guardian's column read under the headers clinics give
it; a ';' catalog whose lists are not quoted refused once, saying to quote them. Real files, through the CLI."""

import sqlite3

import pytest
from click.testing import CliRunner

import agenda
from conftest import CLINIC_CSV, MONDAY, Clock, write_csv


def invoke(db_path, *args):
    runner = CliRunner(env={"AGENDA_DB": str(db_path), "AGENDA_SECRET": None})
    return runner.invoke(agenda.cli, [str(arg) for arg in args], obj={"now": Clock(MONDAY)}, catch_exceptions=False)


def patients(db_path):
    conn = sqlite3.connect(db_path)
    try:
        return conn.execute("SELECT p.name, p.surname, p.nif, g.nif, p.birth_date, p.phone FROM patients p"
                            " LEFT JOIN patients g ON g.id = p.guardian_id ORDER BY p.id").fetchall()
    finally:
        conn.close()


@pytest.fixture
def clinic_db(db_path, tmp_path):
    assert invoke(db_path, "seed", write_csv(tmp_path, CLINIC_CSV)).exit_code == 0
    return db_path


def family_file(tmp_path, guardian_header, encoding="utf-8"):
    """A Spanish spreadsheet's patients: a mother, her two children without a NIF (one with a phone of his own),
    and a baby with no guardian at all."""
    path = tmp_path / "pacientes.csv"
    path.write_bytes((f"Nombre;Apellidos;Fecha de nacimiento;DNI;Teléfono;{guardian_header}\n"
                      "Marta;García Ruiz;01/02/1980;00000001R;611000111;\n"
                      "Pablo;García;03/04/2019;;;00000001-r\n"
                      "Lucía;García;05/06/2020;;622000222;00000001R\n"
                      "Bebé;Sin Tutor;05/06/2026;;;\n").encode(encoding))
    return path


FAMILY = [("Marta", "García Ruiz", "00000001R", None, "1980-02-01", "611000111"),
          ("Bebé", "Sin Tutor", None, None, "2026-06-05", None),
          ("Pablo", "García", None, "00000001R", "2019-04-03", "611000111"),  # the guardian's phone, as at the desk
          ("Lucía", "García", None, "00000001R", "2020-06-05", "622000222")]


@pytest.mark.parametrize("header", ["DNI tutor", "Tutor", "DNI del tutor", "NIF tutor", "dni_tutor", "DNI del Tutor/a",
                                    "NIF TUTORA", "guardianNif", "Dni de la tutora"])
def test_the_guardians_column_is_read_under_the_headers_clinics_give_it(clinic_db, tmp_path, header):
    result = invoke(clinic_db, "import-patients", family_file(tmp_path, header, "cp1252"))
    assert result.exit_code == 0, result.output
    assert "Imported 4 patients; 0 already in the agenda." in result.output
    assert patients(clinic_db) == FAMILY


def test_the_same_file_checked_then_run_twice_doubles_no_child(clinic_db, tmp_path):
    source = family_file(tmp_path, "DNI del tutor")
    dry = invoke(clinic_db, "import-patients", source, "--dry-run")
    assert dry.exit_code == 0 and "4 patients would be imported" in dry.output, dry.output
    assert patients(clinic_db) == []
    assert invoke(clinic_db, "import-patients", source).exit_code == 0
    for _ in range(2):  # again, and checked again: each one is already here, the children too
        again = invoke(clinic_db, "import-patients", source)
        assert again.exit_code == 0 and "Imported 0 patients; 4 already in the agenda." in again.output
        assert "line 3: already in the agenda as patient 3, not imported" in again.output
        checked = invoke(clinic_db, "import-patients", source, "--dry-run")
        assert "0 patients would be imported" in checked.output, checked.output
    assert patients(clinic_db) == FAMILY


def test_a_child_is_known_again_whatever_the_case_accents_or_spacing_of_the_name(clinic_db, tmp_path):
    assert invoke(clinic_db, "import-patients", family_file(tmp_path, "Tutor")).exit_code == 0
    other = tmp_path / "otro.csv"
    other.write_text("nombre,apellidos,nacimiento,dni,tutor\nMarta,García Ruiz,01/02/1980,00000001R,\n"
                     "PABLO,  GARCIA ,03/04/2019,,00000001R\nlucia garcia,,05/06/2020,,00000001R\n"
                     "Pablo,García,03/04/2018,,00000001R\n", encoding="utf-8")
    result = invoke(clinic_db, "import-patients", other)
    assert result.exit_code == 0, result.output
    assert "Imported 1 patient; 3 already in the agenda." in result.output  # the 2018 Pablo is another child
    assert len(patients(clinic_db)) == 5


@pytest.mark.parametrize("again", ["pablo,garcía,03/04/2019,,00000001R", "Pablo,García,03/04/2019,,"])
def test_one_child_twice_in_a_file_is_refused_as_a_nif_twice_is(clinic_db, tmp_path, again):
    """Twice with the same guardian, or once with and once without one: the same child twice."""
    source = tmp_path / "doble.csv"
    source.write_text("name,surname,birthDate,nif,guardianNif\nMarta,García,01/02/1980,00000001R,\n"
                      f"Pablo,García,03/04/2019,,00000001R\n{again}\n", encoding="utf-8")
    result = invoke(clinic_db, "import-patients", source)
    assert result.exit_code == 1
    assert "line 4: the same child (name, birth date and guardian, or none given) as line 3" in result.output
    assert patients(clinic_db) == []


def test_a_child_known_without_a_guardian_is_known_again_with_one_and_the_other_way_round(clinic_db, tmp_path):
    """One system knew Pablo without a guardian, the next names his mother (or forgets her): one Pablo."""
    header = "name,surname,birthDate,nif,guardianNif\n"
    first, second = tmp_path / "first.csv", tmp_path / "second.csv"
    first.write_text(header + "Marta,García,01/02/1980,00000001R,\nPablo,García,03/04/2019,,\n"
                     "Lucía,García,05/06/2020,,00000001R\n", encoding="utf-8")
    second.write_text(header + "Pablo,García,03/04/2019,,00000001R\nLucía,García,05/06/2020,,\n"
                      "Lucía,García,05/06/2021,,\n", encoding="utf-8")
    assert invoke(clinic_db, "import-patients", first).exit_code == 0
    again = invoke(clinic_db, "import-patients", second)
    assert again.exit_code == 0 and "Imported 1 patient; 2 already in the agenda." in again.output, again.output
    assert ("line 2: already in the agenda as patient 2 (there without a guardian: give them one at the desk), "
            "not imported") in again.output
    assert "line 3: already in the agenda as patient 3, not imported" in again.output
    assert [row[:4] for row in patients(clinic_db)] == [
        ("Marta", "García", "00000001R", None), ("Pablo", "García", None, None),
        ("Lucía", "García", None, "00000001R"), ("Lucía", "García", None, None)]  # the 2021 Lucía is another child


CATALOG_HEADER = "kind;id;name;speciality;center;insurances;days;hours;slot_minutes;date_from;date_to\n"
CATALOG_ROWS = ["center;C1;Centro;;;;;;;;", "speciality;MG;Medicina general;;;;;;;;",
                "insurance;PRIV;Privado;;;;;;;;", "insurance;SAN;Sanitas;;;;;;;;"]


def test_a_semicolon_catalog_whose_lists_are_not_quoted_is_refused_once_saying_to_quote_them(tmp_path, db_path):
    sheet = tmp_path / "catalogo.csv"
    sheet.write_text(CATALOG_HEADER + "\n".join(CATALOG_ROWS) + "\n"
                     "doctor;MARTIN;Lucía Martín;MG;C1;PRIV;SAN;mon;wed;fri;09:00-14:00;30;;\n"
                     "doctor;RUIZ;Javier Ruiz;MG;C1;;mon-fri;09:00-11:00;16:00-18:00;20;;\n", encoding="utf-8")
    refused = invoke(db_path, "seed", sheet)
    assert refused.exit_code == 1
    said = [line for line in refused.output.splitlines() if line.startswith("line ")]
    assert said == ["line 6: 2 lines (6, 7) have more cells than the header's 11 columns: with ';' as the separator, "
                    "a cell holding a ';' list (days mon;wed;fri, hours 09:00-14:00;16:00-19:00, insurances "
                    "PRIV;SAN) must be quoted (\"mon;wed;fri\"), as a spreadsheet saves it; or save the file with ',' "
                    "as the separator"]
    assert not db_path.exists()
    sheet.write_text(CATALOG_HEADER + "\n".join(CATALOG_ROWS) + "\n"
                     'doctor;MARTIN;Lucía Martín;MG;C1;"PRIV;SAN";"mon;wed;fri";09:00-14:00;30;;\n'
                     'doctor;RUIZ;Javier Ruiz;MG;C1;;mon-fri;"09:00-11:00;16:00-18:00";20;;\n', encoding="utf-8")
    loaded = invoke(db_path, "seed", sheet)
    assert loaded.exit_code == 0, loaded.output
    conn = sqlite3.connect(db_path)
    assert conn.execute("SELECT count(*) FROM schedules").fetchone()[0] == 3 + 5 * 2
    conn.close()
