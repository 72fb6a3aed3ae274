# Generated from schema/kiln_program.fbs by schema/generate_python.py; do not edit.
