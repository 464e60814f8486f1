"""JE-16 (L4): mixed engagement with completeness."""

from jeval_ray.tasks._spec import spec

SPEC = spec(
    "JE-16",
    "L4",
    'Mixed engagement with completeness',
    objective="Test the full listing against several criteria at once and roll the balances forward to find any entry missing from the listing. Open every flagged entry's evidence before you dispose of it.",
    defect='several criteria at once, plus an entry missing from the listing (roll-forward gap)',
    decoys='all of the above kinds',
    required_evidence="every flagged entry's evidence, opened before its disposition",
    sources=('general_ledger', 'trial_balance', 'user_master', 'chart_of_accounts', 'holiday_calendar', 'close_calendar', 'invoices', 'policies'),
    tools=('list_documents', 'open_document', 'search_documents', 'query_ledger', 'get_entry', 'get_master_data', 'compute_stats', 'get_balances', 'flag_entry', 'clear_entry', 'submit'),
    criteria=(
        ('UNBALANCED', 'debits and credits differ beyond tolerance'),
        ('SELF_APPROVAL', 'manual entry approved by its preparer'),
        ('INVALID_ACCOUNT', 'posting to a blocked, closed or non-existent account'),
        ('UNAUTHORISED_USER', 'posted without rights or after termination'),
        ('OFF_HOURS', 'manual posting off hours without authorisation'),
        ('DUPLICATE', 'same invoice posted twice'),
        ('CUTOFF', 'entry recorded after period close'),
        ('COMPLETENESS_GAP', 'an entry missing from the listing, revealed by the roll-forward of balances'),
    ),
    withheld_variant=('search_documents',),
    asks_amount=True,
    available=False,
)
