"""What reaches the patient: their messages, the sender that writes them, and their own link's page."""
