"""JE-6 (L2): off-hours manual postings."""

from jeval_ray.tasks._spec import spec

SPEC = spec(
    "JE-6",
    "L2",
    'Off-hours manual postings',
    objective='Find manual entries posted on weekends, public holidays or outside business hours that no memo authorises.',
    defect='manual posting on a weekend, holiday or after hours',
    decoys='close-weekend work authorised by a memo',
    required_evidence='holiday calendar and close memo',
    sources=('general_ledger', 'holiday_calendar', 'close_memos'),
    tools=('list_documents', 'open_document', 'search_documents', 'query_ledger', 'get_entry', 'get_master_data', 'compute_stats', 'flag_entry', 'clear_entry', 'submit'),
    criteria=(
        ('OFF_HOURS', 'manual posting on a weekend, public holiday or outside business hours without authorisation'),
    ),
    withheld_variant=('search_documents',),
    available=False,
)
