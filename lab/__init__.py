"""The capture lab (``wirefall lab``): real servers and clients in network namespaces under set
RTT, loss and rate, captured with keys, then decoded by ``analyzer``.  Root only; it runs from a
wirefall checkout (its servers, page generator and npm packages live in ``scripts/``).  A layer
above ``analyzer`` like ``ui``: the core never imports it."""
