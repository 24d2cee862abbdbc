"""The domain: the clinic's operations, module functions taking the `Clinic`; no HTTP here."""
