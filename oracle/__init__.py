"""tshark as the oracle: ``oracle.crosscheck`` runs tshark once per capture and compares its
frames and headers with wirefall's, protocol by protocol (``wirefall crosscheck``, the tests).
A layer above ``analyzer`` (it reads the model) and below ``ui``; the core never imports it."""
