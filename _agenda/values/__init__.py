"""Values: the clinic's settings, its refusals, how fields are read and what Agenda prints. Imports nothing of Agenda's."""
