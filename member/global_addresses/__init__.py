"""Global addresses of a member whose ranges overlap another member's (issue 26).

``book``: which address of the member's block each exported Service and Pod holds (pure);
``shadow``: the shadow Service through which kube-proxy answers at a Service's global address
(pure); ``addressing``: GlobalAddressing, what the ServiceExportController does with its
exports while the member is globally addressed, and the record the agents read.
"""
