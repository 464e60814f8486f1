"""JE-11 (L3): related-party transactions and unusual account pairings without approval."""

from jeval_ray.tasks._spec import spec

SPEC = spec(
    "JE-11",
    "L3",
    'Related-party and unusual pairings',
    objective='Find related-party transactions or unusual account pairings that were not approved.',
    defect='related-party or unusual account pairing without approval',
    decoys='related-party transaction approved in board minutes',
    required_evidence='related-party list, board minutes, contract',
    sources=('general_ledger', 'related_party_list', 'board_minutes', 'contracts'),
    tools=('list_documents', 'open_document', 'search_documents', 'query_ledger', 'get_entry', 'get_master_data', 'compute_stats', 'flag_entry', 'clear_entry', 'submit'),
    criteria=(
        ('RELATED_PARTY', 'related-party transaction or unusual account pairing without approval'),
    ),
    withheld_variant=('search_documents',),
    available=False,
)
