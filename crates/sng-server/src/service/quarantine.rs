//! Quarantined plans: discard one (close it), recorded in the audit trail
//! (`quarantine.discard`) and as the event `plan.discarded`. The API and the console call this.

use sng_store::{Principal, QuarantineEntry, Store, StoreError};

use crate::service::access::tenant_exists;

/// Discard quarantined plan `id` of `tenant` as `who` (whose `operator` role the caller
/// checked): 404 unknown, 409 discarded already.
pub fn discard(
    s: &Store,
    who: &Principal,
    tenant: &str,
    id: &str,
) -> Result<QuarantineEntry, StoreError> {
    tenant_exists(s, tenant)?;
    let by = sng_store::Actor::new(who.token_id.clone(), "quarantine.discard")
        .with_correlation(who.correlation_id.clone())
        .with_detail(format!("quarantined plan {id}"));
    let e = s.quarantine_discard(tenant, id, &by)?;
    crate::platform::decisions::discarded(s, &e);
    Ok(e)
}
