"""Words and the page shell: every text of the desk, the command line and the patient's pages, in Spanish and
English, and the templates' compiled pages they share ("Staff desk")."""
