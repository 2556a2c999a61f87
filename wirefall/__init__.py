"""wirefall's import package.

The design card keeps the source in the top-level folders ``analyzer/``, ``dissectors/`` and ``ui/``
(with ``lab/`` and ``oracle/`` beside them); this package holds a symbolic link to each, so that the
code imports as ``wirefall.analyzer``, ``wirefall.dissectors``, ``wirefall.ui``… and an installed
wheel puts one name, ``wirefall``, at the top of site-packages (not ``analyzer`` or ``ui``, where
another project's package of the same name would collide).
"""
