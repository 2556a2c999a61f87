"""One module per protocol the oracle compares, named as its registry descriptor; each
registers its ``Spec`` (``oracle.spec``) on import."""
