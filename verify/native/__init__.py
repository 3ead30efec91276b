"""Native artifacts (ELF, PE): lief -> frozen facts; capstone -> instruction inventory."""
