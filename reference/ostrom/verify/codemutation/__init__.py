"""Code mutation testing of the reference implementation (docs/checking.md, "Code mutation").

Spec mutation (verify/mutate) asks whether the *models* would notice a small mistake in a
spec; this package asks whether the *tests* would notice one in the Python code.  It runs
mutmut over one module of reference/ostrom at a time, with the tests its target file names
(models/mutation/code/<module>.toml), and turns mutmut's per-mutant exit codes into a report
with the survivors' file, line and diff, less the mutants a person has accepted as
equivalent.
"""
