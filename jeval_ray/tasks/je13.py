"""JE-13 (L4): digit-pattern anomalies."""

from jeval_ray.tasks._spec import spec

SPEC = spec(
    "JE-13",
    "L4",
    'Digit-pattern anomalies',
    objective="Find the user whose manual entries break first-digit (Benford) or last-digit patterns while the population conforms; flag that user's anomalous entries.",
    defect="one user's manual entries break Benford / last-digit patterns",
    decoys='populations that conform; subsets too small to test',
    required_evidence='digit statistics for the user and the population',
    sources=('general_ledger', 'user_master', 'digit_statistics'),
    tools=('list_documents', 'open_document', 'search_documents', 'query_ledger', 'get_entry', 'get_master_data', 'compute_stats', 'flag_entry', 'clear_entry', 'submit'),
    criteria=(
        ('DIGIT_ANOMALY', "a user's manual entries break first-digit (Benford) or last-digit patterns"),
    ),
    withheld_variant=('compute_stats',),
    available=False,
)
